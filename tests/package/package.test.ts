// The packages as users get them: `npm run package` packs lexembed, @lexembed/legal-2-embedder and
// @lexembed/server, and each use the README shows gets a scratch project made here with only
// what that use installs (npm's cache serves what `npm ci` fetched):
//   server-app   @lexembed/server: `npx lexembed keys create`, `npx lexembed serve` on the bundled
//                model, TypeScript consumers of every entry (moduleResolution bundler and node16);
//   client-app   lexembed alone: its node_modules holds lexembed and zod and nothing else, and a
//                plain .mjs script calls the server through lexembed/client and lexembed/contract;
//   browser-app  lexembed + onnxruntime-web + hono + the model package: none of the server's
//                packages installed (no onnxruntime-node, no transformers.js package), a Vite app
//                on lexembed/local builds with no Node-only module in its bundle, and a Worker built
//                from lexembed/edge answers /v1/embeddings in workerd;
//   documents-app lexembed alone: lexembed/documents reads text, says which parser a PDF or DOCX
//                needs, and reads both once they are installed as it says.
// Every project is installed as docs/running.md says (allowScripts keeps onnxruntime-node's
// download from running) and on this Node (20 in CI) with no engine warning. publint checks all
// three packages and are-the-types-wrong the library. Slow by nature (real installs), so each
// project is installed once.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build as esbuild } from 'esbuild';
import { Miniflare } from 'miniflare';
import { PROJECT_ROOT } from '../../src/node/runtime/load-model.ts';
import { makeDocx, makePdf } from '../support/documents.ts';
import { semver } from '../support/semver.ts';

const run = promisify(execFile);
const SLOW = 600_000;
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const TSC = join(PROJECT_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const SERVER_ONLY = ['onnxruntime-node', '@huggingface/transformers', 'sharp', '@hono/node-server', 'prom-client', 'ioredis', 'webgpu'];

let scratch: string;
const tarballs = { lib: '', models: '', server: '' };
const projects = { server: '', client: '', browser: '', adapters: '', documents: '' };
let server: ChildProcess | undefined;
let serverUrl: string;
let apiKey: string;
/** What `npm install` printed in each scratch project. */
const installOutput: Record<string, string> = {};

const lock = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };
/** The version this repository locked, so installs come from npm's cache, not newer releases. */
const locked = (name: string) => lock.packages[`node_modules/${name}`]!.version!;

/** A scratch project depending on `dependencies`; lexembed's own packages resolve to the tarballs. */
async function makeProject(name: string, dependencies: Record<string, string>): Promise<string> {
  const dir = join(scratch, name);
  mkdirSync(dir);
  const ours = { lexembed: `file:${tarballs.lib}`, '@lexembed/legal-2-embedder': `file:${tarballs.models}`, '@lexembed/server': `file:${tarballs.server}` };
  const deps = Object.fromEntries(Object.entries(dependencies).map(([d, v]) => [d, d in ours ? ours[d as keyof typeof ours] : v]));
  // Overrides send @lexembed/server's own dependencies on the other two to the tarballs as well.
  const overrides = Object.fromEntries(Object.entries(ours).filter(([d]) => d !== '@lexembed/server').map(([d, v]) => [d, deps[d] ?? v]));
  // allowScripts (docs/running.md's recipe): onnxruntime-node's install script, which downloads CUDA
  // libraries and fails offline, never runs. The environment is stripped of the other ways to skip it.
  const allowScripts = { 'onnxruntime-node': false };
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `scratch-${name}`, private: true, type: 'module', dependencies: deps, overrides, allowScripts }, null, 2));
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_config_/i.test(k) && !/^ONNXRUNTIME_NODE_INSTALL/.test(k)));
  const { stdout, stderr } = await run(NPM, ['install', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: dir, env, maxBuffer: 64 << 20 });
  installOutput[name] = stdout + stderr;
  return dir;
}

