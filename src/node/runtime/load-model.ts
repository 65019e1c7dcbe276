// Loads a model folder from disk into an Embedder on onnxruntime-node.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EmbedderHooks } from '../../embedder/embedder.ts';
import { loadModel } from '../../embedder/load.ts';
import { DEFAULT_SCHEDULER_LIMITS, type SchedulerLimits } from '../../embedder/scheduler.ts';
import { formatFingerprint, vectorsFingerprint, type ModelFingerprints, type VectorsFingerprint } from '../../embedder/fingerprint.ts';
import { SETTINGS_FILE, type ModelSettings } from '../../embedder/settings.ts';
import type { TransformersBackendOptions } from '../../backend/transformers-backend.ts';
import { createWorkerBackend, type PlannedBackend } from './worker-backend.ts';
import { applyBatchRule, DEFAULT_SMALL_BATCH_TOKENS, type BatchSettings } from './batch-plan.ts';
import { checkFp16AgainstCpu, describeFp16Check, type Fp16Check } from './fp16-check.ts';
import { planInference, type InferenceRequest } from './inference-plan.ts';
import type { Embedder } from '../../embedder/types.ts';
import type { GpuDtype, GraphChoice, ServerDevice } from './webgpu/decide.ts';
import { graphFileOf, modelFacts } from './model-files.ts';
import { messageOf } from '../../util/message-of.ts';

export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
/**
 * The folder holding the bundled model folders: `models/` of a checkout, or where
 * LEXEMBED_MODELS_DIR points (the installed `lexembed` command sets it to the models of
 * @lexembed/legal-2-embedder, a package of its own so the library does not carry 53 MB).
 */
export const MODELS_DIR = process.env.LEXEMBED_MODELS_DIR || join(PROJECT_ROOT, 'models');
/** The model `npm start` serves when no --model is given (hybrid: transformer 256 + static 384 + lexical 1,152 = 1,792 dimensions). */
export const BUNDLED_MODEL_DIR = join(MODELS_DIR, 'legal-2-embedder');
/** The static model (384 static + 1,152 lexical = 1,536 dimensions, much faster, weaker): for the edge's 128 MB isolates and for speed. */
export const STATIC_MODEL_DIR = join(MODELS_DIR, 'legal-2-embedder-static');
/** Tiny random-weight BERT for tests that need a transformer graph quickly. */
export const TEST_MODEL_DIR = join(PROJECT_ROOT, 'models', 'test-tiny');

export interface LoadModelOptions {
  /** Overrides the API model name from the settings file. */
  readonly modelName?: string;
  /** onnxruntime's CPU threads of each lane's session (default: one per core). */
  readonly threads?: number;
  /**
   * Inference lanes on the CPU: worker threads each running a session of its own (default 1;
   * worker-backend.ts). A GPU plan, and --inference main, run one.
   */
  readonly lanes?: number;
  /**
   * Send the inference worker one batch at a time instead of holding the next in its queue
   * (lexembed embed: with two in flight, a resumed --chunk-tokens run's rows differed from an
   * uninterrupted run's in the last bit of some components; one at a time they are identical).
   */
  readonly oneBatchAtATime?: boolean;
  /**
   * Batches of at most this many padded tokens run on a one-thread copy of the model, when
   * `threads` > 1 on the CPU (default DEFAULT_SMALL_BATCH_TOKENS; 0: no copy). See
   * TransformersBackendOptions.smallBatchTokens.
   */
  readonly smallBatchTokens?: number;
  /** See TransformersBackendOptions.oneTextPerRun (default: the int8 graph runs one text a call). */
  readonly oneTextPerRun?: boolean;
  /** onnxruntime's CPU threads spin-wait between runs (true) or sleep (false, the default, set below in loadModelFolder; transformers-backend.ts applies it). */
  readonly threadSpinning?: boolean;
  readonly hooks?: EmbedderHooks;
  readonly limits?: SchedulerLimits;
  /**
   * --max-batch-tokens / --max-batch-size: numbers, or auto (the inference plan resolves it: fixed
   * on the CPU, measured on WebGPU at start-up; inference-plan.ts). Absent: `limits` stand as given.
   */
  readonly batch?: BatchSettings;
  /**
   * Where the model runs: `worker` (default; a worker thread, so the event loop stays free while
   * a batch runs) or `main` (the calling thread; blocks it during each batch).
   */
  readonly inference?: 'worker' | 'main';
  /** cpu (default here), webgpu or auto: see src/node/runtime/webgpu/. WebGPU needs the worker. */
  readonly device?: ServerDevice;
  /** Picks the WebGPU adapter whose name contains this. */
  readonly gpuAdapter?: string;
  /** native (default) or web: see InferenceWorkerData.webgpuRuntime. */
  readonly webgpuRuntime?: 'native' | 'web';
  /** The model's precision: auto (default), fp32, fp16 (WebGPU) or q8 (CPU) (see decideGpuDtype). */
  readonly gpuDtype?: GpuDtype;
  /** The exported or the fused graph: auto (default), plain or fused (see decideGraph). */
  readonly graph?: GraphChoice;
}

