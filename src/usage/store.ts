// The usage store interface every backend implements (memory, file, Redis): windowed counters
// that limits take from atomically, and usage rows per account, key, operation and UTC day.
// One conformance suite (tests/usage/usage-store-conformance.ts) runs against each.

/** What `lexembed usage --json` prints, one per account, key, operation and day. */
export interface UsageRow {
  readonly account: string;
  readonly key_id: string;
  readonly operation: string;
  readonly day: string;
  readonly requests: number;
  readonly input_tokens: number;
}

export type UsageRowKey = Pick<UsageRow, 'account' | 'key_id' | 'operation' | 'day'>;

/** Days are YYYY-MM-DD, inclusive. */
export interface UsageFilter {
  readonly account?: string;
  readonly since?: string;
  readonly until?: string;
}

export interface TakeItem {
  readonly counter: string;
  readonly amount: number;
  readonly limit: number | null;
  readonly expiresAt: number;
}

export type TakeResult = { readonly taken: true; readonly used: number[] } | { readonly taken: false; readonly used: number[]; readonly refused: number };

export interface UsageStore {
  readonly name: string;
  /**
   * Adds each item's `amount` to its counter unless that would take any of them over its `limit`
   * (null: no limit): all or nothing, atomically (across replicas where the store is shared).
   * `used` holds the counters after a take, or as they stand when refused; `refused` is the first
   * item that would have passed its limit. A counter is forgotten at its `expiresAt` (ms since the epoch).
   */
  take(items: readonly TakeItem[]): Promise<TakeResult>;
  /** Subtracts what a take added (the request failed before it was answered). */
  giveBack(counter: string, amount: number): Promise<void>;
  /** Adds one request and its input tokens to a usage row. */
  record(row: UsageRowKey, inputTokens: number): Promise<void>;
  /** Usage rows, sorted by day, account, key and operation. */
  rows(filter?: UsageFilter): Promise<UsageRow[]>;
  /** Writes what is pending (the file store buffers up to a second) and lets go of resources. */
  close(): Promise<void>;
}

export const rowKeyOf = (row: UsageRowKey) => JSON.stringify([row.day, row.account, row.key_id, row.operation]);

/** Whether a row passes a filter. */
export function rowMatches(row: UsageRowKey, filter: UsageFilter = {}): boolean {
  return (!filter.account || row.account === filter.account) && (!filter.since || row.day >= filter.since) && (!filter.until || row.day <= filter.until);
}

export function sortRows(rows: UsageRow[]): UsageRow[] {
  return rows.sort((a, b) => rowKeyOf(a).localeCompare(rowKeyOf(b)));
}