/** Every package installed under `dir`/node_modules, scoped ones as @scope/name. */
function installed(dir: string): string[] {
  const top = join(dir, 'node_modules');
  return readdirSync(top).filter((n) => !n.startsWith('.')).flatMap((n) => (n.startsWith('@') ? readdirSync(join(top, n)).map((m) => `${n}/${m}`) : [n])).sort();
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'lexembed-package-'));
  await run(process.execPath, [join(PROJECT_ROOT, 'scripts', 'build.mjs'), '--pack'], { cwd: PROJECT_ROOT, maxBuffer: 64 << 20 });
  const version = (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  for (const [key, file] of [['lib', 'lexembed'], ['models', 'lexembed-legal-2-embedder'], ['server', 'lexembed-server']] as const) {
    tarballs[key] = join(scratch, `${file}-${version}.tgz`);
    copyFileSync(join(PROJECT_ROOT, 'build', `${file}-${version}.tgz`), tarballs[key]);
  }
  const serverDeps = ['@huggingface/transformers', 'hono', '@hono/node-server', 'prom-client', 'ioredis', 'zod'];
  projects.server = await makeProject('server-app', { '@lexembed/server': '', ...Object.fromEntries(serverDeps.map((d) => [d, locked(d)])) });
  projects.client = await makeProject('client-app', { lexembed: '' });
  projects.browser = await makeProject('browser-app', { lexembed: '', '@lexembed/legal-2-embedder': '', 'onnxruntime-web': locked('onnxruntime-web'), hono: locked('hono') });
  projects.adapters = await makeProject('adapters-app', { lexembed: '', '@langchain/core': locked('@langchain/core'), '@ai-sdk/provider': locked('@ai-sdk/provider') });
  projects.documents = await makeProject('documents-app', { lexembed: '' });

  const created = await run(process.execPath, [join(projects.server, 'node_modules', '.bin', 'lexembed'), 'keys', 'create', '--account', 'acct_pkg', '--data-dir', join(scratch, 'keys')], { cwd: projects.server });
  apiKey = /lxk_v1_\S+/.exec(created.stdout)![0];
  ({ child: server, url: serverUrl } = await startInstalledServer());
}, SLOW);