/**
 * Throws, saying what is missing, unless `dir` is a model folder (config.json, tokenizer.json,
 * onnx/model.onnx, lexembed.json): cheap, so a server checks it before it listens.
 */
export function checkModelFolder(dir: string): void {
  const folder = resolve(dir);
  if (!existsSync(folder)) {
    throw new Error(`model folder ${folder} does not exist; pass a folder with config.json, tokenizer.json, onnx/model.onnx and ${SETTINGS_FILE} (e.g. ${BUNDLED_MODEL_DIR})`);
  }
  for (const required of ['config.json', 'tokenizer.json', join('onnx', 'model.onnx')]) {
    if (!existsSync(join(folder, required))) {
      throw new Error(`model folder ${folder} has no ${required}; a model folder needs config.json, tokenizer.json, onnx/model.onnx and ${SETTINGS_FILE}`);
    }
  }
  if (!existsSync(join(folder, SETTINGS_FILE))) {
    throw new Error(`model folder ${folder} has no ${SETTINGS_FILE}; write one with max_input_tokens and dimensions (see docs/models.md)`);
  }
}

/** Loads `dir` (config.json, tokenizer.json, onnx/model.onnx, lexembed.json) through the one loader (embedder/load.ts). */
export async function loadModelFolder(dir: string, options: LoadModelOptions = {}): Promise<Embedder> {
  const folder = resolve(dir);
  const settingsPath = join(folder, SETTINGS_FILE);
  checkModelFolder(folder);
  // transformers.js would parse these itself and fail without naming the file.
  for (const json of ['config.json', 'tokenizer.json', 'tokenizer_config.json']) {
    if (json === 'tokenizer_config.json' && !existsSync(join(folder, json))) continue;
    readJsonFile(join(folder, json));
  }
  if (options.inference === 'main' && (options.lanes ?? 1) > 1) {
    throw new Error(`--lanes ${options.lanes} runs the model in ${options.lanes} worker threads; use --inference worker (the default) with it, or --lanes 1`);
  }
  return loadModel(
    {
      readSettings: async () => ({ value: readJsonFile(settingsPath), origin: settingsPath }),
      folderName: basename(folder),
      openBackend: (settings) => openFolderBackend(folder, settings, options),
      fingerprints: async (graphFile) => folderFingerprints(folder, graphFile),
    },
    { modelName: options.modelName, hooks: options.hooks },
  );
}

/** The backend the inference plan chooses (worker or main thread, fp16 checked), with its batch limits. */
async function openFolderBackend(folder: string, settings: ModelSettings, options: LoadModelOptions) {
  const backendOptions = {
    modelId: basename(folder),
    localModelPath: dirname(folder) + '/',
    settings,
    device: 'cpu',
    intraOpNumThreads: options.threads ?? availableParallelism(),
    threadSpinning: options.threadSpinning ?? false,
    smallBatchTokens: options.smallBatchTokens ?? DEFAULT_SMALL_BATCH_TOKENS,
    oneTextPerRun: options.oneTextPerRun,
  };
  const request: InferenceRequest = {
    device: options.device ?? 'cpu',
    gpuAdapter: options.gpuAdapter,
    webgpuRuntime: options.webgpuRuntime,
    dtype: options.gpuDtype ?? 'auto',
    graph: options.graph ?? 'auto',
    poolInJs: process.env.LEXEMBED_GPU_POOLING === 'js',
    batch: options.batch ?? {},
  };
  const open = (asked: InferenceRequest) =>
    options.inference === 'main' ? createMainThreadBackend(backendOptions, asked, folder) : createWorkerBackend({ ...backendOptions, request: asked, lanes: options.lanes, oneBatchAtATime: options.oneBatchAtATime });
  const backend = await checkedFp16(await open(request), request, backendOptions, open);
  try {
    const batch = await applyBatchRule(backend.plan.batch, options.limits ?? DEFAULT_SCHEDULER_LIMITS, backend);
    return {
      backend: batch.reason ? { ...backend, deviceReason: `${backend.deviceReason}; ${batch.reason}` } : backend,
      graphFile: graphFileOf(backend.plan.dtype, backend.plan.graph),
      limits: batch.limits,
    };
  } catch (error) {
    await backend.dispose();
    throw error;
  }
}

