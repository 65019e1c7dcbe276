// The EmbeddingBackend over transformers.js (onnxruntime-node on Node, onnxruntime-web in
// browsers and at the edge). Remote models are always disabled: files come from the caller.
import { AutoModel, AutoTokenizer, Tensor, env } from '@huggingface/transformers';
import { describeOneThreadCopy, loadsOneThreadCopy, runsOnOneThread } from './one-thread-copy.ts';
import { padBatch, type PaddedBatch } from './padding.ts';
import type { ModelSettings } from '../embedder/settings.ts';
import type { EmbeddingBackend } from '../embedder/types.ts';

export interface TransformersBackendOptions {
  /** Folder name of the model under `localModelPath`. */
  readonly modelId: string;
  /** Path or URL path under which model folders live, ending in `/`. */
  readonly localModelPath: string;
  readonly settings: ModelSettings;
  /** Another graph of the folder's onnx/ than model*.onnx, by its base name (e.g. "model_fused": onnx/model_fused.onnx). */
  readonly modelFileName?: string;
  /** transformers.js device, e.g. 'cpu' (onnxruntime-node), 'wasm', 'webgpu'. */
  readonly device?: string;
  /**
   * Set when an ONNX runtime was injected (src/node/runtime/webgpu/install-runtime.ts): transformers.js then knows no
   * devices, so the session gets these execution providers directly, e.g. ['webgpu'].
   */
  readonly executionProviders?: string[];
  readonly intraOpNumThreads?: number;
  /**
   * Whether onnxruntime-node's CPU threads spin-wait for work after a run (onnxruntime's default)
   * or sleep. A server waits between batches, and spinning burns that time: false (what
   * `lexembed serve` uses unless told otherwise) measured 35 % less CPU per short text here.
   */
  readonly threadSpinning?: boolean;
  /**
   * Batches of at most this many padded tokens (texts × the longest) run on a second copy of the
   * model with one intra-op thread (CPU, `intraOpNumThreads` > 1 only; 0 or absent: no copy). A
   * short batch on the many-thread session wakes onnxruntime's sleeping pool threads for every
   * parallel operator, which costs more than the work they share: measured on 2 cores (bundled
   * hybrid, one session each, same run), one thread took 1.54 ms for one 16-token text against 1.88
   * with two sleeping threads, and was faster up to 4×64 tokens; two won from 8×64 on (23.5 against
   * 27.1 ms). The vectors are bit-identical either way (onnxruntime's CPU kernels split rows, not sums).
   */
  readonly smallBatchTokens?: number;
  /**
   * Whether every text runs in a call of its own, unpadded (default: with the int8 graph, whose
   * activation scale is one per call; quantizesPerCall). False batches the int8 graph's texts as
   * the float32 graph's are: ×2.2–2.9 the texts/s at ~16 tokens, the same from ~128 on
   * (`npm run bench:embedder`, docs/speed.md), but a text's vector then moves with its batch
   * companions, up to ~1e-3 a component.
   */
  readonly oneTextPerRun?: boolean;
  /** Extra options for the model's session (e.g. where its outputs stay: src/node/runtime/device-pooling.ts). */
  readonly sessionOptions?: Record<string, unknown>;
  /**
   * Runs the model's raw session and pools on the device (Node's native WebGPU): replaces reading
   * last_hidden_state back and pooling it here. Unit-norm is still applied by the embedder.
   */
  readonly devicePooling?: { run(session: unknown, feeds: Record<string, unknown>, batch: PaddedBatch): Promise<Float32Array[]>; dispose(): Promise<void> };
  /** Download progress of model files, 0–1 (browsers). */
  readonly progress?: (fraction: number, file: string) => void;
}

/** onnxruntime session config entries (onnxruntime_session_options_config_keys.h): threads sleep when idle. */
const NO_SPINNING = { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } };

