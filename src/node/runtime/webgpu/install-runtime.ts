// Makes onnxruntime-web's WebGPU build the runtime transformers.js uses in this thread (after
// openWebGPU(), before the thread imports transformers.js), and reaches its GPUDevice.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';

/**
 * Makes onnxruntime-web's WebGPU build the ONNX runtime transformers.js will use in this thread.
 * Must run after openWebGPU() and before this thread imports @huggingface/transformers.
 */
export async function installOrtWebGPU(): Promise<void> {
  // V8's optimising tier takes ~45 s of CPU (2 cores) on ort's 27 MB wasm and stalls the thread
  // meanwhile; the GPU does the arithmetic, so the baseline compiler is enough. Process-wide flag.
  setFlagsFromString('--liftoff-only');
  const ort = await import('onnxruntime-web/webgpu');
  const require = createRequire(import.meta.url);
  const dist = dirname(require.resolve('onnxruntime-web/ort-wasm-simd-threaded.asyncify.wasm'));
  // Node's fetch() cannot read file: URLs, so hand over the wasm bytes; the glue .mjs loads from disk.
  ort.env.wasm.wasmBinary = readFileSync(`${dist}/ort-wasm-simd-threaded.asyncify.wasm`);
  // A prefix string (not {mjs, wasm}) also stops transformers.js from pointing ort at a CDN.
  ort.env.wasm.wasmPaths = pathToFileURL(`${dist}/`).href;
  // The GPU does the work; extra wasm threads would only add worker start-up in Node.
  ort.env.wasm.numThreads = 1;
  // onnxruntime-web loads models with fetch(); transformers.js passes Node a file path. Read bytes.
  const create = (model: unknown, options: unknown) =>
    ort.InferenceSession.create((typeof model === 'string' ? new Uint8Array(readFileSync(model)) : model) as Uint8Array, options as never);
  const InferenceSession = new Proxy(ort.InferenceSession, { get: (target, key) => (key === 'create' ? create : Reflect.get(target, key)) });
  // transformers.js uses a runtime found under this symbol instead of onnxruntime-node.
  (globalThis as Record<symbol, unknown>)[Symbol.for('onnxruntime')] = { ...ort, InferenceSession };
}

/** The GPUDevice onnxruntime-web created, once a session exists. */
export async function ortWebGPUDevice(): Promise<{ destroy(): void } | undefined> {
  const ort = await import('onnxruntime-web/webgpu');
  // env.webgpu.device is a promise-valued getter once the backend is initialised.
  try {
    return (await (ort.env.webgpu as { device?: Promise<{ destroy(): void }> }).device) ?? undefined;
  } catch {
    return undefined;
  }
}
