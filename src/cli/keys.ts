// `lexembed keys …` and `lexembed accounts …`: manage API keys and account states.
import { z } from 'zod';
import { keyState, RESOURCES, SERVED_RESOURCES } from '../auth/records.ts';
import { createKey, parseDuration, setAccount } from '../auth/service.ts';
import { describeOptions, flag, parseOptions, UsageError } from './options.ts';
import { emptyStoreNote, openKeyStore, STORE_OPTIONS, storeDescription, storeFile } from './store-options.ts';

/** A limit option: '' (absent), 'none' (remove: keys update) or a positive integer. */
const limit = z
  .string()
  .refine((s) => s === '' || s === 'none' || /^[1-9]\d{0,14}$/.test(s), { error: 'must be a positive integer (or "none" to remove the limit)' })
  .transform((s) => (s === '' ? undefined : s === 'none' ? null : Number(s)));
const limitText = (n: number | null | undefined) => (n ? String(n) : 'none');
const bool = z.enum(['true', 'false'], { error: 'must be true or false' }).optional().transform((v) => (v === undefined ? undefined : v === 'true'));

const CREATE_OPTIONS = {
  account: {
    value: z.string().regex(/^[\w.@-]{1,100}$/, { error: 'must be 1–100 letters, digits, _ . @ or -' }).optional(),
    help: 'account id the key belongs to (created, active/verified/subscribed, if new)',
  },
  expires: { default: '', value: z.string().refine((s) => s === '' || parseDuration(s) !== null, { error: 'must be a duration like 30d, 12h, 15m or 2w' }), help: 'lifetime, e.g. 30d, 12h, 2w (default: never expires)' },
  resources: {
    default: SERVED_RESOURCES.join(','),
    value: z.string().superRefine((s, ctx) => {
      const unserved = s.split(',').map((r) => r.trim()).filter((r) => !(SERVED_RESOURCES as readonly string[]).includes(r));
      if (unserved.length === 0) return;
      const known = unserved.filter((r) => (RESOURCES as readonly string[]).includes(r));
      ctx.addIssue({
        code: 'custom',
        message: `lists what this server does not serve: lexembed serves ${SERVED_RESOURCES.join(', ')}; it does not serve ${unserved.join(', ')}${known.length ? ' (operations of the API it answers 404)' : ''}`,
      });
    }),
    help: `comma-separated resources the key may use: ${SERVED_RESOURCES.join(', ')}`,
  },
  rpm: { default: '', value: limit, help: 'requests per minute the key may make (over it: 429 with Retry-After; default: no limit; with keys update, "none" removes it)' },
  tpm: { default: '', value: limit, help: 'input tokens per minute the key may use (default: no limit; with keys update, "none" removes it)' },
  ...STORE_OPTIONS,
};

const ACCOUNT_OPTIONS = {
  active: { value: bool, help: 'true|false' },
  verified: { value: bool, help: 'true|false (e-mail verified)' },
  subscribed: { value: bool, help: 'true|false (usage-based plan)' },
  overdue: { value: bool, help: 'true|false (overdue invoices)' },
  'monthly-tokens': { default: '', value: limit, help: 'input tokens the account may use per calendar month, UTC (over it: 429 until the month ends); "none" removes the quota' },
  create: flag({ help: 'create the account if it does not exist (without it, an unknown id is refused: a typo must not leave the real account unchanged)' }),
  ...STORE_OPTIONS,
};

export const KEYS_USAGE = `Usage:
  lexembed keys create --account <id> [--expires <duration>] [--resources embeddings,rerankings] [--rpm N] [--tpm N]
  lexembed keys update <key-id> [--rpm N|none] [--tpm N|none]
  lexembed keys list
  lexembed keys revoke <key-id>

Options:
${describeOptions(CREATE_OPTIONS)}
`;

export const ACCOUNTS_USAGE = `Usage:
  lexembed accounts set <id> [--active true|false] [--verified true|false] [--subscribed true|false] [--overdue true|false] [--monthly-tokens N|none] [--create]
  lexembed accounts list

Options:
${describeOptions(ACCOUNT_OPTIONS)}
`;