afterAll(async () => {
  // npx runs lexembed as its child: signal the whole process group, or the server outlives the test.
  if (server && server.exitCode === null) await new Promise((r) => (server!.once('exit', r), process.kill(-server!.pid!, 'SIGTERM')));
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('the packed tarballs', () => {
  const listing = async (tarball: string) => (await run('tar', ['-tzf', tarball], { maxBuffer: 16 << 20 })).stdout.split('\n').filter(Boolean);

  it('lexembed holds the built entries and the vendored web build of transformers.js, and no model, source, test or recipe', async () => {
    const files = await listing(tarballs.lib);
    for (const f of ['package/dist/index.js', 'package/dist/index.d.ts', 'package/dist/client/index.js', 'package/dist/edge/handler.d.ts',
      'package/dist/server.js', 'package/dist/node/runtime/inference-worker-main.js', 'package/vendor/transformers.web.js', 'package/vendor/LICENSE.transformers']) {
      expect(files, f).toContain(f);
    }
    expect(files.filter((f) => /^package\/(src|tests|bench|model|models|web-demo|edge|scripts|bin)\//.test(f))).toEqual([]);
    const manifest = JSON.parse(readFileSync(join(projects.client, 'node_modules', 'lexembed', 'package.json'), 'utf8')) as { dependencies: Record<string, string>; bin?: unknown };
    expect(manifest.dependencies).toEqual({ zod: expect.any(String) });
    expect(manifest.bin).toBeUndefined();
  });

  it('@lexembed/legal-2-embedder holds both model folders and no code; @lexembed/server its command and README', async () => {
    const models = await listing(tarballs.models);
    for (const f of ['package/models/legal-2-embedder/onnx/model.onnx', 'package/models/legal-2-embedder/lexembed.json', 'package/models/legal-2-embedder/README.md',
      'package/models/legal-2-embedder-static/onnx/model.onnx']) {
      expect(models, f).toContain(f);
    }
    expect(models.filter((f) => /\.(js|mjs|ts)$/.test(f))).toEqual([]);
    expect((await listing(tarballs.server)).sort()).toEqual(['package/README.md', 'package/bin/lexembed.js', 'package/package.json']);
  });

  it('pass publint (all three) and are-the-types-wrong (lexembed, ESM-only profile)', async () => {
    const publint = join(PROJECT_ROOT, 'node_modules', 'publint', 'src', 'cli.js');
    for (const pkg of ['lexembed', '@lexembed/legal-2-embedder', '@lexembed/server']) {
      const out = await run(process.execPath, [publint, join(projects.server, 'node_modules', pkg)], { cwd: projects.server });
      expect(out.stdout, pkg).toMatch(/All good/);
    }
    // attw exits non-zero on any problem the profile counts (ESM-only: CommonJS require is not offered).
    // JSON, not the human table: its layout follows the terminal's width.
    const attw = await run(process.execPath, [join(PROJECT_ROOT, 'node_modules', '@arethetypeswrong', 'cli', 'dist', 'index.js'), tarballs.lib, '--profile', 'esm-only', '--format', 'json'], { maxBuffer: 64 << 20 });
    const { analysis } = JSON.parse(attw.stdout) as {
      analysis: {
        problems: { kind: string; entrypoint: string; resolutionKind?: string }[];
        entrypoints: Record<string, { resolutions: Record<string, { resolution?: { fileName: string } }> }>;
      };
    };
    const counted = analysis.problems.filter((p) => p.resolutionKind !== 'node10' && p.resolutionKind !== 'node16-cjs');
    expect(counted).toEqual([]);
    for (const entry of ['.', './contract', './client', './local', './edge', './server', './langchain', './ai-sdk', './llamaindex']) {
      for (const kind of ['node16-esm', 'bundler']) {
        expect(analysis.entrypoints[entry]?.resolutions[kind]?.resolution?.fileName, `${entry} (${kind})`).toMatch(/\/dist\/.*\.d\.ts$/);
      }
    }
  }, SLOW);
});

describe('what each use installs', () => {
  it('the client: lexembed and zod, nothing else', () => {
    expect(installed(projects.client)).toEqual(['lexembed', 'zod']);
  });

  it('the browser and a Worker: none of the server\'s packages', () => {
    const present = installed(projects.browser);
    expect(present).toContain('onnxruntime-web');
    expect(present.filter((p) => SERVER_ONLY.includes(p))).toEqual([]);
  });

  it('the published packages ask for Node ≥ 20.19, every package they install allows all of that range, and no install printed an engine warning', () => {
    expect(Object.keys(installOutput).sort()).toEqual(['adapters-app', 'browser-app', 'client-app', 'documents-app', 'server-app']);
    for (const [name, output] of Object.entries(installOutput)) expect(output, name).not.toMatch(/EBADENGINE|Unsupported engine/);
    for (const pkg of ['lexembed', '@lexembed/server', '@lexembed/legal-2-embedder']) {
      expect(JSON.parse(readFileSync(join(projects.server, 'node_modules', pkg, 'package.json'), 'utf8')).engines, pkg).toEqual({ node: '>=20.19' });
    }
    // Not only this machine's Node: the whole range the packages promise (semver's subset), for every
    // installed package (the lock also lists other platforms' optional packages, never installed here).
    for (const dir of Object.values(projects)) {
      const { packages } = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as { packages: Record<string, { engines?: { node?: string } | string[] }> };
      for (const [path, meta] of Object.entries(packages)) {
        const wanted = !Array.isArray(meta.engines) ? meta.engines?.node : undefined;
        if (path && wanted && existsSync(join(dir, path))) expect(semver.subset('>=20.19', wanted), `${dir}: ${path} wants node ${wanted}`).toBe(true);
      }
    }
  });

  it('the server: everything serve needs, from @lexembed/server alone', () => {
    expect(installed(projects.server)).toEqual(expect.arrayContaining(['lexembed', '@lexembed/legal-2-embedder', '@lexembed/server', 'onnxruntime-node', '@hono/node-server', 'prom-client']));
  });
});

describe('installed from the tarballs', () => {
  it('npx lexembed --help answers from the built CLI', async () => {
    const { stdout } = await run('npx', ['--no-install', 'lexembed', '--help'], { cwd: projects.server });
    expect(stdout).toMatch(/lexembed serve/);
  });

  it('npx lexembed serve (bundled model, no other step) answers /health and /v1/embeddings', async () => {
    expect((await fetch(`${serverUrl}/health`)).status).toBe(200);
    const r = await fetch(`${serverUrl}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'legal-2-embedder', texts: ['Payment of rent'] }),
    });
    expect(r.status).toBe(200);
    const body = (await r.json()) as { embeddings: { embedding: number[] }[] };
    expect(body.embeddings[0]!.embedding.length).toBe(1792);
  });

  it('a plain .mjs Node script imports lexembed/client and lexembed/contract and calls the server', async () => {
    writeFileSync(join(projects.client, 'client.mjs'), `
import { Lexembed, AuthenticationError } from 'lexembed/client';
import { validateEmbeddingRequest, DEFAULT_MODEL_NAME } from 'lexembed/contract';
const check = validateEmbeddingRequest({ model: DEFAULT_MODEL_NAME, texts: ['Lease'] }, { modelName: DEFAULT_MODEL_NAME, maxDimensions: 1792, tasks: ['retrieval/query', 'retrieval/document'] });
const client = new Lexembed({ baseURL: process.env.BASE_URL });
const { embeddings, usage } = await client.embeddings.create({ model: DEFAULT_MODEL_NAME, texts: ['Termination of lease', 'Security deposit'] });
let rejected = '';
try { await new Lexembed({ baseURL: process.env.BASE_URL, apiKey: 'lxk_v1_wrong_0' }).embeddings.create({ model: DEFAULT_MODEL_NAME, texts: ['x'] }); }
catch (e) { rejected = e instanceof AuthenticationError ? 'AuthenticationError ' + e.status : String(e); }
console.log(JSON.stringify({ valid: check.ok, count: embeddings.length, dims: embeddings[0].embedding.length, tokens: usage.input_tokens, rejected }));
`);
    const { stdout } = await run(process.execPath, ['client.mjs'], { cwd: projects.client, env: { ...process.env, BASE_URL: `${serverUrl}/v1`, LEXEMBED_API_KEY: apiKey } });
    const out = JSON.parse(stdout) as { valid: boolean; count: number; dims: number; tokens: number; rejected: string };
    expect(out).toMatchObject({ valid: true, count: 2, dims: 1792, rejected: 'AuthenticationError 401' });
    expect(out.tokens).toBeGreaterThan(4);
  });

  it('lexembed/langchain and lexembed/ai-sdk work with their framework installed beside lexembed, and type-check', async () => {
    const dir = projects.adapters;
    expect(installed(dir).filter((p) => SERVER_ONLY.includes(p))).toEqual([]);
    writeFileSync(join(dir, 'adapters.mjs'), `
import { LexembedEmbeddings } from 'lexembed/langchain';
import { createLexembed } from 'lexembed/ai-sdk';
const clientOptions = { baseURL: process.env.BASE_URL };
const query = await new LexembedEmbeddings({ clientOptions }).embedQuery('Termination of lease');
const { embeddings } = await createLexembed({ clientOptions }).embeddingModel().doEmbed({ values: ['Rent', 'Deposit'], providerOptions: { lexembed: { task: 'retrieval/document' } } });
console.log(JSON.stringify({ query: query.length, documents: embeddings.map((e) => e.length) }));
`);
    const { stdout } = await run(process.execPath, ['adapters.mjs'], { cwd: dir, env: { ...process.env, BASE_URL: `${serverUrl}/v1`, LEXEMBED_API_KEY: apiKey } });
    expect(JSON.parse(stdout)).toEqual({ query: 1792, documents: [1792, 1792] });
    writeFileSync(join(dir, 'consumer.ts'), `
import { LexembedEmbeddings } from 'lexembed/langchain';
import { createLexembed, type LexembedProvider } from 'lexembed/ai-sdk';
import type { Embeddings } from '@langchain/core/embeddings';
import type { ProviderV3 } from '@ai-sdk/provider';
export const embeddings: Embeddings = new LexembedEmbeddings({ dimensions: 128 });
export const provider: ProviderV3 = createLexembed() satisfies LexembedProvider;
// @ts-expect-error: dimensions is a number
export const wrong = new LexembedEmbeddings({ dimensions: 'many' });
`);
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { target: 'es2022', module: 'preserve', moduleResolution: 'bundler', strict: true, noEmit: true, lib: ['es2023', 'dom'], types: [], skipLibCheck: true },
      files: ['consumer.ts'],
    }));
    const result = await run(process.execPath, [TSC, '-p', dir], { cwd: dir }).catch((e: { stdout: string; stderr: string }) => e);
    expect('stdout' in result ? result.stdout + result.stderr : '').toBe('');
  }, SLOW);

  it('lexembed/documents: text files with lexembed alone; a PDF or DOCX says which parser to install; with the two installed at the ranges lexembed names, both read', async () => {
    const dir = projects.documents;
    expect(installed(dir)).toEqual(['lexembed', 'zod']);
    writeFileSync(join(dir, 'notice.txt'), 'NOTICE TO VACATE. The tenant shall leave the premises.');
    writeFileSync(join(dir, 'lease.pdf'), makePdf([['LEASE AGREEMENT', 'The Lessee shall pay the rent in advance.']]));
    writeFileSync(join(dir, 'nda.docx'), await makeDocx(['MUTUAL NON-DISCLOSURE AGREEMENT', 'The parties keep secrets.']));
    writeFileSync(join(dir, 'documents.mjs'), `
import { readFileSync } from 'node:fs';
import { extractDocument } from 'lexembed/documents';
const out = {};
for (const f of ['notice.txt', 'lease.pdf', 'nda.docx']) {
  try { out[f] = (await extractDocument(new Uint8Array(readFileSync(f)), f)).text.split('\\n')[0]; }
  catch (e) { out[f] = 'ERROR ' + e.message; }
}
console.log(JSON.stringify(out));
`);
    const read = async () => JSON.parse((await run(process.execPath, ['documents.mjs'], { cwd: dir })).stdout) as Record<string, string>;
    const { peerDependencies: peers } = JSON.parse(readFileSync(join(dir, 'node_modules', 'lexembed', 'package.json'), 'utf8')) as { peerDependencies: Record<string, string> };
    const alone = await read();
    expect(alone['notice.txt']).toMatch(/^NOTICE TO VACATE/);
    expect(alone['lease.pdf']).toContain(`PDF files with the package pdfjs-dist, which is not installed here: it is an optional peer dependency of lexembed (@lexembed/server installs it); run \`npm install pdfjs-dist@${peers['pdfjs-dist']}\``);
    expect(alone['nda.docx']).toContain(`DOCX files with the package mammoth, which is not installed here`);
    expect(alone['nda.docx']).toContain(`npm install mammoth@${peers.mammoth}`);
    // What the message says to run (the ranges as written; npm's cache has the locked versions).
    await run(NPM, ['install', '--prefer-offline', '--no-audit', '--no-fund', `pdfjs-dist@${peers['pdfjs-dist']}`, `mammoth@${peers.mammoth}`], { cwd: dir, maxBuffer: 64 << 20 });
    expect(await read()).toEqual({ 'notice.txt': expect.stringMatching(/^NOTICE TO VACATE/), 'lease.pdf': expect.stringMatching(/^LEASE AGREEMENT/), 'nda.docx': 'MUTUAL NON-DISCLOSURE AGREEMENT' });
  }, SLOW);

  it('the main entry imports with zod alone (contract, client, embedder core)', async () => {
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', "const m = await import('lexembed'); console.log(['Lexembed','createEmbedder','validateEmbeddingRequest'].every((k) => typeof m[k] === 'function'))"], { cwd: projects.client });
    expect(stdout.trim()).toBe('true');
  });

  it.each(['bundler', 'node16'])('TypeScript consumers type-check against the shipped .d.ts (moduleResolution %s)', async (resolution) => {
    const dir = join(projects.server, `ts-${resolution}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'consumer.ts'), `
import { Lexembed, APIError, type EmbeddingCreateParams } from 'lexembed/client';
import { validateEmbeddingRequest, type EmbeddingResponse } from 'lexembed/contract';
import { createLocalClient, type LocalClient } from 'lexembed/local';
import { createEdgeHandler, type EdgeHandler } from 'lexembed/edge';
import { createEmbedder } from 'lexembed';
import { createApp, loadModelFolder, main } from 'lexembed/server';
const params: EmbeddingCreateParams = { model: 'legal-2-embedder', texts: ['Lease'], task: 'retrieval/query' };
export async function use(client: Lexembed): Promise<number> {
  try {
    const response: EmbeddingResponse = await client.embeddings.create(params);
    return response.embeddings.length;
  } catch (error) {
    if (error instanceof APIError) return -(error.status ?? 0); // no status: connection, timeout, abort
    throw error;
  }
}
export const local: (m: string) => LocalClient = (model) => createLocalClient({ model });
export const handler: (m: WebAssembly.Module) => EdgeHandler = (wasmModule) => createEdgeHandler({ wasmModule });
export const pieces = [validateEmbeddingRequest, createApp, createEmbedder, loadModelFolder];
export const exitCode: Promise<number> = main(['--help']);
// @ts-expect-error: texts must be strings (the shipped types are real, not any)
export const wrong: EmbeddingCreateParams = { model: 'legal-2-embedder', texts: [1] };
`);
    const module = resolution === 'bundler' ? 'preserve' : 'node16';
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { target: 'es2022', module, moduleResolution: resolution, strict: true, noEmit: true, lib: ['es2023', 'dom'], types: [], skipLibCheck: true },
      files: ['consumer.ts'],
    }));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    const result = await run(process.execPath, [TSC, '-p', dir], { cwd: dir }).catch((e: { stdout: string; stderr: string }) => e);
    expect('stdout' in result ? result.stdout + result.stderr : '').toBe('');
  }, SLOW);
});

describe('bundled by an application from the installed package', () => {
  const NODE_ONLY = /onnxruntime-node|@hono\/node-server|prom-client|ioredis|from ?["']node:|(?:require|import)\(["']node:|webgpu\/dist|dawn\.node/;

  it('a Vite app importing lexembed/local builds, and its bundle holds no Node-only module', async () => {
    const dir = join(projects.browser, 'vite-app');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'index.html'), '<!doctype html><script type="module" src="./main.js"></script>');
    writeFileSync(join(dir, 'main.js'), `
import { createLocalClient } from 'lexembed/local';
import { Lexembed } from 'lexembed/client';
const client = createLocalClient({ model: '/models/legal-2-embedder/', device: 'wasm' });
globalThis.lexembed = { client, remote: new Lexembed({ apiKey: 'x' }) };
`);
    const vite = join(PROJECT_ROOT, 'node_modules', 'vite', 'bin', 'vite.js');
    const out = await run(process.execPath, [vite, 'build', dir, '--outDir', join(dir, 'dist'), '--emptyOutDir', '--logLevel', 'warn'], { cwd: dir, maxBuffer: 16 << 20 });
    const files = readdirSync(join(dir, 'dist', 'assets')).filter((f) => f.endsWith('.js') || f.endsWith('.mjs'));
    const bytes = files.reduce((n, f) => n + readFileSync(join(dir, 'dist', 'assets', f)).length, 0);
    expect(bytes, `transformers.js and onnxruntime-web are bundled: ${out.stdout}${out.stderr}`).toBeGreaterThan(300_000);
    for (const f of files) expect(NODE_ONLY.exec(readFileSync(join(dir, 'dist', 'assets', f), 'utf8'))?.[0] ?? null, f).toBeNull();
  }, SLOW);

  it('a Worker built with esbuild from lexembed/edge runs in workerd and answers /v1/embeddings', async () => {
    const dir = join(projects.browser, 'worker');
    mkdirSync(join(dir, 'dist'), { recursive: true });
    writeFileSync(join(dir, 'worker.mjs'), `
import wasmModule from './ort-wasm-simd-threaded.asyncify.wasm';
import { createEdgeHandler } from 'lexembed/edge';
export default createEdgeHandler({ wasmModule });
`);
    await esbuild({ entryPoints: [join(dir, 'worker.mjs')], outfile: join(dir, 'dist', 'worker.mjs'), bundle: true, format: 'esm', platform: 'browser',
      conditions: ['workerd', 'worker', 'browser'], target: 'es2022', external: ['*.wasm'], logLevel: 'error', absWorkingDir: dir });
    copyFileSync(join(projects.browser, 'node_modules', 'onnxruntime-web', 'dist', 'ort-wasm-simd-threaded.asyncify.wasm'), join(dir, 'dist', 'ort-wasm-simd-threaded.asyncify.wasm'));
    const modelDir = join(projects.browser, 'node_modules', '@lexembed', 'legal-2-embedder', 'models', 'legal-2-embedder-static');
    const mf = new Miniflare({
      modules: [
        { type: 'ESModule', path: join(dir, 'dist', 'worker.mjs') },
        { type: 'CompiledWasm', path: join(dir, 'dist', 'ort-wasm-simd-threaded.asyncify.wasm') },
      ],
      modulesRoot: join(dir, 'dist'),
      compatibilityDate: '2026-04-01',
      cf: false,
      bindings: { LEXEMBED_NO_AUTH: 'true' },
      serviceBindings: {
        MODEL: async (request: { url: string }) => {
          const file = new URL(request.url).pathname.slice(1);
          return existsSync(join(modelDir, file)) ? new Response(readFileSync(join(modelDir, file))) : new Response('not found', { status: 404 });
        },
      },
    });
    try {
      const res = await mf.dispatchFetch('http://edge.local/v1/embeddings', {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'legal-2-embedder-static', texts: ['Notice to vacate'] }),
      });
      const body = (await res.json()) as { embeddings: { embedding: number[] }[] };
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(body.embeddings[0]!.embedding).toHaveLength(1536);
    } finally {
      await mf.dispose();
    }
  }, SLOW);
});

async function startInstalledServer(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn('npx', ['--no-install', 'lexembed', 'serve', '--port', '0', '--data-dir', join(scratch, 'keys'), '--device', 'cpu'], {
    cwd: projects.server,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group, so afterAll stops npx and the server it started
  });
  let output = '';
  child.stderr!.on('data', (d) => (output += d));
  const url = await new Promise<string>((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`installed lexembed serve exited with ${code}:\n${output}`)));
    child.stdout!.on('data', (d) => {
      output += d;
      const m = /model .* loaded/.test(output) && /listening on (http:\/\/[^\s)]+)/.exec(output);
      if (m) resolve(m[1]!);
    });
  });
  if (!existsSync(join(projects.server, 'node_modules', 'lexembed', 'dist', 'cli', 'index.js'))) throw new Error('installed package has no built CLI');
  return { child, url };
}
