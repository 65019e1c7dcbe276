// An EmbeddingBackend that tokenises on the calling thread and runs the model in worker threads
// (inference lanes), so the event loop keeps serving HTTP (and /health) while batches run.
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { join } from 'node:path';
import { describeOneThreadCopy, loadsOneThreadCopy } from '../../backend/one-thread-copy.ts';
import type { TransformersBackendOptions } from '../../backend/transformers-backend.ts';
import type { EmbeddingBackend } from '../../embedder/types.ts';
import type { InferencePlan, InferenceRequest } from './inference-plan.ts';
import { loadFolderTokenizer } from './tokenizer.ts';
import type { FromInferenceWorker, InferenceReply, ToInferenceWorker } from './worker-protocol.ts';

export interface InferenceWorkerData extends TransformersBackendOptions {
  /** What was asked (device, adapter, runtime, dtype, batch settings): the worker plans with it (inference-plan.ts). */
  readonly request: InferenceRequest;
  /** Token ids the worker runs once before it reports ready, on WebGPU only (set by createWorkerBackend). */
  readonly warmupIds?: readonly number[];
}

/** A backend with the plan it was loaded by (the batch rule in it is applied by the caller: batch-plan.ts). */
export type PlannedBackend = EmbeddingBackend & { readonly plan: InferencePlan };

/** Batches each lane holds: one running, the next waiting in its message queue (unless `oneBatchAtATime`). */
const BATCHES_PER_LANE = 2;

/**
 * `lanes` workers, each with a session of its own (CPU only; a GPU plan runs one): the scheduler
 * keeps every lane fed, so one lane's JavaScript and serial operators overlap another's model run.
 * Measured on 2 cores (bundled hybrid; docs/gpu.md): two lanes gave 1.05–1.17× the texts/s of one
 * for requests of 16 texts, but 0.82–0.94× the requests/s for 64 clients sending one short text
 * each, where the event loop is the bottleneck and more model threads compete with it; so one
 * lane is the default.
 */
export async function createWorkerBackend(options: Omit<InferenceWorkerData, 'warmupIds'> & { readonly lanes?: number; readonly oneBatchAtATime?: boolean }): Promise<PlannedBackend> {
  // The main thread tokenises with the library transformers.js wraps, not transformers.js (tokenizer.ts).
  const tokenizer = loadFolderTokenizer(join(options.localModelPath, options.modelId));
  // WebGPU compiles its shader pipelines on a session's first run (measured on lavapipe: the
  // hybrid model's first one-text batch 1.1 s, the next of another shape 0.2 s): one short batch
  // before ready moves that cost from the first request into start-up.
  const warmupIds = tokenizer.encode('lexembed warm-up');
  const { lanes: asked = 1, oneBatchAtATime = false, ...workerOptions } = options;
  const first = await startLane({ ...workerOptions, warmupIds });
  const { plan } = first.ready;
  const lanes = [first];
  if (plan.device === 'cpu' && asked > 1) {
    // The first lane planned for the machine; the others load the same plan's model beside it.
    const rest = await Promise.allSettled(Array.from({ length: asked - 1 }, () => startLane({ ...workerOptions, warmupIds })));
    for (const r of rest) if (r.status === 'fulfilled') lanes.push(r.value);
    const failed = rest.find((r) => r.status === 'rejected');
    if (failed) {
      await Promise.all(lanes.map((l) => l.dispose()));
      throw (failed as PromiseRejectedResult).reason;
    }
  }
  let nextId = 0;
  const threads = options.intraOpNumThreads ?? availableParallelism();
  // In the name ("model … loaded … on <name>"); the device line keeps saying only where and why.
  // The worker decides from the same options (transformers-backend.ts), so the name says what it loaded.
  const copy = plan.device === 'cpu' && loadsOneThreadCopy(workerOptions) ? describeOneThreadCopy(options.smallBatchTokens!) : '';
  const where =
    plan.device === 'webgpu'
      ? `webgpu on ${plan.adapter?.name}, worker thread${asked > 1 ? `; --lanes ${asked} applies to the cpu only` : ''}`
      : lanes.length > 1 ? `${plan.device}, ${lanes.length} inference lanes of ${threads} thread${threads === 1 ? '' : 's'}${copy}` : `${plan.device}, worker thread${copy}`;

  return {
    name: `transformers.js (${where})`,
    device: plan.device,
    deviceReason: first.ready.reason,
    plan,
    // Each lane runs one batch at a time; the next waits in its message queue, so it starts the
    // moment the last ends rather than after the reply has gone through this thread's event loop.
    maxBatchesInFlight: (oneBatchAtATime ? 1 : BATCHES_PER_LANE) * lanes.length,
    encode: tokenizer.encode,
    decode: tokenizer.decode,
    tokenize: tokenizer.tokenize,
    async run(batch) {
      // A lane whose worker ended takes no more batches while another still runs.
      const lane = lanes[pickLane(lanes.map((l) => (l.alive ? l.inFlight : Number.POSITIVE_INFINITY)))]!;
      const reply = await lane.ask({ type: 'run', id: nextId++, batch: batch.map((seq) => [...seq]) });
      if (reply.type !== 'vectors') throw new Error(`the inference worker answered a batch with ${reply.type}`);
      return reply.vectors;
    },
    async collectGarbage() {
      await Promise.all(lanes.map((l) => l.collectGarbage(nextId++)));
    },
    async dispose() {
      await Promise.all(lanes.map((l) => l.dispose(nextId++)));
    },
  };
}

