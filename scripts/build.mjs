// npm run build: dist/ (ESM + .d.ts) from src/ with tsc, then the three npm packages under
// build/packages/, each with a package.json made here from the root one (one place for versions):
//
//   lexembed                     the library: every entry (contract, client, local, edge, server,
//                                and the langchain, ai-sdk and llamaindex adapters).
//                                Depends on zod only; what an entry needs beyond that is an
//                                optional peer, so `npm install lexembed` for the client adds zod
//                                and nothing else.
//   @lexembed/legal-2-embedder   the model folders (53 MB), no code.
//   @lexembed/server             the `lexembed` command: depends on both and on the server's
//                                packages, so `npm install @lexembed/server && npx lexembed serve`
//                                is the whole set-up.
//
// Browser and Worker builds must not pull onnxruntime-node (288 MB), which transformers.js lists
// as a dependency. So the lexembed package carries transformers.js's own web build (it imports
// only onnxruntime-web) under vendor/, and its JavaScript imports transformers.js as
// '#transformers', a package import that resolves to @huggingface/transformers under the `node`
// condition and to the vendored web build everywhere else.
//
// Relative imports in src end in .ts; tsc rewrites them to .js in the JavaScript it emits but not
// in declaration files, so this rewrites those too. `node scripts/build.mjs --pack` also packs the
// three tarballs into build/.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const read = (path) => JSON.parse(readFileSync(path, 'utf8'));
const rootPkg = read(join(root, 'package.json'));
const lock = read(join(root, 'package-lock.json'));
const dist = join(root, 'dist');
const out = join(root, 'build');

// src/version.ts carries the version into bundles (no JSON import there): it must be this one.
const versionSource = readFileSync(join(root, 'src', 'version.ts'), 'utf8');
if (!versionSource.includes(`LEXEMBED_VERSION = '${rootPkg.version}'`)) {
  throw new Error(`build: src/version.ts does not say LEXEMBED_VERSION = '${rootPkg.version}' (package.json's version); update it`);
}
rmSync(dist, { recursive: true, force: true });
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });

