// The local client: the same `embeddings.create()` as the HTTP client, with the same responses
// and typed errors, computed in this page, worker or edge isolate by transformers.js on
// onnxruntime-web (WebGPU or WASM). Every asset comes from URLs the application serves.
import { env } from '@huggingface/transformers';
import { inProcessClient, type InProcessClient } from './in-process.ts';
import { DEFAULT_SCHEDULER_LIMITS } from '../embedder/batch-defaults.ts';
import { loadModel } from '../embedder/load.ts';
import { fingerprintingFetch, graphFileOf } from '../embedder/fingerprint.ts';
import { int8Verdict, type ModelSettings } from '../embedder/settings.ts';
import { createTransformersBackend } from '../backend/transformers-backend.ts';
import type { Embedder } from '../embedder/types.ts';
import { messageOf } from '../util/message-of.ts';
import { chooseDevice, type DeviceChoice, type LocalDevice } from './device.ts';
import { retryingFetch } from '../util/fetch-retry.ts';

export interface LocalClientOptions {
  /** URL path of the model folder, e.g. '/models/legal-2-embedder/' (served by the application). */
  model: string;
  device?: LocalDevice;
  /**
   * The model's precision: auto (default: on WASM the folder's int8 graph, onnx/model_quantized.onnx,
   * where its lexembed.json says it keeps quality, as the server's CPU path decides; else fp32),
   * fp32, or q8 (WASM only).
   */
  dtype?: LocalDtype;
  /**
   * The graph: auto (default: on WebGPU in float32, the folder's fused graph onnx/model_fused.onnx
   * where its lexembed.json lists one, model/runtime/fuse.py; else the exported graph), plain or fused.
   */
  graph?: 'auto' | 'plain' | 'fused';
  /**
   * URLs of onnxruntime-web's asyncify build, which WebGPU needs: { mjs, wasm } (default
   * '/ort/ort-wasm-simd-threaded.asyncify.*'). Used on WASM too unless `wasmOnlyPaths` is given.
   */
  wasmPaths?: { mjs: string; wasm: string };
  /**
   * URLs of onnxruntime-web's plain WASM build ({ mjs, wasm } of ort-wasm-simd-threaded.*), used when
   * the model runs on WASM: without asyncify's WebGPU support it ran the bundled hybrid's float32
   * graph 6 % faster in Chromium (46.6 vs 43.9 texts/s, bench:browser) and is smaller to load.
   * onnxruntime-web loads one build per page or worker: the first client's device decides it.
   */
  wasmOnlyPaths?: { mjs: string; wasm: string };
  /** Padded tokens per model call (default DEFAULT_SCHEDULER_LIMITS' 2,048: batch-defaults.ts). */
  maxBatchTokens?: number;
  /** WASM threads (needs cross-origin isolation; default: what the runtime offers, at most 4). */
  numThreads?: number;
  /** Allow a software-fallback WebGPU adapter under 'auto' (default false: WASM is faster). */
  allowFallbackAdapter?: boolean;
  /** Base of problem `type` URIs (default '/docs', as the server). */
  docsUrl?: string;
  /** Model-file download progress, 0–1. */
  onProgress?: (fraction: number, file: string) => void;
}

export interface LocalClient extends InProcessClient {
  /** Where the model runs and why; resolves once the model is loaded. */
  /**
   * Resolves once the model is loaded: the device, precision and graph chosen (and why), the load time,
   * and the model's identity, as a Node server shows it: `modelId` (lexembed.json "id") and
   * `fingerprint` (a hash of the graph, tokenizer and settings this page loaded; null if a file could not be read back).
   */
  readonly ready: Promise<DeviceChoice & { dtype: string; graph: 'plain' | 'fused'; loadMs: number; modelId: string | null; fingerprint: string | null }>;
  dispose(): Promise<void>;
}

/**
 * @example const client = createLocalClient({ model: '/models/legal-2-embedder/' });
 *          const { embeddings } = await client.embeddings.create({ model: 'legal-2-embedder', texts: ['Lease'] });
 */
const NODE_MESSAGE =
  'createLocalClient runs the model in a browser or a web worker (model files fetched from `model`, onnxruntime-web); ' +
  "in Node, load a model folder from disk with loadModelFolder (lexembed/server) or call a server started with `npx lexembed serve` through new Lexembed()";

/** Node (not a browser, worker or workerd): process.versions.node, with no window or WorkerGlobalScope. */
const isNode = () =>
  typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === 'string' &&
  typeof (globalThis as { window?: unknown }).window === 'undefined' &&
  typeof (globalThis as { WorkerGlobalScope?: unknown }).WorkerGlobalScope === 'undefined';