/**
 * The lane for the next batch: the one with the fewest batches sent and unanswered, the first
 * among equals (so a lone request always runs on lane 0, whose session is warm).
 * @example pickLane([1, 0]) // 1
 */
export function pickLane(inFlight: readonly number[]): number {
  let best = 0;
  for (let i = 1; i < inFlight.length; i++) if (inFlight[i]! < inFlight[best]!) best = i;
  return best;
}

interface Lane {
  readonly ready: Extract<FromInferenceWorker, { type: 'ready' }>;
  /** Requests sent and not yet answered. */
  readonly inFlight: number;
  /** False once the worker has ended or failed. */
  readonly alive: boolean;
  ask(message: ToInferenceWorker): Promise<InferenceReply>;
  collectGarbage(id: number): Promise<void>;
  /** Waits for the batches already sent (or two seconds), then ends the worker. */
  dispose(id?: number): Promise<void>;
}

/** One inference worker, loaded and ready. */
async function startLane(workerData: InferenceWorkerData): Promise<Lane> {
  // From source (tests, a dev checkout) the worker registers tsx first; built, it is plain JS.
  const entry = import.meta.url.endsWith('.ts') ? './inference-worker.mjs' : './inference-worker-main.js';
  const worker = new Worker(new URL(entry, import.meta.url), { workerData });
  const pending = new Map<number, { resolve: (reply: InferenceReply) => void; reject: (e: Error) => void }>();
  let dead: Error | undefined;

  const ready = await new Promise<Extract<FromInferenceWorker, { type: 'ready' }>>((resolve, reject) => {
    worker.once('message', (m: FromInferenceWorker) => {
      if (m.type === 'ready') resolve(m);
      else worker.terminate().finally(() => reject(new Error(m.type === 'failed' ? m.message : `the inference worker sent ${m.type} before ready`)));
    });
    worker.once('error', reject);
  });
  worker.on('message', (m: FromInferenceWorker) => {
    if (!('id' in m)) return;
    const waiter = pending.get(m.id);
    if (!waiter) return;
    pending.delete(m.id);
    if (m.type === 'error') waiter.reject(new Error(m.message));
    else waiter.resolve(m);
  });
  const failAll = (error: Error) => {
    dead = error;
    for (const w of pending.values()) w.reject(error);
    pending.clear();
  };
  worker.on('error', (error) => failAll(error instanceof Error ? error : new Error(String(error))));
  worker.on('exit', (code) => failAll(new Error(`the inference worker exited (code ${code})`)));
  /** Sends one request and waits for the reply with its id. */
  const ask = (message: ToInferenceWorker): Promise<InferenceReply> => {
    if (dead) return Promise.reject(dead);
    return new Promise((resolve, reject) => {
      pending.set(message.id, { resolve, reject });
      worker.postMessage(message);
    });
  };
  return {
    ready,
    get inFlight() {
      return pending.size;
    },
    get alive() {
      return !dead;
    },
    ask,
    async collectGarbage(id) {
      if (!dead) await ask({ type: 'gc', id });
    },
    async dispose(id = -1) {
      if (dead) return;
      // Its own reply, or two seconds: a stuck worker is terminated either way.
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([ask({ type: 'dispose', id }).catch(() => undefined), new Promise((r) => (timer = setTimeout(r, 2000)))]);
      clearTimeout(timer);
      await worker.terminate();
    },
  };
}
