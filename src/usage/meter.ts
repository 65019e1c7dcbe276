// Usage metering, per-key rate limits and monthly account quotas (the usage-based plan), over a
// UsageStore (memory, file or Redis: src/usage/stores). The HTTP app opens one ticket per
// authenticated operation: charge (the request against its key's requests per minute, its input
// tokens against the key's tokens per minute and the account's month, in one take) once the texts
// are tokenised and before the model runs, settle when the answer is known (a 200 is recorded;
// anything else gives its charge back). Only an operation that is never charged (tokenize) is
// admitted (requests per minute) before its body is read: checking the rate in the charge's take
// saves each request a store call (on Redis a write and a wake-up on both sides).
import type { Principal } from '../auth/records.ts';
import { problem, type Problem } from '../contract/problems.ts';
import type { TakeItem, TakeResult, UsageStore } from './store.ts';

/** What usage records count, per route: OpenAI-shaped and proxied calls count as the route they map to. */
export type MeteredOperation = 'embeddings' | 'rerankings' | 'tokenize';

/** Operations that charge their input tokens before the model runs (and check requests per minute then). */
const CHARGED: Readonly<Record<MeteredOperation, boolean>> = { embeddings: true, rerankings: true, tokenize: false };

export interface Ticket {
  /**
   * Requests per minute, before the body is read: a 429 when the key has used its requests this
   * minute. Only for an operation that is never charged (tokenize); a charged one is checked in its charge.
   */
  admit(): Promise<Problem | null>;
  /**
   * Input tokens of the request, exactly, before the model runs, in one take with the request
   * itself: a 429 over the key's requests or tokens per minute or the account's monthly quota.
   */
  charge(inputTokens: number): Promise<Problem | null>;
  /**
   * A 200 with its reported input tokens is recorded; anything else (null) gives back what was
   * charged. Every request not refused for its requests per minute counts against them, whatever
   * its outcome (one that failed before its charge is counted here).
   */
  settle(inputTokens: number | null): Promise<void>;
  /** RateLimit-Policy and RateLimit headers (IETF draft) for the key's limits, if it has any. */
  headers(): Record<string, string>;
}

export interface Meter {
  open(principal: Principal, operation: MeteredOperation): Ticket;
}

export interface MeterOptions {
  /** Milliseconds since the epoch (tests move time). */
  readonly now?: () => number;
  /**
   * A store failure: while checking limits (`check`: the request gets a 503), or while recording a
   * request that was answered (`record`: the request is not failed for it).
   */
  readonly onStoreError?: (error: unknown, during: 'check' | 'record') => void;
}

const MINUTE_MS = 60_000;
/** Clients that retry 429s (openai-node, lexembed's) leave these alone: no wait of theirs makes them pass. */
const NO_RETRY = { 'x-should-retry': 'false' };

/** Counter names, shared by every store. */
export const counters = {
  requests: (keyId: string, minute: number) => `rpm:${keyId}:${minute}`,
  tokens: (keyId: string, minute: number) => `tpm:${keyId}:${minute}`,
  month: (account: string, month: string) => `month:${account}:${month}`,
};

/** YYYY-MM-DD and YYYY-MM of a time, UTC. */
const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const utcMonth = (ms: number) => new Date(ms).toISOString().slice(0, 7);

