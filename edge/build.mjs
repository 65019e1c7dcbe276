// Bundles the edge entry for workerd/Cloudflare Workers: edge/dist/worker.mjs plus
// onnxruntime-web's asyncify .wasm beside it (loaded as a CompiledWasm module).
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const edge = dirname(fileURLToPath(import.meta.url));
const root = join(edge, '..');
const out = join(edge, 'dist');
mkdirSync(out, { recursive: true });
const result = await build({
  entryPoints: [join(edge, 'worker.ts')],
  outfile: join(out, 'worker.mjs'),
  bundle: true,
  format: 'esm',
  platform: 'browser',
  conditions: ['workerd', 'worker', 'browser'],
  target: 'es2022',
  external: ['*.wasm'],
  minify: false,
  metafile: true,
  logLevel: 'warning',
});
copyFileSync(join(root, 'node_modules', 'onnxruntime-web', 'dist', 'ort-wasm-simd-threaded.asyncify.wasm'), join(out, 'ort-wasm-simd-threaded.asyncify.wasm'));
const mb = (f) => (statSync(join(out, f)).size / 1e6).toFixed(1);
console.log(`edge/dist: worker.mjs ${mb('worker.mjs')} MB, ort-wasm-simd-threaded.asyncify.wasm ${mb('ort-wasm-simd-threaded.asyncify.wasm')} MB`);
export default result;
