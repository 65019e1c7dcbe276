// Cross-request batching between HTTP and the model, in the manner of token-budget dynamic
// batching servers: sequences from concurrent requests share one queue; each model call takes
// the oldest waiting sequence (so no request starves) plus the waiting sequences closest to it
// in length (little padding), under a padded-token budget and a batch-size cap. An idle
// scheduler runs a lone request at once; the queue is bounded in tokens (backpressure).
// Its default limits, with what they were measured on: batch-defaults.ts.
import { DEFAULT_SCHEDULER_LIMITS, type SchedulerLimits } from './batch-defaults.ts';
import type { Reservation } from './admission.ts';
import type { EmbeddingBackend, SchedulerStats } from './types.ts';

export { DEFAULT_SCHEDULER_LIMITS, type SchedulerLimits };
export type { SchedulerStats } from './types.ts';

export interface SchedulerHooks {
  onBatch?(size: number, paddedTokens: number): void;
  onQueueDepth?(sequences: number): void;
}

export class QueueFullError extends Error {
  override name = 'QueueFullError';
}

/** A submitted request: its sequences' vectors as they come back, and how it ends. */
interface PendingRequest {
  readonly results: Float32Array[];
  remaining: number;
  done: boolean;
  resolve(v: Float32Array[]): void;
  reject(e: unknown): void;
}

/** One sequence waiting in the queue: whose it is, its place in that request, its ids, and when it arrived. */
export interface QueuedSequence<Owner = unknown> {
  readonly request: Owner;
  readonly index: number;
  readonly ids: readonly number[];
  readonly order: number;
}
/** A waiting sequence of a submitted request. */
type Waiting = QueuedSequence<PendingRequest>;

export class BatchScheduler {
  private queue: Waiting[] = [];
  private queuedTokens = 0;
  private reservedTokens = 0;
  private inFlight = 0;
  private arrivals = 0;
  private readonly totals = { batches: 0, sequences: 0, realTokens: 0, paddedTokens: 0 };

  constructor(
    private readonly backend: EmbeddingBackend,
    private readonly limits: SchedulerLimits = DEFAULT_SCHEDULER_LIMITS,
    private readonly hooks: SchedulerHooks = {},
  ) {}

  /**
   * Queues one request's token sequences; resolves with their pooled vectors in input order.
   * Rejects with QueueFullError when the queue cannot take them, and with the signal's reason
   * when aborted (its waiting sequences leave the queue).
   */
  submit(sequences: readonly (readonly number[])[], signal?: AbortSignal, reservation?: Reservation): Promise<Float32Array[]> {
    const tokens = sequences.reduce((n, s) => n + s.length, 0);
    // A reservation was admitted on its estimate: its request is queued whatever the estimate missed.
    reservation?.release();
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (!reservation) {
      const refused = this.refusal(tokens);
      if (refused) return Promise.reject(refused);
    }
    return new Promise((resolve, reject) => {
      const request: PendingRequest = { results: new Array(sequences.length), remaining: sequences.length, done: false, resolve, reject };
      if (sequences.length === 0) return resolve([]);
      sequences.forEach((ids, index) => this.queue.push({ request, index, ids, order: this.arrivals++ }));
      this.queuedTokens += tokens;
      this.hooks.onQueueDepth?.(this.queue.length);
      signal?.addEventListener(
        'abort',
        () => {
          if (request.done) return;
          request.done = true;
          this.removeRequest(request);
          reject(signal.reason);
        },
        { once: true },
      );
      this.pump();
    });
  }

  /**
   * Holds room for about `tokens` tokens before the request is tokenised, or throws QueueFullError
   * at once when the queue cannot take them: a full server answers in milliseconds, not after
   * tokenising work it will refuse.
   */
  reserve(tokens: number): Reservation {
    const refused = this.refusal(tokens, true);
    if (refused) throw refused;
    this.reservedTokens += tokens;
    let held = true;
    return {
      tokens,
      release: () => {
        if (held) (held = false), (this.reservedTokens -= tokens);
      },
    };
  }

  stats(): SchedulerStats {
    return { ...this.totals, queuedTokens: this.queuedTokens, queuedSequences: this.queue.length };
  }

  /** Why `tokens` more cannot be queued now, or null. */
  private refusal(tokens: number, estimated = false): QueueFullError | null {
    const held = this.queuedTokens + this.reservedTokens;
    // One oversized request is still admitted into an empty queue, so nothing valid is refused forever.
    if (held === 0 || held + tokens <= this.limits.maxQueueTokens) return null;
    const waiting = this.reservedTokens ? `${this.queuedTokens} tokens (and ${this.reservedTokens} more being tokenised)` : `${this.queuedTokens} tokens`;
    return new QueueFullError(`the queue holds ${waiting}; ${estimated ? 'about ' : ''}${tokens} more would pass its limit of ${this.limits.maxQueueTokens}`);
  }

