// Every default batch limit, in one place, each with what it was measured on. A number given on
// the command line or to createLocalClient stands; WebGPU measures its own budget at start-up
// (node/runtime/batch-budget.ts) and keeps SLOW_GPU_BATCH_TOKENS where even its smallest probe is slow.

export interface SchedulerLimits {
  /** Most sequences in one model call. */
  readonly maxBatchSize: number;
  /** Most padded tokens (sequences × longest) in one model call. */
  readonly maxBatchTokens: number;
  /** Most tokens waiting in the queue; submissions past it are refused. */
  readonly maxQueueTokens: number;
  /** A batch grows only while real tokens / padded tokens stays at least this (0–1). */
  readonly minPaddingEfficiency?: number;
}

/**
 * The limits every runtime starts from (the Node server's `--max-batch-tokens auto` on a CPU, the
 * browser's and the edge's WASM, the library's createEmbedder). 2,048 padded tokens a call, measured
 * on the bundled hybrid on 2 cores: through the server (`npm run bench:cpu`) 11.8 CPU-ms a text at
 * ~128 tokens against 13.2 with 512 (~16 and ~512 tokens within noise); in the demo page on WASM
 * (`npm run bench:browser`) the int8 graph ran ×1.53 the texts/s of the page before with 2,048 and
 * ×1.42 with 4,096 (a text in a batch of 4 costs 2.4× one in a batch of 32). The cost: a short
 * query can wait behind a batch of ~4 × 512 tokens. 64 texts and a queue of 262,144 tokens bound
 * a batch of short texts and the memory waiting requests hold.
 */
export const DEFAULT_SCHEDULER_LIMITS: SchedulerLimits = { maxBatchSize: 64, maxBatchTokens: 2048, maxQueueTokens: 262144, minPaddingEfficiency: 0.9 };

/**
 * Batches of at most this many padded tokens run on a one-thread copy of the model on a
 * multi-core CPU (`--small-batch-tokens`; TransformersBackendOptions.smallBatchTokens): one
 * thread was faster up to 4×64 tokens on 2 cores, two from 8×64 on.
 */
export const DEFAULT_SMALL_BATCH_TOKENS = 256;

/**
 * A GPU too slow to run the smallest probe (1,024 tokens) within the latency target, such as a
 * software adapter, keeps batches of 512 padded tokens: what the CPU ran before 2,048 was measured.
 */
export const SLOW_GPU_BATCH_TOKENS = 512;
