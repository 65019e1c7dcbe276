// The usage store of a single server: counters in memory, usage rows in an append-only log
// (<data-dir>/usage.log, one JSON object per line) written at most a second after the requests
// it counts, with fsync: a crash loses at most the last second and never corrupts the log (a line
// cut short by a crash is dropped when the server starts again). Each month's counters are read
// back from the log at start, so quotas hold across restarts.
import { closeSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { counters, monthCounterExpiry } from '../meter.ts';
import type { UsageRow, UsageStore } from '../store.ts';
import { addTo, createMemoryUsageStore } from './memory.ts';

export const USAGE_LOG = 'usage.log';
/** Most milliseconds between a request being answered and its usage written to disk. */
export const FLUSH_MS = 1000;

const RowSchema = z.object({
  day: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
  account: z.string(),
  key_id: z.string(),
  operation: z.string(),
  requests: z.number().int(),
  input_tokens: z.number().int(),
});

/** The complete lines of a log (a last line without its newline was cut short by a crash). */
function readLog(file: string): { rows: UsageRow[]; complete: number } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { rows: [], complete: 0 };
    throw error;
  }
  const complete = text.lastIndexOf('\n') + 1;
  const rows: UsageRow[] = [];
  for (const [i, line] of text.slice(0, complete).split('\n').entries()) {
    if (!line) continue;
    let row: UsageRow;
    try {
      row = RowSchema.parse(JSON.parse(line));
    } catch {
      throw new Error(`the usage log ${file} has a damaged line ${i + 1}; move the line aside (it is JSON per line) and start again`);
    }
    rows.push(row);
  }
  return { rows, complete: Buffer.byteLength(text.slice(0, complete)) };
}

/**
 * @param writer the server (appends; cuts a crash's partial last line at open) or a reader (`lexembed usage`).
 */
export function createFileUsageStore(dataDir: string, options: { writer: boolean; now?: () => number }): UsageStore {
  const file = join(dataDir, USAGE_LOG);
  const memory = createMemoryUsageStore({ now: options.now });
  const { rows, complete } = readLog(file);
  const months = new Map<string, { value: number; expiresAt: number }>();
  for (const row of rows) {
    memory.add(row);
    const name = counters.month(row.account, row.day.slice(0, 7));
    const month = months.get(name) ?? { value: 0, expiresAt: monthCounterExpiry(Date.parse(`${row.day}T00:00:00Z`)) };
    months.set(name, { ...month, value: month.value + row.input_tokens });
  }
  for (const [name, { value, expiresAt }] of months) memory.seed(name, value, expiresAt);

  let fd: number | undefined;
  const pending: Parameters<typeof addTo>[0] = new Map();
  let timer: ReturnType<typeof setTimeout> | undefined;
  if (options.writer) {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    fd = openSync(file, 'a+', 0o600);
    ftruncateSync(fd, complete); // drop a line a crash cut short; appends go after it
  }
  const flush = () => {
    timer = undefined;
    if (fd === undefined || pending.size === 0) return;
    const lines = [...pending.values()].map((r) => JSON.stringify(r) + '\n').join('');
    pending.clear();
    writeSync(fd, lines);
    fsyncSync(fd);
  };

  return {
    name: 'file',
    take: memory.take,
    giveBack: memory.giveBack,
    async record(key, inputTokens) {
      if (fd === undefined) throw new Error('the usage store was opened to read only');
      await memory.record(key, inputTokens);
      addTo(pending, key, 1, inputTokens);
      if (!timer) {
        timer = setTimeout(flush, FLUSH_MS);
        timer.unref?.();
      }
    },
    rows: memory.rows,
    async close() {
      if (timer) clearTimeout(timer);
      flush();
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}
