// `lexembed usage`: requests and input tokens per account, key, operation and UTC day, from the
// store the server records them in (the file store's usage.log, or Redis).
import { z } from 'zod';
import type { UsageRow } from '../usage/store.ts';
import { describeOptions, flag, parseOptions, UsageError } from './options.ts';
import { openUsageStore, STORE_OPTIONS, storeDescription } from './store-options.ts';

const day = (name: string) =>
  z.string().refine((s) => s === '' || (/^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(Date.parse(`${s}T00:00:00Z`)) && new Date(`${s}T00:00:00Z`).toISOString().startsWith(s)), {
    error: `must be a day like 2026-11-01 (${name})`,
  });

const OPTIONS = {
  account: { default: '', help: 'only this account' },
  since: { default: '', value: day('UTC'), help: 'first day, YYYY-MM-DD (UTC; default: the first recorded)' },
  until: { default: '', value: day('UTC, inclusive'), help: 'last day, YYYY-MM-DD, inclusive (UTC; default: today)' },
  json: flag({ help: 'print a JSON array of {account, key_id, operation, day, requests, input_tokens}' }),
  csv: flag({ help: 'print CSV with a header row' }),
  ...STORE_OPTIONS,
};

export const USAGE_USAGE = `Usage: lexembed usage [--account <id>] [--since YYYY-MM-DD] [--until YYYY-MM-DD] [--json | --csv]

Requests and input tokens of answered (200) requests per account, API key, operation and UTC
day, counted exactly as the responses' usage.input_tokens (refused requests are not counted; an
OpenAI-shaped call counts as embeddings). The file store's server writes its counts at most a
second after answering; Redis counts before answering.

Options:
${describeOptions(OPTIONS)}
`;

const COLUMNS = ['day', 'account', 'key_id', 'operation', 'requests', 'input_tokens'] as const;

export async function usageCommand(args: string[], out: (s: string) => void, err: (s: string) => void = out): Promise<number> {
  const { values, positionals, help } = parseOptions('lexembed usage', args, OPTIONS);
  if (help) return (out(USAGE_USAGE), 0);
  if (positionals.length) throw new UsageError(`lexembed usage: unexpected argument "${positionals[0]}"; filter with --account, --since and --until (lexembed usage --help)`);
  if (values.json && values.csv) throw new UsageError('lexembed usage: choose one of --json and --csv');
  if (values.since && values.until && values.since > values.until) throw new UsageError(`lexembed usage: --since ${values.since} is after --until ${values.until}`);
  const store = openUsageStore(values, { writer: false });
  let rows: UsageRow[];
  try {
    rows = await store.rows({ account: values.account || undefined, since: values.since || undefined, until: values.until || undefined });
  } finally {
    await store.close();
  }
  if (values.json) return (out(JSON.stringify(rows.map(({ account, key_id, operation, day, requests, input_tokens }) => ({ account, key_id, operation, day, requests, input_tokens })))), 0);
  if (values.csv) {
    out(COLUMNS.join(','));
    for (const r of rows) out(COLUMNS.map((c) => csvField(String(r[c]))).join(','));
    return 0;
  }
  err(`${storeDescription(values)}:`);
  out(COLUMNS.join('\t'));
  for (const r of rows) out(COLUMNS.map((c) => r[c]).join('\t'));
  const total = rows.reduce((t, r) => ({ requests: t.requests + r.requests, tokens: t.tokens + r.input_tokens }), { requests: 0, tokens: 0 });
  out(`total\t\t\t\t${total.requests}\t${total.tokens}`);
  return 0;
}

const csvField = (s: string) => (/[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