/**
 * A GPU backend that loaded the fp16 graph, checked against the CPU path's fp32 (fp16-check.ts):
 * kept with the check's figure in its device line; else, under --dtype auto, loaded again in fp32
 * with the reason, and under --dtype fp16, refused.
 */
async function checkedFp16(
  backend: PlannedBackend,
  request: InferenceRequest,
  cpuOptions: TransformersBackendOptions,
  open: (request: InferenceRequest) => Promise<PlannedBackend>,
): Promise<PlannedBackend> {
  if (backend.plan.device !== 'webgpu' || backend.plan.dtype !== 'fp16') return backend;
  let check: Fp16Check;
  try {
    check = await checkFp16AgainstCpu(backend, cpuOptions);
  } catch (error) {
    await backend.dispose();
    throw error;
  }
  const said = describeFp16Check(check);
  if (check.ok) return { ...backend, deviceReason: `${backend.deviceReason}; ${said}` };
  await backend.dispose();
  if (request.dtype === 'fp16') throw new Error(`--dtype fp16: ${said} on this adapter; run --dtype fp32 (or auto, which then keeps fp32)`);
  // The plan says it: "dtype fp32 (auto: not fp16 because fp16 vectors were off at load: …)".
  return open({ ...request, fp16Refused: said });
}

/**
 * The model on the calling thread (--inference main): onnxruntime-node's CPU provider, planned
 * with no WebGPU facts, so a webgpu device or fp16 is refused with the reason.
 */
async function createMainThreadBackend(options: TransformersBackendOptions, request: InferenceRequest, folder: string): Promise<PlannedBackend> {
  if (request.device === 'webgpu') {
    throw new Error('--device webgpu runs the model in the inference worker thread; use --inference worker (the default) with it');
  }
  const { settings } = options;
  const plan = planInference({ ...request, device: 'cpu' }, { gpu: null, model: modelFacts(folder, settings) });
  // Imported here: transformers.js is loaded on the main thread only when the model runs there.
  const { createTransformersBackend } = await import('../../backend/transformers-backend.ts');
  const backend = await createTransformersBackend({ ...options, settings: { ...settings, dtype: plan.dtype as typeof settings.dtype }, ...(plan.graph === 'fused' ? { modelFileName: 'model_fused' } : {}) });
  return { ...backend, plan };
}

/** A JSON file's value, or an error that names the file and says what is wrong with it. */
function readJsonFile(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`${path} is not valid JSON (${messageOf(error)}); the file is damaged or truncated: copy it again from the model's source`);
  }
}

/**
 * A short hash of what decides the vectors: the ONNX graph served at `dtype` (onnx/model.onnx, or
 * its fp16, int8 or fused sibling), the tokenizer and lexembed.json. An index built with one fingerprint
 * must be queried by a server showing the same one.
 * @example modelFingerprint('models/legal-2-embedder') // 'sha256:3f9a0c…' (16 hex digits)
 */
export function modelFingerprint(folder: string, dtype = 'fp32', graph: 'plain' | 'fused' = 'plain'): string {
  return folderFingerprints(folder, graphFileOf(dtype, graph)).fingerprint;
}

/**
 * What a document's stored vectors depend on, part by part (embedder/fingerprint.ts
 * vectorsFingerprint): what an index checks, so that a release changing only the query side keeps it.
 * @example modelVectorsFingerprint('models/legal-2-embedder') // { graph: 'sha256:…', tokenizer: …, document: …, sparse: … }
 */
export function modelVectorsFingerprint(folder: string, dtype = 'fp32', graph: 'plain' | 'fused' = 'plain'): VectorsFingerprint {
  return folderFingerprints(folder, graphFileOf(dtype, graph)).vectors;
}

/** The fingerprint and the vectors fingerprint (embedder/fingerprint.ts) of a folder's files on disk, each file read once. */
function folderFingerprints(folder: string, graphFile: string): ModelFingerprints {
  const [graph, tokenizer, settings] = [graphFile, 'tokenizer.json', SETTINGS_FILE].map((file) => readFileSync(join(folder, file)));
  const whole = createHash('sha256').update(graph!).update(tokenizer!).update(settings!);
  return {
    fingerprint: formatFingerprint(whole.digest()),
    vectors: vectorsFingerprint(createHash('sha256').update(graph!).digest(), tokenizer!, JSON.parse(settings!.toString('utf8'))),
  };
}