const RELATIVE_TS = /((?:from|import)\s*\(?\s*['"])(\.{1,2}\/[^'"]+?)\.ts(['"])/g;
const TRANSFORMERS = /((?:from|import)\s*\(?\s*['"])@huggingface\/transformers(['"])/g;
const rewrite = (dir, test, change) => {
  let files = 0;
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !test(entry.name)) continue;
    const path = join(entry.parentPath, entry.name);
    const text = readFileSync(path, 'utf8');
    const fixed = change(text);
    if (fixed !== text) (writeFileSync(path, fixed), files++);
  }
  return files;
};
const declarations = rewrite(dist, (n) => n.endsWith('.d.ts'), (t) => t.replace(RELATIVE_TS, '$1$2.js$3'));

/** The range the root package.json asks for, from any of its dependency lists. */
const range = (name) => rootPkg.dependencies?.[name] ?? rootPkg.devDependencies?.[name] ?? rootPkg.optionalDependencies?.[name]
  ?? (() => { throw new Error(`build: ${name} is not a dependency of the root package.json`); })();
/** The exact version the lock holds (for what transformers.js itself pins). */
const locked = (name) => lock.packages[`node_modules/${name}`]?.version ?? (() => { throw new Error(`build: ${name} is not in package-lock.json`); })();
// The published packages run on Node 20.19 and later, and nothing they install asks for more
// (tests/package/package.test.ts checks every installed package's engines). The repository itself
// needs Node 22 (its package.json's engines): some of its development dependencies require it.
const PUBLISHED_ENGINES = { node: '>=20.19' };
const common = {
  version: rootPkg.version,
  license: rootPkg.license,
  type: 'module',
  engines: PUBLISHED_ENGINES,
};

// --- lexembed -------------------------------------------------------------------------------
const lib = join(out, 'packages', 'lexembed');
rmSync(out, { recursive: true, force: true });
mkdirSync(join(lib, 'vendor'), { recursive: true });
cpSync(dist, join(lib, 'dist'), { recursive: true });
const imports = rewrite(join(lib, 'dist'), (n) => n.endsWith('.js'), (t) => t.replace(TRANSFORMERS, '$1#transformers$2'));
const transformersDir = join(root, 'node_modules', '@huggingface', 'transformers');
cpSync(join(transformersDir, 'dist', 'transformers.web.js'), join(lib, 'vendor', 'transformers.web.js'));
cpSync(join(transformersDir, 'LICENSE'), join(lib, 'vendor', 'LICENSE.transformers'));
writeFileSync(join(lib, 'vendor', 'README.md'),
  `transformers.web.js is the browser build of @huggingface/transformers ${locked('@huggingface/transformers')} (Apache-2.0, LICENSE.transformers), unchanged.\n`
  + 'lexembed imports it as #transformers outside Node, so browser and Worker installs do not need onnxruntime-node.\n');
cpSync(join(root, 'README.md'), join(lib, 'README.md'));
const entry = (path) => ({ types: `./dist/${path}.d.ts`, default: `./dist/${path}.js` });
const fail = (message) => { throw new Error(message); };
/** What the server needs beside zod; the library offers it as optional peers, @lexembed/server installs it. */
const SERVER_PACKAGES = ['@huggingface/transformers', '@huggingface/tokenizers', 'hono', '@hono/node-server', 'prom-client', 'ioredis', 'pdfjs-dist', 'mammoth', '@modelcontextprotocol/sdk', '@electric-sql/pglite', '@electric-sql/pglite-pgvector', 'pg'];
const ranges = (names) => Object.fromEntries(names.map((name) => [name, range(name)]));
/** The frameworks the adapter entries plug into (lexembed/langchain, lexembed/ai-sdk, lexembed/llamaindex): optional peers too. */
const ADAPTER_PACKAGES = ['@langchain/core', '@ai-sdk/provider', '@llamaindex/core'];
// lexembed/ai-sdk runs on AI SDK 6 (provider 3) and 7 (provider 4): tests/ecosystem/ai-sdk-7.test.ts.
const peers = { ...ranges(SERVER_PACKAGES), ...ranges(ADAPTER_PACKAGES), '@ai-sdk/provider': `${range('@ai-sdk/provider')} || ^4.0.0`, 'onnxruntime-web': locked('onnxruntime-web'), webgpu: range('webgpu') };
writeFileSync(join(lib, 'package.json'), JSON.stringify({
  name: 'lexembed',
  ...common,
  description: rootPkg.description,
  main: './dist/index.js',
  types: './dist/index.d.ts',
  // The root package.json's exports (./src/x.ts, so that a clone imports `lexembed/…` from its own
  // sources under tsx) are the entries; the published package points them at dist/.
  exports: Object.fromEntries(Object.entries(rootPkg.exports).map(([name, source]) =>
    [name, name === './package.json' ? source : entry(/^\.\/src\/(.+)\.ts$/.exec(source)?.[1] ?? fail(`build: export ${name} is ${source}, not ./src/….ts`))])),
  imports: {
    '#transformers': { node: '@huggingface/transformers', default: './vendor/transformers.web.js' },
  },
  dependencies: { zod: range('zod') },
  peerDependencies: peers,
  peerDependenciesMeta: Object.fromEntries(Object.keys(peers).map((name) => [name, { optional: true }])),
  files: ['dist', 'vendor', 'README.md'],
  sideEffects: false,
}, null, 2) + '\n');

// --- @lexembed/legal-2-embedder -------------------------------------------------------------
const models = join(out, 'packages', 'legal-2-embedder');
for (const folder of ['legal-2-embedder', 'legal-2-embedder-static']) {
  cpSync(join(root, 'models', folder), join(models, 'models', folder), { recursive: true });
}
cpSync(join(root, 'packages', 'legal-2-embedder', 'README.md'), join(models, 'README.md'));
writeFileSync(join(models, 'package.json'), JSON.stringify({
  name: '@lexembed/legal-2-embedder',
  ...common,
  description: 'The legal-2-embedder weights lexembed serves: the default hybrid model and the static model, as lexembed model folders.',
  files: ['models', 'README.md'],
  exports: { './package.json': './package.json' },
}, null, 2) + '\n');

// --- @lexembed/server -----------------------------------------------------------------------
const server = join(out, 'packages', 'server');
cpSync(join(root, 'packages', 'server'), server, { recursive: true });
writeFileSync(join(server, 'package.json'), JSON.stringify({
  name: '@lexembed/server',
  ...common,
  description: 'The lexembed command: serve the legal-2-embedder embedding API on Node (CPU, or a GPU through WebGPU).',
  bin: { lexembed: './bin/lexembed.js' },
  dependencies: {
    lexembed: rootPkg.version,
    '@lexembed/legal-2-embedder': rootPkg.version,
    ...ranges([...SERVER_PACKAGES, 'zod']),
  },
  optionalDependencies: { webgpu: range('webgpu') },
  files: ['bin', 'README.md'],
}, null, 2) + '\n');

console.log(`dist/ built (.ts specifiers rewritten in ${declarations} declaration files); build/packages/: lexembed (#transformers in ${imports} files), @lexembed/legal-2-embedder, @lexembed/server`);

if (process.argv.includes('--pack')) {
  for (const dir of [lib, models, server]) {
    execFileSync('npm', ['pack', '--pack-destination', out, '--silent'], { cwd: dir, stdio: ['ignore', 'inherit', 'inherit'] });
  }
}