  private removeRequest(request: PendingRequest) {
    const kept: Waiting[] = [];
    for (const item of this.queue) {
      if (item.request === request) this.queuedTokens -= item.ids.length;
      else kept.push(item);
    }
    this.queue = kept;
    this.hooks.onQueueDepth?.(this.queue.length);
  }

  /**
   * Sends batches while the backend has room for them (`maxBatchesInFlight`, 1 unless it says
   * more): a worker-thread backend holds the next batch while one runs, so it starts the moment
   * the last ends instead of after a round trip through this thread's event loop.
   */
  private pump() {
    const depth = this.backend.maxBatchesInFlight ?? 1;
    while (this.queue.length && this.inFlight < depth) {
      const batch = this.takeBatch();
      const width = Math.max(...batch.map((i) => i.ids.length));
      const real = batch.reduce((n, i) => n + i.ids.length, 0);
      this.totals.batches++;
      this.totals.sequences += batch.length;
      this.totals.realTokens += real;
      this.totals.paddedTokens += width * batch.length;
      this.hooks.onBatch?.(batch.length, width * batch.length);
      this.inFlight++;
      let run: Promise<Float32Array[]>;
      try {
        run = this.backend.run(batch.map((i) => i.ids));
      } catch (error) {
        run = Promise.reject(error);
      }
      run.then(
        (vectors) => this.settle(batch, vectors, undefined),
        (error: unknown) => this.settle(batch, undefined, error ?? new Error('the model run failed')),
      );
    }
  }

  /** A batch came back: its requests get their vectors (or its failure), and the next batch goes. */
  private settle(batch: Waiting[], vectors: Float32Array[] | undefined, failure: unknown) {
    this.inFlight--;
    for (const [k, item] of batch.entries()) {
      const { request } = item;
      if (request.done) continue;
      if (failure !== undefined) {
        request.done = true;
        this.removeRequest(request);
        request.reject(failure);
        continue;
      }
      request.results[item.index] = vectors![k]!;
      if (--request.remaining === 0) {
        request.done = true;
        request.resolve(request.results);
      }
    }
    this.pump();
  }

  /** Takes the next batch (selectBatch) off the queue. */
  private takeBatch(): Waiting[] {
    const batch = selectBatch(this.queue, this.limits);
    const taken = new Set(batch);
    this.queue = this.queue.filter((i) => !taken.has(i));
    for (const i of batch) this.queuedTokens -= i.ids.length;
    this.hooks.onQueueDepth?.(this.queue.length);
    return batch;
  }
}

/**
 * The next model call, chosen from the waiting sequences without changing them: the oldest
 * sequence (so none starves) and its nearest neighbours in length, grown while the batch stays
 * within `maxBatchSize`, `maxBatchTokens` (padded) and `minPaddingEfficiency`.
 * @example selectBatch(queue, { maxBatchSize: 4, maxBatchTokens: 100, maxQueueTokens: 1000 })
 */
export function selectBatch<T extends QueuedSequence>(queue: readonly T[], limits: SchedulerLimits): T[] {
  if (queue.length === 0) return [];
  const sorted = [...queue].sort((a, b) => a.ids.length - b.ids.length || a.order - b.order);
  const at = (i: number) => sorted[i]!; // every index below stays within sorted
  const len = (i: number) => at(i).ids.length;
  let oldest = 0;
  for (let i = 1; i < sorted.length; i++) if (at(i).order < at(oldest).order) oldest = i;
  let lo = oldest;
  let hi = oldest;
  let real = len(oldest);
  const minEfficiency = limits.minPaddingEfficiency ?? 0;
  const fits = (count: number, width: number, realTokens: number) =>
    count <= limits.maxBatchSize && count * width <= limits.maxBatchTokens && realTokens / (count * width) >= minEfficiency;
  while (hi - lo + 1 < limits.maxBatchSize) {
    const count = hi - lo + 2;
    const canLeft = lo > 0 && fits(count, len(hi), real + len(lo - 1));
    const canRight = hi < sorted.length - 1 && fits(count, len(hi + 1), real + len(hi + 1));
    if (!canLeft && !canRight) break;
    // Padding added: a shorter sequence pads up to the current width; a longer one widens all.
    const leftCost = canLeft ? len(hi) - len(lo - 1) : Infinity;
    const rightCost = canRight ? (len(hi + 1) - len(hi)) * (hi - lo + 1) : Infinity;
    if (leftCost <= rightCost) real += len(--lo);
    else real += len(++hi);
  }
  return sorted.slice(lo, hi + 1);
}
