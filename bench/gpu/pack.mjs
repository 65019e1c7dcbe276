#!/usr/bin/env node
// Packs the GPU benchmark kit: everything a bare Linux x64 machine with an NVIDIA GPU and no
// registry access needs to run lexembed's WebGPU path beside its CPU path and a PyTorch anchor.
// See bench/gpu/README.md.
//
//   node bench/gpu/pack.mjs [--out build/lexembed-gpu-kit.tar.xz] [--models legal-2-embedder,legal-2-embedder-static]
//                           [--limit-mib 64] [--no-compress]
//
// Two archives, each under the limit: the kit (runtime and code) and, beside it, the bundled model
// folders (<out without .tar.xz>-models.tar.xz), which unpack into the kit's models/. Together
// they are over 64 MiB (Node 22 MiB, onnxruntime-node 12 MiB, the hybrid model 28 MiB, all
// compressed), so they travel separately.
//
// The kit is this checkout built to JavaScript (dist/ from `npm run build`, bench/ transpiled with
// esbuild, so no TypeScript tooling travels), the bundled tokenizer, the node_modules the
// server, the WebGPU path and the benchmark load (other platforms' binaries, unused onnxruntime-web
// builds, source maps and type declarations dropped; `sharp`, which transformers.js imports for
// images lexembed never reads, replaced by a stub), this Node binary (debug symbols stripped) and
// the Vulkan loader (used there only if the machine has none). It stops if an archive is over
// the limit. The MiniLM-shaped benchmark model is not packed (90 MB of incompressible random
// weights): bench/gpu/run.sh builds it there with numpy and onnx.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const HELP = `Usage: node bench/gpu/pack.mjs [options]

Packs lexembed's GPU benchmark kit (see bench/gpu/README.md).

Options:
  --out <file>        the kit archive to write (default: build/lexembed-gpu-kit.tar.xz); the models
                      go beside it in <file without .tar.xz>-models.tar.xz
  --models <list>     model folders under models/ for the models archive (default:
                      legal-2-embedder,legal-2-embedder-static; "" for none)
  --limit-mib <n>     stop if the archive is larger (default: 64, what the device tool carries)
  --no-compress       leave the kit as a directory beside --out (for a quick local check)
  --help              this text
