// The messages between the server thread and the inference worker, both ways. Every request
// that expects an answer carries an id and gets exactly one reply with that id; dispose has its
// own id too, so a late batch result can never be taken for the end of disposal.
import type { InferencePlan } from './inference-plan.ts';

export type ToInferenceWorker =
  | { readonly type: 'run'; readonly id: number; readonly batch: number[][] }
  | { readonly type: 'gc'; readonly id: number }
  | { readonly type: 'dispose'; readonly id: number };

export type FromInferenceWorker =
  /** Sent once, first: the model is loaded, by this plan (with the warm-up, if any, in the reason). */
  | { readonly type: 'ready'; readonly plan: InferencePlan; readonly reason: string }
  /** Sent once instead of ready: loading failed (the worker then ends). */
  | { readonly type: 'failed'; readonly message: string }
  | { readonly type: 'vectors'; readonly id: number; readonly vectors: Float32Array[] }
  | { readonly type: 'done'; readonly id: number }
  | { readonly type: 'error'; readonly id: number; readonly message: string };

export type InferenceReply = Extract<FromInferenceWorker, { id: number }>;