export async function keysCommand(args: string[], out: (s: string) => void, err: (s: string) => void = out): Promise<number> {
  const [sub, ...rest] = args;
  if (!sub || sub === '--help' || sub === '-h') return (out(KEYS_USAGE), sub ? 0 : 2);
  const { values, positionals, help } = parseOptions(`lexembed keys ${sub}`, rest, CREATE_OPTIONS);
  if (help) return (out(KEYS_USAGE), 0);
  const store = openKeyStore(values);
  try {
    if (sub === 'create') {
      if (!values.account) throw new UsageError('lexembed keys create: --account <id> is required');
      const { key, record } = await createKey(store, {
        account: values.account,
        expiresInMs: values.expires ? parseDuration(values.expires) : null,
        resources: values.resources.split(',').map((r) => r.trim()) as (typeof RESOURCES)[number][],
        rpm: values.rpm,
        tpm: values.tpm,
      });
      err(`${storeDescription(values)}:`);
      out(`created ${record.id} for account ${record.account} (resources ${record.resources.join(',')}, expires ${record.expires ?? 'never'}, rpm ${limitText(record.rpm)}, tpm ${limitText(record.tpm)})`);
      out('the key is shown only this once; store it now:');
      out(key);
      return 0;
    }
    if (sub === 'list') {
      const now = new Date();
      const keys = await store.listKeys();
      if (keys.length === 0) {
        err(emptyStoreNote(values));
        return 0;
      }
      err(`${keys.length} key${keys.length === 1 ? '' : 's'} in the ${storeFile(values)}:`);
      out(['id', 'account', 'state', 'created', 'expires', 'resources', 'rpm', 'tpm'].join('\t'));
      for (const k of keys) {
        out([k.id, k.account, keyState(k, now), k.created, k.expires ?? 'never', k.resources.join(','), limitText(k.rpm), limitText(k.tpm)].join('\t'));
      }
      return 0;
    }
    if (sub === 'update') {
      const id = positionals[0];
      if (!id) throw new UsageError('lexembed keys update: give the key id, e.g. lexembed keys update key_8f3KQ2mZab --rpm 60 (see lexembed keys list)');
      if (values.rpm === undefined && values.tpm === undefined) throw new UsageError('lexembed keys update: give --rpm and/or --tpm (a number, or none to remove the limit)');
      const updated = await store.setKeyLimits(id, { rpm: values.rpm, tpm: values.tpm });
      if (!updated) throw new UsageError(`lexembed keys update: no key with id ${id} in the ${storeDescription(values)}; see lexembed keys list`);
      err(`${storeDescription(values)}:`);
      out(`updated ${id} (account ${updated.account}): rpm ${limitText(updated.rpm)}, tpm ${limitText(updated.tpm)} (running servers apply it to the next request)`);
      return 0;
    }
    if (sub === 'revoke') {
      const id = positionals[0];
      if (!id) throw new UsageError('lexembed keys revoke: give the key id, e.g. lexembed keys revoke key_8f3KQ2mZab (see lexembed keys list)');
      const revoked = await store.revokeKey(id, new Date().toISOString());
      if (!revoked) throw new UsageError(`lexembed keys revoke: no key with id ${id} in the ${storeDescription(values)}; see lexembed keys list (and --store, --data-dir or --redis-url if it was made in another store)`);
      err(`${storeDescription(values)}:`);
      out(`revoked ${id} (account ${revoked.account}) at ${revoked.revoked}`);
      return 0;
    }
    throw new UsageError(`lexembed keys: unknown subcommand "${sub}"; use create, update, list or revoke`);
  } finally {
    await store.close();
  }
}

export async function accountsCommand(args: string[], out: (s: string) => void, err: (s: string) => void = out): Promise<number> {
  const [sub, ...rest] = args;
  if (!sub || sub === '--help' || sub === '-h') return (out(ACCOUNTS_USAGE), sub ? 0 : 2);
  const { values, positionals, help } = parseOptions(`lexembed accounts ${sub}`, rest, ACCOUNT_OPTIONS);
  if (help) return (out(ACCOUNTS_USAGE), 0);
  const store = openKeyStore(values);
  try {
    if (sub === 'set') {
      const id = positionals[0];
      if (!id) throw new UsageError('lexembed accounts set: give the account id, e.g. lexembed accounts set acme --overdue true');
      if (!values.create && !(await store.getAccount(id))) {
        const known = (await store.listAccounts()).map((a) => a.id);
        throw new UsageError(
          `lexembed accounts set: no account "${id}" in the ${storeDescription(values)}${known.length ? ` (accounts there: ${known.slice(0, 10).join(', ')}${known.length > 10 ? ', …' : ''})` : ' (it has no accounts)'}; check the id and the store, or pass --create to create it`,
        );
      }
      const patch = Object.fromEntries(
        (['active', 'verified', 'subscribed', 'overdue'] as const).filter((k) => values[k] !== undefined).map((k) => [k, values[k]]),
      );
      const quota = values['monthly-tokens'];
      const account = await setAccount(store, id, { ...patch, ...(quota !== undefined ? { monthly_tokens: quota } : {}) });
      err(`${storeDescription(values)}:`);
      out(`account ${account.id}: active ${account.active}, verified ${account.verified}, subscribed ${account.subscribed}, overdue ${account.overdue}, monthly tokens ${limitText(account.monthly_tokens)}`);
      return 0;
    }
    if (sub === 'list') {
      err(`${storeDescription(values)}:`);
      out(['id', 'active', 'verified', 'subscribed', 'overdue', 'monthly_tokens'].join('\t'));
      for (const a of await store.listAccounts()) out([a.id, a.active, a.verified, a.subscribed, a.overdue, limitText(a.monthly_tokens)].join('\t'));
      return 0;
    }
    throw new UsageError(`lexembed accounts: unknown subcommand "${sub}"; use set or list`);
  } finally {
    await store.close();
  }
}
