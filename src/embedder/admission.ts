// One request's admission as one lease (in the manner of text-embeddings-inference's permit): it is
// opened once, before the body is read, through its two gates — room in the batching queue for the
// request's declared size (the scheduler's) and the key's requests per minute (the usage meter's
// ticket, where keys and metering are on) — committed with the exact input tokens once the texts
// are tokenised (the meter's tokens per minute and monthly quota, before the model runs), and
// settled with the outcome (the room given back; a 200 recorded, anything else refunded). It is the
// one source of the answer's rate-limit headers. The HTTP pipeline (src/http/pipeline.ts) opens
// and settles it; the embedder commits it and hands its room to the queue.
import type { Problem, Result } from '../contract/index.ts';

/**
 * Room held in the batching queue (scheduler.ts) for a request that is still being read or
 * tokenised, so concurrent requests see it; the queue takes it over when the texts are submitted,
 * `release` gives it back.
 */
export interface Reservation {
  readonly tokens: number;
  release(): void;
}

/** The usage meter's side of a lease (src/usage/meter.ts's Ticket is one). */
export interface UsageGate {
  /** Requests per minute before the body is read (a charged operation checks them in its charge instead); a 429 problem or null. */
  admit(): Promise<Problem | null>;
  /** The exact input tokens before the model runs; a 429 problem or null. */
  charge(inputTokens: number): Promise<Problem | null>;
  /** A 200's input tokens are recorded; null gives the charge back. */
  settle(inputTokens: number | null): Promise<void>;
  /** RateLimit-Policy and RateLimit headers for the key's limits. */
  headers(): Record<string, string>;
}

/** The queue's side of a lease: room for about `tokens` tokens, or a 503 problem at once. */
export type QueueGate = (tokens: number) => Result<Reservation>;

export interface Lease {
  /** Room held in the batching queue until the request's texts are queued (null: none was taken, e.g. no declared size). */
  readonly room: Reservation | null;
  /** The request's exact input tokens, before the model runs: a problem (rate limit, quota) refuses it there. */
  commit(inputTokens: number): Promise<Problem | null>;
  /** The outcome: a 200's input tokens, or null for anything else. Gives the room back; records or refunds the usage. Once only: later calls do nothing. */
  settle(inputTokens: number | null): Promise<void>;
  /** The answer's rate-limit headers (none without a meter). */
  headers(): Record<string, string>;
}

/**
 * Opens a request's lease: the meter's admission first (a 429 costs no queue room), then room
 * for `tokens` (a 503 gives the meter's place back). `tokens` null takes no room: the embedder
 * then holds room for its own estimate while it tokenises.
 */
export async function openLease(gates: { usage?: UsageGate; queue?: QueueGate; tokens: number | null }): Promise<Result<Lease>> {
  const { usage } = gates;
  const limited = await usage?.admit();
  if (limited) return { ok: false, problem: limited };
  let room: Reservation | null = null;
  if (gates.queue && gates.tokens !== null) {
    const reserved = gates.queue(gates.tokens);
    if (!reserved.ok) {
      await usage?.settle(null);
      return reserved;
    }
    room = reserved.value;
  }
  let settled = false;
  return {
    ok: true,
    value: {
      room,
      commit: async (inputTokens) => (usage ? usage.charge(inputTokens) : null),
      async settle(inputTokens) {
        if (settled) return;
        settled = true;
        room?.release();
        await usage?.settle(inputTokens);
      },
      headers: () => usage?.headers() ?? {},
    },
  };
}
