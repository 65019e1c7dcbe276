// An in-memory usage store: tests, one process's counters, and the file store's working state.
import { rowKeyOf, rowMatches, sortRows, type UsageRow, type UsageRowKey, type UsageStore } from '../store.ts';

export interface MemoryUsageStore extends UsageStore {
  /** Adds a whole row (the file store's log, read back at start). */
  add(row: UsageRow): void;
  /** Sets a counter (the file store seeds each month's counters from its log). */
  seed(counter: string, value: number, expiresAt: number): void;
}

/** Adds to a row of a map of rows by key, in place. */
export function addTo(rows: Map<string, { -readonly [K in keyof UsageRow]: UsageRow[K] }>, row: UsageRowKey, requests: number, inputTokens: number): void {
  const k = rowKeyOf(row);
  const had = rows.get(k);
  if (had) {
    had.requests += requests;
    had.input_tokens += inputTokens;
  } else {
    rows.set(k, { account: row.account, key_id: row.key_id, operation: row.operation, day: row.day, requests, input_tokens: inputTokens });
  }
}

export function createMemoryUsageStore(options: { now?: () => number } = {}): MemoryUsageStore {
  const now = options.now ?? Date.now;
  const counters = new Map<string, { value: number; expiresAt: number }>();
  const rows = new Map<string, { -readonly [K in keyof UsageRow]: UsageRow[K] }>();
  let sweptAt = 0;
  const counter = (name: string) => {
    const t = now();
    if (t - sweptAt > 60_000) {
      sweptAt = t;
      for (const [k, c] of counters) if (c.expiresAt <= t) counters.delete(k);
    }
    const c = counters.get(name);
    return c && c.expiresAt > t ? c : undefined;
  };
  const add = (row: UsageRow) => addTo(rows, row, row.requests, row.input_tokens);
  return {
    name: 'memory',
    add,
    seed(name, value, expiresAt) {
      counters.set(name, { value, expiresAt });
    },
    async take(items) {
      const current = items.map((item) => counter(item.counter)?.value ?? 0);
      const refused = items.findIndex((item, i) => item.limit !== null && current[i]! + item.amount > item.limit);
      if (refused >= 0) return { taken: false, used: current, refused };
      return {
        taken: true,
        used: items.map((item) => {
          const c = counter(item.counter) ?? { value: 0, expiresAt: item.expiresAt };
          c.value += item.amount;
          c.expiresAt = Math.max(c.expiresAt, item.expiresAt);
          counters.set(item.counter, c);
          return c.value;
        }),
      };
    },
    async giveBack(name, amount) {
      const c = counter(name);
      if (c) c.value -= amount;
    },
    async record(row: UsageRowKey, inputTokens) {
      addTo(rows, row, 1, inputTokens);
    },
    async rows(filter) {
      return sortRows([...rows.values()].filter((r) => rowMatches(r, filter)).map((r) => ({ ...r })));
    },
    async close() {},
  };
}
