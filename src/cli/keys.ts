// `lexembed keys …` and `lexembed accounts …`: manage API keys and account states.
import { z } from 'zod';
import { keyState, RESOURCES } from '../auth/records.ts';
import { createKey, parseDuration, setAccount } from '../auth/service.ts';
import { describeOptions, parseOptions, UsageError } from './options.ts';
import { openKeyStore, STORE_OPTIONS, StoreConfigSchema, storeDescription } from './store-options.ts';

const CREATE_OPTIONS = {
  account: { help: 'account id the key belongs to (created, active/verified/subscribed, if new)' },
  expires: { default: '', help: 'lifetime, e.g. 30d, 12h, 2w (default: never expires)' },
  resources: { default: 'embeddings,rerankings', help: `comma-separated resources the key may use (${RESOURCES.join(', ')}); the default is what lexembed serves` },
  ...STORE_OPTIONS,
};
const bool = z.enum(['true', 'false'], { error: 'must be true or false' }).optional().transform((v) => (v === undefined ? undefined : v === 'true'));
const ACCOUNT_OPTIONS = {
  active: { help: 'true|false' },
  verified: { help: 'true|false (e-mail verified)' },
  subscribed: { help: 'true|false (usage-based plan)' },
  overdue: { help: 'true|false (overdue invoices)' },
  create: { boolean: true, help: 'create the account if it does not exist (without it, an unknown id is refused: a typo must not leave the real account unchanged)' },
  ...STORE_OPTIONS,
};

export const KEYS_USAGE = `Usage:
  lexembed keys create --account <id> [--expires <duration>] [--resources embeddings,rerankings]
  lexembed keys list
  lexembed keys revoke <key-id>

Options:
${describeOptions(CREATE_OPTIONS)}
`;

export const ACCOUNTS_USAGE = `Usage:
  lexembed accounts set <id> [--active true|false] [--verified true|false] [--subscribed true|false] [--overdue true|false] [--create]
  lexembed accounts list

Options:
${describeOptions(ACCOUNT_OPTIONS)}
`;

export async function keysCommand(args: string[], out: (s: string) => void, err: (s: string) => void = out): Promise<number> {
  const [sub, ...rest] = args;
  if (!sub || sub === '--help' || sub === '-h') return (out(KEYS_USAGE), sub ? 0 : 2);
  const schema = StoreConfigSchema.extend({
    account: z.string().regex(/^[\w.@-]{1,100}$/, { error: 'must be 1–100 letters, digits, _ . @ or -' }).optional(),
    expires: z.string().refine((s) => s === '' || parseDuration(s) !== null, { error: 'must be a duration like 30d, 12h, 15m or 2w' }),
    resources: z.string().refine((s) => s.split(',').every((r) => (RESOURCES as readonly string[]).includes(r.trim())), {
      error: `must list only ${RESOURCES.join(', ')}`,
    }),
  });
  const { values, positionals, help } = parseOptions(`lexembed keys ${sub}`, rest, CREATE_OPTIONS, schema);
  if (help) return (out(KEYS_USAGE), 0);
  const store = openKeyStore(values);
  try {
    if (sub === 'create') {
      if (!values.account) throw new UsageError('lexembed keys create: --account <id> is required');
      const { key, record } = await createKey(store, {
        account: values.account,
        expiresInMs: values.expires ? parseDuration(values.expires) : null,
        resources: values.resources.split(',').map((r) => r.trim()) as (typeof RESOURCES)[number][],
      });
      err(`${storeDescription(values)}:`);
      out(`created ${record.id} for account ${record.account} (resources ${record.resources.join(',')}, expires ${record.expires ?? 'never'})`);
      out('the key is shown only this once; store it now:');
      out(key);
      return 0;
    }
    if (sub === 'list') {
      const now = new Date();
      err(`${storeDescription(values)}:`);
      out(['id', 'account', 'state', 'created', 'expires', 'resources'].join('\t'));
      for (const k of await store.listKeys()) out([k.id, k.account, keyState(k, now), k.created, k.expires ?? 'never', k.resources.join(',')].join('\t'));
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
    throw new UsageError(`lexembed keys: unknown subcommand "${sub}"; use create, list or revoke`);
  } finally {
    await store.close();
  }
}

export async function accountsCommand(args: string[], out: (s: string) => void, err: (s: string) => void = out): Promise<number> {
  const [sub, ...rest] = args;
  if (!sub || sub === '--help' || sub === '-h') return (out(ACCOUNTS_USAGE), sub ? 0 : 2);
  const schema = StoreConfigSchema.extend({ active: bool, verified: bool, subscribed: bool, overdue: bool, create: z.boolean() });
  const { values, positionals, help } = parseOptions(`lexembed accounts ${sub}`, rest, ACCOUNT_OPTIONS, schema);
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
      const account = await setAccount(store, id, patch);
      err(`${storeDescription(values)}:`);
      out(`account ${account.id}: active ${account.active}, verified ${account.verified}, subscribed ${account.subscribed}, overdue ${account.overdue}`);
      return 0;
    }
    if (sub === 'list') {
      err(`${storeDescription(values)}:`);
      out(['id', 'active', 'verified', 'subscribed', 'overdue'].join('\t'));
      for (const a of await store.listAccounts()) out([a.id, a.active, a.verified, a.subscribed, a.overdue].join('\t'));
      return 0;
    }
    throw new UsageError(`lexembed accounts: unknown subcommand "${sub}"; use set or list`);
  } finally {
    await store.close();
  }
}