/** The first millisecond of the next UTC month. */
export function nextMonthStart(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/** Month counters outlive their month a while, so `lexembed usage` and quotas never race their expiry. */
const MONTH_GRACE_MS = 40 * 24 * 3600_000;

/** When the counter of the month holding `ms` may be forgotten. */
export const monthCounterExpiry = (ms: number) => nextMonthStart(ms) + MONTH_GRACE_MS;

/** Seconds until `end`, at least 1 (what Retry-After and RateLimit's t say). */
const secondsUntil = (end: number, now: number) => Math.max(1, Math.ceil((end - now) / 1000));

/** The windows a request falls in, computed once a minute (dates are not cheap per request). */
interface Calendar {
  readonly minute: number;
  readonly minuteEnds: number;
  readonly day: string;
  readonly month: string;
  readonly renews: number;
  readonly monthExpiry: number;
}

function calendarOf(minute: number): Calendar {
  const ms = minute * MINUTE_MS;
  const renews = nextMonthStart(ms);
  return { minute, minuteEnds: ms + MINUTE_MS, day: utcDay(ms), month: utcMonth(ms), renews, monthExpiry: renews + MONTH_GRACE_MS };
}

export function createMeter(store: UsageStore, options: MeterOptions = {}): Meter {
  const now = options.now ?? Date.now;
  let calendar = calendarOf(Math.floor(now() / MINUTE_MS));
  const context: MeterContext = {
    store,
    now,
    onStoreError: options.onStoreError,
    calendarAt(ms) {
      const minute = Math.floor(ms / MINUTE_MS);
      if (minute !== calendar.minute) calendar = calendarOf(minute);
      return calendar;
    },
  };
  return { open: (principal, operation) => new MeteredRequest(context, principal, operation) };
}

interface MeterContext {
  readonly store: UsageStore;
  readonly now: () => number;
  readonly onStoreError?: MeterOptions['onStoreError'];
  calendarAt(ms: number): Calendar;
}

/** One request's ticket: what it took from which counter, so a failure gives exactly that back. */
class MeteredRequest implements Ticket {
  private readonly calendar: Calendar;
  private readonly taken: { counter: string; amount: number }[] = [];
  /** The key's counters as this request last saw them (for the RateLimit header). */
  private requestsUsed?: number;
  private tokensUsed?: number;
  private charged = 0;
  private settled = false;
  /**
   * Whether the request's place in its key's requests per minute is settled: counted, refused by
   * them, or the store failed while checking (then counting would fail too).
   */
  private rateDone = false;

  constructor(
    private readonly context: MeterContext,
    private readonly principal: Principal,
    private readonly operation: MeteredOperation,
  ) {
    this.calendar = context.calendarAt(context.now());
  }

  async admit(): Promise<Problem | null> {
    const { key } = this.principal;
    if (!key.rpm || CHARGED[this.operation]) return null;
    let result: TakeResult;
    try {
      result = await this.context.store.take([this.requestItem(key.rpm)]);
    } catch (error) {
      return this.unreachable(error);
    }
    this.requestsUsed = result.used[0];
    if (result.taken) return (this.rateDone = true), null;
    return this.rateRefusal();
  }

  async charge(inputTokens: number): Promise<Problem | null> {
    const { key, account } = this.principal;
    const { minute, minuteEnds, month: monthOf, renews, monthExpiry } = this.calendar;
    // One atomic take: the request itself (if its key limits requests and it has not been counted),
    // the key's tokens this minute (if limited) and the account's month, which always counts (a
    // quota set mid-month sees the month's usage before it).
    const quota = account.monthly_tokens ?? null;
    const request: TakeItem | null = key.rpm && !this.rateDone ? this.requestItem(key.rpm) : null;
    const tokens: TakeItem | null = key.tpm ? { counter: counters.tokens(key.id, minute), amount: inputTokens, limit: key.tpm, expiresAt: minuteEnds + MINUTE_MS } : null;
    const month: TakeItem = { counter: counters.month(account.id, monthOf), amount: inputTokens, limit: quota, expiresAt: monthExpiry };
    const items = [request, tokens, month].filter((item): item is TakeItem => item !== null);
    let result: TakeResult;
    try {
      result = await this.context.store.take(items);
    } catch (error) {
      return this.unreachable(error);
    }
    const used = (item: TakeItem) => result.used[items.indexOf(item)]!;
    const refused = result.taken ? null : items[result.refused];
    // A request refused for its tokens or the quota still counts against the rate (at settle): say so already.
    if (request) this.requestsUsed = used(request) + (refused && refused !== request ? 1 : 0);
    if (tokens) this.tokensUsed = used(tokens);
    if (result.taken) {
      this.rateDone = true;
      for (const item of [tokens, month]) if (item) this.taken.push({ counter: item.counter, amount: item.amount });
      this.charged += inputTokens;
      return null;
    }
    if (refused === request) return this.rateRefusal();
    if (refused === month) {
      return problem(
        'quotaExceeded',
        `the account ${account.id} has used ${used(month)} of its monthly quota of ${quota} input tokens in ${monthOf} (UTC), and this request needs ${inputTokens}; the quota renews at ${new Date(renews).toISOString()}`,
        { 'retry-after': String(secondsUntil(renews, this.context.now())), ...NO_RETRY, ...this.headers() },
      );
    }
    if (inputTokens > key.tpm!) {
      // No wait makes this request fit: say so, without a Retry-After to wait for.
      return problem(
        'rateLimited',
        `this request has ${inputTokens} input tokens, more than the API key ${key.id} may use in a minute (${key.tpm}); send fewer or shorter texts per request`,
        { ...NO_RETRY, ...this.headers() },
      );
    }
    const wait = this.secondsToMinuteEnd();
    return problem(
      'rateLimited',
      `this request has ${inputTokens} input tokens and the API key ${key.id} has ${Math.max(0, key.tpm! - used(tokens!))} of its ${key.tpm} input tokens per minute left; the limit frees in ${wait} s (at ${new Date(minuteEnds).toISOString()})`,
      { 'retry-after': String(wait), ...this.headers() },
    );
  }

  async settle(inputTokens: number | null): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    const { store } = this.context;
    const { key, account } = this.principal;
    try {
      // Not refused for its rate, yet not counted against it: it failed before (or at) its charge, or was never charged.
      if (key.rpm && !this.rateDone) await store.take([{ ...this.requestItem(key.rpm), limit: null }]);
      // Refused or failed: not counted in usage, and the tokens it was charged go back.
      if (inputTokens === null) return void (await this.giveBack());
      // An operation that runs no model is never charged; one that reports other tokens than it was charged is corrected.
      const month = counters.month(account.id, this.calendar.month);
      if (inputTokens > this.charged) await store.take([{ counter: month, amount: inputTokens - this.charged, limit: null, expiresAt: this.calendar.monthExpiry }]);
      else if (inputTokens < this.charged) await store.giveBack(month, this.charged - inputTokens);
      await store.record({ account: account.id, key_id: key.id, operation: this.operation, day: this.calendar.day }, inputTokens);
    } catch (error) {
      this.context.onStoreError?.(error, 'record');
    }
  }

  headers(): Record<string, string> {
    const { key } = this.principal;
    const policies: string[] = [];
    const current: string[] = [];
    const t = this.secondsToMinuteEnd();
    if (key.rpm) {
      policies.push(`"rpm";q=${key.rpm};w=60;qu="requests"`);
      current.push(`"rpm";r=${Math.max(0, key.rpm - (this.requestsUsed ?? 0))};t=${t}`);
    }
    if (key.tpm) {
      policies.push(`"tpm";q=${key.tpm};w=60;qu="tokens"`);
      if (this.tokensUsed !== undefined) current.push(`"tpm";r=${Math.max(0, key.tpm - this.tokensUsed)};t=${t}`);
    }
    return { ...(policies.length ? { 'ratelimit-policy': policies.join(', ') } : {}), ...(current.length ? { ratelimit: current.join(', ') } : {}) };
  }

  /** The request itself, against its key's requests per minute. */
  private requestItem(rpm: number): TakeItem {
    const { minute, minuteEnds } = this.calendar;
    return { counter: counters.requests(this.principal.key.id, minute), amount: 1, limit: rpm, expiresAt: minuteEnds + MINUTE_MS };
  }

  /** The 429 of a key that has made all its requests this minute. */
  private rateRefusal(): Problem {
    const { key } = this.principal;
    this.rateDone = true;
    const wait = this.secondsToMinuteEnd();
    return problem(
      'rateLimited',
      `the API key ${key.id} may make ${key.rpm} requests per minute and has made them all this minute; the limit frees in ${wait} s (at ${new Date(this.calendar.minuteEnds).toISOString()})`,
      { 'retry-after': String(wait), ...this.headers() },
    );
  }

  private secondsToMinuteEnd(): number {
    return secondsUntil(this.calendar.minuteEnds, this.context.now());
  }

  private async giveBack(): Promise<void> {
    for (const { counter, amount } of this.taken.splice(0)) await this.context.store.giveBack(counter, amount);
  }

  private unreachable(error: unknown): Problem {
    this.rateDone = true;
    this.context.onStoreError?.(error, 'check');
    return problem(
      'unavailable',
      `the usage store (${this.context.store.name}) cannot be reached, so the request's limits could not be checked; retry after the Retry-After delay (the server log says why)`,
      { 'retry-after': '2' },
    );
  }
}
