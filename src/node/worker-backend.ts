// An EmbeddingBackend that tokenises on the calling thread and runs the model in a worker
// thread, so the event loop keeps serving HTTP (and /health) while a batch runs.
import { Worker } from 'node:worker_threads';
import { AutoTokenizer, env } from '@huggingface/transformers';
import type { TransformersBackendOptions } from '../embedder/transformers-backend.ts';
import type { EmbeddingBackend } from '../embedder/types.ts';
import type { ServerDevice } from './webgpu.ts';

export interface InferenceWorkerData extends TransformersBackendOptions {
  /** cpu (onnxruntime-node), webgpu (onnxruntime-web over Dawn) or auto; the worker decides. */
  readonly serverDevice?: ServerDevice;
  /** Substring of the WebGPU adapter's name to use (Dawn's adapter= flag). */
  readonly gpuAdapter?: string;
}

export async function createWorkerBackend(options: InferenceWorkerData): Promise<EmbeddingBackend> {
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = options.localModelPath;
  const tokenizer = await AutoTokenizer.from_pretrained(options.modelId);
  // From source (tests, a dev checkout) the worker registers tsx first; built, it is plain JS.
  const entry = import.meta.url.endsWith('.ts') ? './inference-worker.mjs' : './inference-worker-main.js';
  const worker = new Worker(new URL(entry, import.meta.url), { workerData: options });
  const pending = new Map<number, { resolve: (v: Float32Array[]) => void; reject: (e: Error) => void }>();
  let nextId = 0;
  let dead: Error | undefined;

  const ready = await new Promise<{ device: string; reason: string; adapter?: string }>((resolve, reject) => {
    const onMessage = (m: { type: string; message?: string; device: string; reason: string; adapter?: string }) => {
      if (m.type === 'ready') resolve(m);
      else if (m.type === 'failed') worker.terminate().finally(() => reject(new Error(m.message)));
    };
    worker.once('message', onMessage);
    worker.once('error', reject);
  });
  worker.on('message', (m: { type: string; id: number; vectors?: Float32Array[]; message?: string }) => {
    const waiter = pending.get(m.id);
    if (!waiter) return;
    pending.delete(m.id);
    if (m.type === 'result') waiter.resolve(m.vectors!);
    else waiter.reject(new Error(m.message));
  });
  const failAll = (error: Error) => {
    dead = error;
    for (const w of pending.values()) w.reject(error);
    pending.clear();
  };
  worker.on('error', (error) => failAll(error instanceof Error ? error : new Error(String(error))));
  worker.on('exit', (code) => failAll(new Error(`the inference worker exited (code ${code})`)));

  return {
    name: `transformers.js (${ready.device === 'webgpu' ? `webgpu on ${ready.adapter}` : ready.device}, worker thread)`,
    deviceReason: ready.reason,
    encode: (text) => tokenizer.encode(text, { add_special_tokens: true }),
    decode: (ids) => tokenizer.decode(ids as number[], { skip_special_tokens: true }),
    run(batch) {
      if (dead) return Promise.reject(dead);
      return new Promise((resolve, reject) => {
        const id = nextId++;
        pending.set(id, { resolve, reject });
        worker.postMessage({ type: 'run', id, batch: batch.map((s) => [...s]) });
      });
    },
    collectGarbage() {
      if (dead) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const id = nextId++;
        pending.set(id, { resolve: () => resolve(), reject });
        worker.postMessage({ type: 'gc', id });
      });
    },
    async dispose() {
      if (dead) return;
      const done = new Promise<void>((resolve) => worker.once('message', () => resolve()));
      worker.postMessage({ type: 'dispose' });
      await Promise.race([done, new Promise((r) => setTimeout(r, 2000))]);
      await worker.terminate();
    },
  };
}
