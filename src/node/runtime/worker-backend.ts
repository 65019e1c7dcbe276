// An EmbeddingBackend that tokenises on the calling thread and runs the model in a worker
// thread, so the event loop keeps serving HTTP (and /health) while a batch runs.
import { Worker } from 'node:worker_threads';
import { AutoTokenizer, env } from '@huggingface/transformers';
import type { TransformersBackendOptions } from '../../backend/transformers-backend.ts';
import type { EmbeddingBackend } from '../../embedder/types.ts';
import type { InferencePlan, InferenceRequest } from './inference-plan.ts';
import type { FromInferenceWorker, InferenceReply, ToInferenceWorker } from './worker-protocol.ts';

export interface InferenceWorkerData extends TransformersBackendOptions {
  /** What was asked (device, adapter, runtime, dtype, batch settings): the worker plans with it (inference-plan.ts). */
  readonly request: InferenceRequest;
  /** Token ids the worker runs once before it reports ready, on WebGPU only (set by createWorkerBackend). */
  readonly warmupIds?: readonly number[];
}

/** A backend with the plan it was loaded by (the batch rule in it is applied by the caller: batch-plan.ts). */
export type PlannedBackend = EmbeddingBackend & { readonly plan: InferencePlan };

export async function createWorkerBackend(options: Omit<InferenceWorkerData, 'warmupIds'>): Promise<PlannedBackend> {
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = options.localModelPath;
  const tokenizer = await AutoTokenizer.from_pretrained(options.modelId);
  // From source (tests, a dev checkout) the worker registers tsx first; built, it is plain JS.
  const entry = import.meta.url.endsWith('.ts') ? './inference-worker.mjs' : './inference-worker-main.js';
  // WebGPU compiles its shader pipelines on a session's first run (measured on lavapipe: the
  // hybrid model's first one-text batch 1.1 s, the next of another shape 0.2 s): one short batch
  // before ready moves that cost from the first request into start-up.
  const warmupIds = tokenizer.encode('lexembed warm-up', { add_special_tokens: true });
  const worker = new Worker(new URL(entry, import.meta.url), { workerData: { ...options, warmupIds } });
  const pending = new Map<number, { resolve: (reply: InferenceReply) => void; reject: (e: Error) => void }>();
  let nextId = 0;
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
    name: `transformers.js (${ready.plan.device === 'webgpu' ? `webgpu on ${ready.plan.adapter?.name}` : ready.plan.device}, worker thread)`,
    device: ready.plan.device,
    deviceReason: ready.reason,
    plan: ready.plan,
    // The worker runs one batch at a time; the next waits in its message queue, so it starts the
    // moment the last ends rather than after the reply has gone through this thread's event loop.
    maxBatchesInFlight: 2,
    encode: (text) => tokenizer.encode(text, { add_special_tokens: true }),
    decode: (ids) => tokenizer.decode(ids as number[], { skip_special_tokens: true }),
    tokenize: (text) => tokenizer.tokenize(text),
    async run(batch) {
      const reply = await ask({ type: 'run', id: nextId++, batch: batch.map((seq) => [...seq]) });
      if (reply.type !== 'vectors') throw new Error(`the inference worker answered a batch with ${reply.type}`);
      return reply.vectors;
    },
    async collectGarbage() {
      if (!dead) await ask({ type: 'gc', id: nextId++ });
    },
    async dispose() {
      if (dead) return;
      // Its own reply, or two seconds: a stuck worker is terminated either way.
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([ask({ type: 'dispose', id: nextId++ }).catch(() => undefined), new Promise((r) => (timer = setTimeout(r, 2000)))]);
      clearTimeout(timer);
      await worker.terminate();
    },
  };
}
