// Which batches run on the one-thread copy of the model (TransformersBackendOptions.smallBatchTokens
// says why), apart from transformers-backend.ts so that the main thread can ask without loading
// transformers.js (only the inference worker runs the model).

/** What decides whether the copy loads: the fields of TransformersBackendOptions of those names. */
export interface OneThreadCopyOptions {
  readonly device?: string;
  readonly executionProviders?: readonly string[];
  readonly devicePooling?: unknown;
  readonly intraOpNumThreads?: number;
  readonly smallBatchTokens?: number;
}

/** Whether these options load the one-thread copy for small batches (see `smallBatchTokens`). */
export function loadsOneThreadCopy(options: OneThreadCopyOptions): boolean {
  return (options.device ?? 'cpu') === 'cpu' && !options.executionProviders && !options.devicePooling && (options.intraOpNumThreads ?? 0) > 1 && (options.smallBatchTokens ?? 0) > 0;
}

/** What the device line says of the copy: "; batches of up to 256 tokens on a one-thread copy". */
export const describeOneThreadCopy = (smallBatchTokens: number) => `; batches of up to ${smallBatchTokens} tokens on a one-thread copy`;

/**
 * Whether a padded batch of `dims` [texts, width] is small enough for the one-thread copy.
 * @example runsOnOneThread([4, 64], 256) // true
 * @example runsOnOneThread([8, 64], 256) // false
 */
export const runsOnOneThread = (dims: readonly [number, number], smallBatchTokens: number) => dims[0] * dims[1] <= smallBatchTokens;
