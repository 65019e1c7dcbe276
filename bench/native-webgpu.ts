// `npm run bench:native-webgpu`: the model on onnxruntime-node's own WebGPU execution provider
// (Dawn built into onnxruntime-node 1.30, no WASM; pooling read back to JS or done on the GPU) beside the CPU provider and the current
// --device webgpu path (onnxruntime-web's WASM build on Dawn through the `webgpu` package, in the
// inference worker), same texts, same run: vectors (cosine to the CPU path), first-batch time
// (shader compilation included) and steady texts/s.
// Usage: npm run bench:native-webgpu -- [--model <dir>] [--texts 64] [--tokens 128] [--rounds 3] [--skip-web]
// (--skip-web: not the onnxruntime-web runtime, which the GPU kit does not carry)
import { basename, dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { truncateAndNormalize } from '../src/contract/index.ts';
import { parseModelSettings, SETTINGS_FILE } from '../src/embedder/settings.ts';
import type { EmbeddingBackend } from '../src/embedder/types.ts';
import { BUNDLED_MODEL_DIR, loadModelFolder } from '../src/node/runtime/load-model.ts';
import { createTransformersBackend } from '../src/backend/transformers-backend.ts';
import { createDevicePooling, KEEP_HIDDEN_ON_GPU } from '../src/node/runtime/device-pooling.ts';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const { values } = parseArgs({ options: { model: { type: 'string', default: BUNDLED_MODEL_DIR }, texts: { type: 'string', default: '64' }, tokens: { type: 'string', default: '128' }, rounds: { type: 'string', default: '3' }, 'skip-web': { type: 'boolean', default: false } } });
const dir = resolve(values.model!);
const settings = parseModelSettings(JSON.parse(readFileSync(join(dir, SETTINGS_FILE), 'utf8')), SETTINGS_FILE);
const n = Number(values.texts);
const tokens = Number(values.tokens);
const rounds = Number(values.rounds);
const SENTENCE = 'The Lessee shall indemnify and hold harmless the Lessor from every claim arising out of the use of the Premises. ';
// About `tokens` tokens each (the direct runs cut at exactly `tokens`; the embedder path reads them whole).
const texts = Array.from({ length: n }, (_, i) => `Clause ${i}. ${SENTENCE.repeat(Math.ceil(tokens / 22))}`);

type Run = { name: string; first: number; perSecond: number; vectors: Float32Array[] };

async function timeBackend(name: string, backend: EmbeddingBackend): Promise<Run> {
  const batch = texts.map((t) => backend.encode(t).slice(0, tokens));
  const batches: number[][][] = [];
  for (let i = 0; i < batch.length; i += 16) batches.push(batch.slice(i, i + 16));
  let started = performance.now();
  let vectors = (await backend.run(batches[0]!)).slice();
  const first = performance.now() - started;
  for (const b of batches.slice(1)) vectors.push(...(await backend.run(b)));
  started = performance.now();
  for (let r = 0; r < rounds; r++) {
    const out: Float32Array[] = [];
    for (const b of batches) out.push(...(await backend.run(b)));
    vectors = out;
  }
  const perSecond = (rounds * n) / ((performance.now() - started) / 1000);
  return { name, first, perSecond, vectors: vectors.map((v) => truncateAndNormalize(v, settings.dimensions.default)) };
}

const common = { modelId: basename(dir), localModelPath: dirname(dir) + '/', settings };
const runs: Run[] = [];
runs.push(await timeBackend('onnxruntime-node cpu', await createTransformersBackend({ ...common, device: 'cpu' })));
// The fp16 graph too where the folder has one (model/runtime/fp16.py), whatever the adapter reports:
// onnxruntime-node's provider decides on its own device whether it runs it.
const fp16 = existsSync(join(dir, 'onnx', 'model_fp16.onnx'));
for (const [onGpu, dtype] of [[false, 'fp32'], [true, 'fp32'], ...(fp16 ? [[true, 'fp16']] : [])] as [boolean, 'fp32' | 'fp16'][]) {
  // Pooling read back and done in JavaScript, or on the GPU (the server's native path: device-pooling.ts).
  const name = `onnxruntime-node webgpu (native)${dtype === 'fp16' ? ' fp16' : ''}, pooling ${onGpu ? 'on the GPU' : 'in JS'}`;
  try {
    const devicePooling = onGpu ? await createDevicePooling(settings.pooling) : undefined;
    const backendSettings = dtype === 'fp16' ? { ...settings, dtype } : settings;
    runs.push(await timeBackend(name, await createTransformersBackend({ ...common, settings: backendSettings, device: 'webgpu', ...(onGpu ? { sessionOptions: { ...KEEP_HIDDEN_ON_GPU }, devicePooling } : {}) })));
  } catch (error) {
    console.log(`${name}: failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}
// Through the server's inference worker (its batching, the same batches of 16; the server's
// default budget is a CPU's), on each WebGPU runtime.
for (const runtime of values['skip-web'] ? (['native'] as const) : (['native', 'web'] as const)) {
  const name = runtime === 'native' ? "worker: onnxruntime-node's WebGPU provider (default)" : 'worker: Dawn + onnxruntime-web (--webgpu-runtime web)';
  try {
    const started = performance.now();
    const embedder = await loadModelFolder(dir, { device: 'webgpu', webgpuRuntime: runtime, limits: { maxBatchSize: 16, maxBatchTokens: 16 * (tokens + 40), maxQueueTokens: 1 << 24, minPaddingEfficiency: 0 } });
    const run = async () => {
      const r = await embedder.embed({ texts, task: null, overflowStrategy: 'drop_end', dimensions: null });
      if (!r.ok) throw new Error(r.problem.detail ?? '');
      return r.value.vectors;
    };
    const vectors = await run();
    const first = performance.now() - started; // load, warm-up and the first pass
    const t = performance.now();
    for (let r = 0; r < rounds; r++) await run();
    runs.push({ name, first, perSecond: (rounds * n) / ((performance.now() - t) / 1000), vectors: [] });
    void vectors;
    await embedder.dispose();
  } catch (error) {
    console.log(`${name}: failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

const base = runs[0]!;
console.log(`model ${dir}; ${n} texts × ${tokens} tokens, batches of 16, ${rounds} timed rounds`);
for (const r of runs) {
  const cos = r.vectors.length ? Math.min(...r.vectors.map((v, i) => v.reduce((s, x, k) => s + x * base.vectors[i]![k]!, 0))) : NaN;
  console.log(`${r.name.padEnd(58)} first ${r.name.startsWith('worker') ? '(load+pass)' : 'batch'} ${r.first.toFixed(0).padStart(6)} ms   ${r.perSecond.toFixed(1).padStart(7)} texts/s (×${(r.perSecond / base.perSecond).toFixed(2)} cpu)   min cosine to cpu ${Number.isNaN(cos) ? '–' : cos.toFixed(5)}`);
}
process.exit(0);