`;
const { values } = parseArgs({
  options: {
    out: { type: 'string', default: join(ROOT, 'build', 'lexembed-gpu-kit.tar.xz') },
    models: { type: 'string', default: 'legal-2-embedder,legal-2-embedder-static' },
    'limit-mib': { type: 'string', default: '64' },
    'no-compress': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) (console.log(HELP), process.exit(0));
if (process.platform !== 'linux' || process.arch !== 'x64') fail(`the kit is for Linux x64; this is ${process.platform}-${process.arch}`);

// What the server (src/) and the WebGPU path load at run time: package.json's dependencies and
// optional ones (webgpu); and what bench/run.ts adds (transformers.js brings onnxruntime-node and -web).
const rootPkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const ROOTS = [...Object.keys({ ...rootPkg.dependencies, ...rootPkg.optionalDependencies }), 'autocannon'];
// model/: the runtime graphs' steps (python3 -m model.runtime.fp16 / .fuse, which run.sh calls) and the
// stages they import (model/test_layout.py keeps the order: runtime imports only what is below it).
const REPO_PATHS = ['package.json', 'bin', 'LICENSE', 'model/__init__.py', 'model/common', 'model/rules', 'model/evaluate', 'model/runtime'];
// transformers.js imports sharp (and its 19 MB libvips) at load for image inputs; text never needs it.
const STUBS = { sharp: "export default function sharp() {\n  throw new Error('sharp is not in the lexembed GPU kit: lexembed reads text, not images');\n}\n" };
// Kept out of the kit: binaries for other platforms, unused onnxruntime-web builds, debugging aids.
const DROP = [
  /^node_modules\/onnxruntime-node\/bin\/napi-v\d+\/(darwin|win32|linux\/arm64)(\/|$)/,
  /^node_modules\/webgpu\/dist\/(?!linux-x64\/)[^/]/,
  /^node_modules\/webgpu\/build\//,
  // The kit runs onnxruntime-node's own WebGPU provider (the default --webgpu-runtime native):
  // onnxruntime-web (its 26 MB asyncify wasm) serves only --webgpu-runtime web, which the kit does
  // not run; transformers.js carries its own bundled copy of onnxruntime-web's JavaScript.
  /^node_modules\/onnxruntime-web\//,
  /^node_modules\/@huggingface\/transformers\/dist\/(?!transformers\.node\.mjs$)[^/]/,
  /\.(map|d\.ts|d\.mts|d\.cts|md|markdown)$/i,
  /^node_modules\/[^/]+(\/[^/]+)?\/(docs?|examples?|\.github)\//,
];

const out = resolve(values.out);
const stage = out.replace(/\.tar\.xz$/, '');
if (stage === out) fail('--out must end in .tar.xz');
const kitName = 'lexembed-gpu-kit';
const kit = join(stage, kitName);
rmSync(stage, { recursive: true, force: true });
mkdirSync(kit, { recursive: true });

// 1. The checkout built to JavaScript, and the models.
for (const p of REPO_PATHS) {
  if (!existsSync(join(ROOT, p))) continue;
  mkdirSync(dirname(join(kit, p)), { recursive: true });
  cpSync(join(ROOT, p), join(kit, p), { recursive: true });
}
// dist/ as `npm run build` compiles it (tsconfig.build.json), written straight into the kit so the
// checkout's dist/ is left alone; the JavaScript needs none of build.mjs's declaration rewriting.
execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(kit, 'dist'), '--declaration', 'false'], { stdio: 'inherit' });
const { transformSync } = await import('esbuild');
const transpile = (from, to) => {
  mkdirSync(to, { recursive: true });
  for (const name of readdirSync(from)) {
    const source = join(from, name);
    if (name.endsWith('.ts')) {
      const js = transformSync(readFileSync(source, 'utf8'), { loader: 'ts', format: 'esm', target: 'node20' }).code
        .replace(/(['"])((?:\.\.?\/)+)src\/([^'"]+)\.ts\1/g, '$1$2dist/$3.js$1')
        .replace(/(['"])(\.\.?\/[^'"]+)\.ts\1/g, '$1$2.js$1');
      writeFileSync(join(to, name.replace(/\.ts$/, '.js')), js);
    } else if (/\.(py|sh|md)$/.test(name)) copyFileSync(source, join(to, name));
  }
};
transpile(join(ROOT, 'bench'), join(kit, 'bench'));
transpile(join(ROOT, 'bench', 'gpu'), join(kit, 'bench', 'gpu'));
chmodSync(join(kit, 'bench', 'gpu', 'run.sh'), 0o755);
// The MiniLM-shaped model is built there with the bundled models' tokenizer (the models archive is optional).
mkdirSync(join(kit, 'bench', 'gpu', 'tokenizer'));
for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(ROOT, 'models', 'legal-2-embedder-static', f), join(kit, 'bench', 'gpu', 'tokenizer', f));
const models = values.models.split(',').map((m) => m.trim()).filter(Boolean);
for (const m of models) if (!existsSync(join(ROOT, 'models', m, 'onnx', 'model.onnx'))) fail(`--models: models/${m} is not a model folder`);

// 2. node_modules: the dependency closure of ROOTS, resolved as Node resolves it, pruned.
const packages = new Set();
const walk = (name, from) => {
  if (name in STUBS) return;
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) {
      if (packages.has(candidate)) return;
      packages.add(candidate);
      const pkg = JSON.parse(readFileSync(join(candidate, 'package.json'), 'utf8'));
      for (const dep of Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies })) walk(dep, candidate);
      return;
    }
    if (dirname(dir) === dir) return; // not installed here (e.g. another platform's optional binary)
  }
};
for (const r of ROOTS) {
  if (!existsSync(join(ROOT, 'node_modules', r, 'package.json'))) fail(`node_modules/${r} is missing: run npm ci first`);
  walk(r, ROOT);
}
let dropped = 0;
for (const pkgDir of packages) {
  cpSync(pkgDir, join(kit, relative(ROOT, pkgDir)), {
    recursive: true,
    filter: (src) => {
      const rel = relative(ROOT, src).split('\\').join('/');
      const drop = DROP.some((d) => d.test(statSync(src).isDirectory() ? `${rel}/` : rel));
      if (drop) dropped++;
      return !drop;
    },
  });
}

for (const [name, code] of Object.entries(STUBS)) {
  rmSync(join(kit, 'node_modules', name), { recursive: true, force: true });
  mkdirSync(join(kit, 'node_modules', name), { recursive: true });
  writeFileSync(join(kit, 'node_modules', name, 'package.json'), JSON.stringify({ name, version: '0.0.0-lexembed-stub', type: 'module', main: 'index.js' }, null, 2));
  writeFileSync(join(kit, 'node_modules', name, 'index.js'), code);
}

// 3. Node (stripped of debug symbols) and the Vulkan loader.
mkdirSync(join(kit, '.kit', 'node', 'bin'), { recursive: true });
const nodeBin = join(kit, '.kit', 'node', 'bin', 'node');
try {
  execFileSync('strip', ['--strip-debug', '-o', nodeBin, process.execPath]);
} catch {
  copyFileSync(process.execPath, nodeBin);
}
chmodSync(nodeBin, 0o755);
const loader = ['/usr/lib/x86_64-linux-gnu/libvulkan.so.1', '/lib/x86_64-linux-gnu/libvulkan.so.1', '/usr/lib64/libvulkan.so.1'].find(existsSync);
if (loader) {
  mkdirSync(join(kit, '.kit', 'lib'), { recursive: true });
  copyFileSync(realpathSync(loader), join(kit, '.kit', 'lib', 'libvulkan.so.1'));
} else console.warn('no Vulkan loader (libvulkan.so.1) found here: the kit will need one on the GPU machine');

const commit = (() => {
  try {
    return execFileSync('git', ['-C', ROOT, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
})();
const manifest = {
  made: new Date().toISOString(), commit, node: process.version, models, packages: [...packages].map((p) => relative(join(ROOT, 'node_modules'), p)).sort(),
  vulkan_loader: loader ? realpathSync(loader) : null, files_dropped: dropped,
};
writeFileSync(join(kit, '.kit', 'manifest.json'), JSON.stringify(manifest, null, 2));
const stagedMb = Number(execFileSync('du', ['-sm', kit], { encoding: 'utf8' }).split('\t')[0]);
console.log(`staged ${kit}: ${stagedMb} MB, ${packages.size} packages`);

// 4. The archives, xz, each under the limit: the kit, then the models beside it.
const archives = [[out, stage, kitName]];
if (models.length) {
  const modelsStage = `${stage}-models`;
  rmSync(modelsStage, { recursive: true, force: true });
  for (const m of models) cpSync(join(ROOT, 'models', m), join(modelsStage, kitName, 'models', m), { recursive: true });
  archives.push([`${stage}-models.tar.xz`, modelsStage, kitName]);
  console.log(`staged ${modelsStage}: models ${models.join(', ')}`);
}
if (values['no-compress']) process.exit(0);
let over = false;
for (const [archive, from, name] of archives) {
  execFileSync('tar', ['-C', from, '-cf', archive, '--use-compress-program', 'xz -9 -T0', name], { stdio: 'inherit' });
  rmSync(from, { recursive: true, force: true });
  const mib = statSync(archive).size / 2 ** 20;
  console.log(`wrote ${archive}: ${mib.toFixed(1)} MiB`);
  if (mib > Number(values['limit-mib'])) (over = true), console.error(`pack: ${archive} is ${mib.toFixed(1)} MiB, over --limit-mib ${values['limit-mib']}${from.endsWith('-models') ? ': pack fewer --models' : ''}`);
}
if (over) process.exit(1);

function fail(message) {
  console.error(`pack: ${message}`);
  process.exit(1);
}