export async function createTransformersBackend(options: TransformersBackendOptions): Promise<EmbeddingBackend> {
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = options.localModelPath;
  const device = options.device ?? 'cpu';
  const progress_callback = options.progress
    ? (p: { status: string; file?: string; progress?: number }) => {
        if (p.status === 'progress' && typeof p.progress === 'number') options.progress!(p.progress / 100, p.file ?? '');
      }
    : undefined;
  const tokenizer = await AutoTokenizer.from_pretrained(options.modelId, { progress_callback });
  const injected = options.executionProviders;
  const load = (intraOpNumThreads: number | undefined) =>
    AutoModel.from_pretrained(options.modelId, {
      progress_callback,
      dtype: options.settings.dtype,
      ...(options.modelFileName ? { model_file_name: options.modelFileName } : {}),
      device: (injected ? 'auto' : device) as 'cpu',
      session_options: {
        ...(injected ? { executionProviders: injected } : intraOpNumThreads ? { intraOpNumThreads, interOpNumThreads: 1 } : {}),
        ...(options.threadSpinning === false && !injected && device === 'cpu' ? { extra: NO_SPINNING } : {}),
        ...options.sessionOptions,
      } as object,
    });
  const model = await load(options.intraOpNumThreads);
  const smallBatchTokens = options.smallBatchTokens ?? 0;
  let oneThread: typeof model | null = null;
  if (loadsOneThreadCopy(options)) {
    try {
      oneThread = await load(1);
    } catch (error) {
      await model.dispose();
      throw error;
    }
  }
  const session = (model as unknown as { sessions: Record<string, { inputNames: string[] } | undefined> }).sessions.model;
  if (!session) throw new Error(`${options.modelId}: transformers.js loaded no "model" session from onnx/`);
  const inputNames = session.inputNames;
  const pooling = options.settings.pooling;
  const devicePooling = options.devicePooling;

  // The int8 graph quantises each MatMul's input with DynamicQuantizeLinear: one scale (the
  // tensor's range) per call, over every text and padding position in it, so a text's vector moved
  // with its batch companions (up to 1.1e-3 a component, issue 66). One text a call, unpadded,
  // makes its vector depend on the text alone; what it costs: docs/speed.md.
  const oneTextPerRun = options.oneTextPerRun ?? quantizesPerCall(options.settings.dtype);
  async function runPadded(batch: readonly (readonly number[])[]): Promise<Float32Array[]> {
    const padded = padBatch(batch);
    const { dims, inputIds, attentionMask, tokenTypeIds } = padded;
    const width = dims[1];
    const all: Record<string, Tensor> = {
      input_ids: new Tensor('int64', inputIds, dims),
      attention_mask: new Tensor('int64', attentionMask, dims),
      token_type_ids: new Tensor('int64', tokenTypeIds, dims),
    };
    const feeds = Object.fromEntries(inputNames.map((n) => [n, all[n]!]));
    // The raw session takes onnxruntime's own tensors, which transformers.js's wrap.
    if (devicePooling) return devicePooling.run(session, Object.fromEntries(Object.entries(feeds).map(([n, t]) => [n, t.ort_tensor])), padded);
    const output = await (oneThread && runsOnOneThread(dims, smallBatchTokens) ? oneThread : model)(feeds);
    const hidden = output.last_hidden_state as Tensor;
    const data = hidden.data as Float32Array;
    const size = hidden.dims[2]!;
    const vectors = batch.map((seq, row) => pool(data, row, width, size, seq.length, pooling));
    hidden.dispose?.();
    return vectors;
  }

  return {
    name: `transformers.js (${device}${oneThread ? describeOneThreadCopy(smallBatchTokens) : ''})`,
    encode: (text) => tokenizer.encode(text, { add_special_tokens: true }),
    decode: (ids) => tokenizer.decode(ids as number[], { skip_special_tokens: true }),
    tokenize: (text) => tokenizer.tokenize(text),
    async run(batch) {
      if (!oneTextPerRun) return runPadded(batch);
      const vectors: Float32Array[] = [];
      for (const seq of batch) vectors.push(...(await runPadded([seq])));
      return vectors;
    },
    async dispose() {
      await devicePooling?.dispose();
      await model.dispose();
      await oneThread?.dispose();
    },
  };
}

/**
 * Whether a graph of this dtype quantises activations with one scale per call (the int8 graph's
 * DynamicQuantizeLinear), so that texts must run one per call to keep their vectors their own.
 * @example quantizesPerCall('q8') // true
 */
export const quantizesPerCall = (dtype: string) => dtype === 'q8';

function pool(data: Float32Array, row: number, width: number, size: number, length: number, pooling: 'mean' | 'cls'): Float32Array {
  const out = new Float32Array(size);
  const base = row * width * size;
  const count = pooling === 'cls' ? 1 : length;
  for (let t = 0; t < count; t++) {
    const offset = base + t * size;
    for (let k = 0; k < size; k++) out[k]! += data[offset + k]!;
  }
  for (let k = 0; k < size; k++) out[k]! /= count;
  return out;
}