export function createLocalClient(options: LocalClientOptions): LocalClient {
  const docsUrl = options.docsUrl ?? '/docs';
  const loading = isNode() ? Promise.reject(new Error(NODE_MESSAGE)) : load(options);
  loading.catch(() => {});
  // Handled here too: a caller that never awaits `ready` must not get an unhandled rejection
  // (which ends a Node process); one that awaits it still gets the error, once.
  const ready = loading.then(({ choice, loadMs, embedder }) => ({ ...choice, loadMs, modelId: embedder.settings.id ?? null, fingerprint: embedder.settings.fingerprint ?? null }));
  ready.catch(() => {});
  return {
    ...inProcessClient(async () => (await loading).embedder, docsUrl),
    ready,
    async dispose() {
      await (await loading).embedder.dispose();
    },
  };
}

async function load(options: LocalClientOptions): Promise<{ embedder: Embedder; choice: DeviceChoice & { dtype: string; graph: 'plain' | 'fused' }; loadMs: number }> {
  const started = performance.now();
  const base = options.model.endsWith('/') ? options.model : `${options.model}/`;
  const parts = base.replace(/\/+$/, '').split('/');
  const modelId = parts.pop()!;
  const root = parts.join('/') + '/';
  const onnx = env.backends.onnx as { wasm?: { wasmPaths?: unknown; numThreads?: number; proxy?: boolean } };
  if (onnx.wasm) {
    const isolated = (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true;
    const cores = (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? 1;
    onnx.wasm.numThreads = options.numThreads ?? (isolated ? Math.min(4, cores) : 1);
  }
  // Model files are large and a busy server or a dropped connection happens: every fetch of them
  // retries. They skip the HTTP cache: a private window's in-memory cache cannot hold a 50 MB model
  // and fails the download (net::ERR_CACHE_WRITE_FAILURE, every time in Chromium's incognito);
  // transformers.js keeps its own copy in the Cache API where the browser allows one.
  // Each model file is hashed as it streams in, for the model's fingerprint.
  const tf = env as unknown as { fetch: typeof fetch; cacheKey?: string };
  const network = retryingFetch(uncachedFetch);
  const files = fingerprintingFetch(network);
  tf.fetch = files.fetch;
  let choice: (DeviceChoice & { dtype: string; graph: 'plain' | 'fused' }) | undefined;
  const embedder = await loadModel(
    {
      async readSettings() {
        const response = await tf.fetch(`${base}lexembed.json`);
        if (!response.ok) throw new Error(`cannot load ${base}lexembed.json (HTTP ${response.status}); serve the model folder at ${base}`);
        return { value: await response.json(), origin: `${base}lexembed.json` };
      },
      folderName: modelId,
      async openBackend(settings) {
        const opened = await openPageBackend(options, settings, { modelId, root });
        choice = opened.choice;
        return { backend: opened.backend, graphFile: graphFileOf(opened.choice.dtype, opened.choice.graph) };
      },
      // A file transformers.js took from its Cache API copy did not pass through fetch: read it there (or fetch it again).
      fingerprints: (graphFile) => files.fingerprints(graphFile, async (file) => (await cachedFile(tf.cacheKey, `${base}${file}`)) ?? network(`${base}${file}`)),
    },
    { limits: options.maxBatchTokens ? { ...DEFAULT_SCHEDULER_LIMITS, maxBatchTokens: options.maxBatchTokens } : undefined },
  );
  return { embedder, choice: choice!, loadMs: performance.now() - started };
}

/** The page's device, precision and graph for these settings, and the backend on them (auto falls back to what loads). */
async function openPageBackend(options: LocalClientOptions, settings: ModelSettings, folder: { modelId: string; root: string }) {
  const onnx = env.backends.onnx as { wasm?: { wasmPaths?: unknown } };
  const device = await chooseDevice(options.device ?? 'auto', options.allowFallbackAdapter);
  // The runtime's build, once the device is known (onnxruntime-web loads it with the first session).
  if (onnx.wasm) {
    onnx.wasm.wasmPaths =
      device.device === 'wasm' && options.wasmOnlyPaths
        ? options.wasmOnlyPaths
        : (options.wasmPaths ?? { mjs: '/ort/ort-wasm-simd-threaded.asyncify.mjs', wasm: '/ort/ort-wasm-simd-threaded.asyncify.wasm' });
  }
  const precision = chooseDtype(options.dtype ?? 'auto', device.device, settings);
  const open = (dtype: ModelSettings['dtype'], fused: boolean) =>
    createTransformersBackend({ modelId: folder.modelId, localModelPath: folder.root, settings: { ...settings, dtype }, device: device.device, progress: options.onProgress, ...(fused ? { modelFileName: 'model_fused' } : {}) });
  let backend: Awaited<ReturnType<typeof open>>;
  let { dtype, reason } = precision;
  let graph = chooseGraph(options.graph ?? 'auto', device.device, dtype, settings);
  try {
    backend = await open(dtype, graph.graph === 'fused');
  } catch (error) {
    // auto's int8 or fused graph would not load (an older onnxruntime-web, a file missing): the exported float32 one still serves.
    const first = messageOf(error).split('\n')[0];
    if (options.dtype !== 'q8' && dtype === 'q8') {
      backend = await open((dtype = settings.dtype), false);
      reason = `dtype ${dtype} (auto: the int8 graph did not load: ${first})`;
    } else if ((options.graph ?? 'auto') === 'auto' && graph.graph === 'fused') {
      backend = await open(dtype, false);
      graph = { graph: 'plain', reason: `exported graph (auto: the fused graph did not load: ${first})` };
    } else throw error;
  }
  return { backend, choice: { device: device.device, dtype, graph: graph.graph, reason: `${device.reason}; ${reason}${graph.reason ? `; ${graph.reason}` : ''}` } };
}

export type LocalDtype = 'auto' | 'fp32' | 'q8';

/**
 * The graph in the page: the server's rule (src/node/runtime/webgpu/decide.ts decideGraph) on what
 * the page can know: the fused graph on WebGPU in float32 where lexembed.json lists one (the page
 * cannot hash model.onnx to see that the record is fresh, as the server does); fused kernels gained
 * nothing on a CPU, so WASM keeps the exported graph unless asked.
 */
export function chooseGraph(requested: 'auto' | 'plain' | 'fused', device: 'webgpu' | 'wasm', dtype: string, settings: ModelSettings): { graph: 'plain' | 'fused'; reason?: string } {
  const missing = !settings.fused ? 'lexembed.json lists no fused graph ("fused"; made by model/runtime/fuse.py)' : dtype !== 'fp32' ? `the model runs ${dtype} and the fused graph is float32` : undefined;
  if (requested === 'fused') {
    if (missing) throw new Error(`graph "fused": ${missing}`);
    return { graph: 'fused', reason: 'fused graph onnx/model_fused.onnx was requested' };
  }
  if (requested === 'plain' || device !== 'webgpu') return { graph: 'plain' };
  return missing ? { graph: 'plain', reason: `exported graph (auto: not fused because ${missing})` } : { graph: 'fused', reason: "fused graph onnx/model_fused.onnx (auto: onnxruntime's fused kernels on WebGPU)" };
}

/** The precision in the page: the server's CPU rule (int8Verdict) on WASM; WebGPU runs the float32 graph. */
export function chooseDtype(requested: LocalDtype, device: 'webgpu' | 'wasm', settings: ModelSettings): { dtype: ModelSettings['dtype']; reason: string } {
  if (requested === 'fp32') return { dtype: settings.dtype, reason: 'dtype fp32 was requested' };
  const verdict = int8Verdict(settings.quantized);
  if (requested === 'q8') {
    if (device !== 'wasm') throw new Error('dtype "q8" runs on WASM (int8 MatMulInteger has no WebGPU kernel); use dtype "auto" or "fp32" on WebGPU');
    if (!settings.quantized) throw new Error('dtype "q8": the model folder\'s lexembed.json lists no int8 graph ("quantized"; made by model/runtime/quantize.py)');
    return { dtype: 'q8', reason: `dtype q8 (${settings.quantized.file}${verdict.figures ? `; ${verdict.figures}` : ''}) was requested` };
  }
  if (device !== 'wasm') return { dtype: settings.dtype, reason: `dtype ${settings.dtype} (auto: int8 runs on WASM only)` };
  if (settings.dtype !== 'fp32' || !verdict.keeps) return { dtype: settings.dtype, reason: `dtype ${settings.dtype} (auto: not q8 because ${verdict.why ?? `the model is ${settings.dtype}`})` };
  return { dtype: 'q8', reason: `dtype q8 (auto: the int8 graph keeps quality: ${verdict.figures})` };
}

/** transformers.js's copy of a model file in the Cache API, where the browser has one. */
async function cachedFile(cacheName: string | undefined, url: string): Promise<Response | undefined> {
  if (typeof caches === 'undefined') return undefined;
  try {
    return await (await caches.open(cacheName ?? 'transformers-cache')).match(url);
  } catch {
    return undefined; // no Cache API here (a private window, an insecure origin)
  }
}

const uncachedFetch: typeof fetch = (input, init) => fetch(input, { ...init, cache: 'no-store' });

export { chunkText, tokenOffsets, wordTokenCounter, type ChunkOptions, type TextChunk, type TokenSpan } from '../embedder/chunk.ts';
