// Key management over a KeyStore, and the authenticator the HTTP app plugs in.
import { problem } from '../contract/problems.ts';
import type { Authenticate } from './records.ts';
import { decideAccess, presentedKey } from './decide.ts';
import { generateApiKey, generateId, hashApiKey } from './key-format.ts';
import { newAccount, type Account, type AccountPatch, type KeyRecord, type Resource } from './records.ts';
import type { KeyStore } from './store.ts';

export interface CreateKeyOptions {
  readonly account: string;
  readonly expiresInMs?: number | null;
  readonly resources?: readonly Resource[];
  /** Requests and input tokens per minute (null or absent: no limit). */
  readonly rpm?: number | null;
  readonly tpm?: number | null;
  readonly now?: Date;
}

/** Creates a key (and its account, with defaults, if new). The key is returned once, never stored. */
export async function createKey(store: KeyStore, options: CreateKeyOptions): Promise<{ key: string; record: KeyRecord }> {
  const now = options.now ?? new Date();
  const key = generateApiKey();
  const record: KeyRecord = {
    id: generateId('key'),
    account: options.account,
    hash: await hashApiKey(key),
    created: now.toISOString(),
    expires: options.expiresInMs ? new Date(now.getTime() + options.expiresInMs).toISOString() : null,
    revoked: null,
    resources: [...(options.resources ?? ['embeddings', 'rerankings'])],
    ...(options.rpm ? { rpm: options.rpm } : {}),
    ...(options.tpm ? { tpm: options.tpm } : {}),
  };
  if (!(await store.getAccount(options.account))) await store.putAccount(newAccount(options.account));
  await store.insertKey(record);
  return { key, record };
}

/** Creates or updates an account; unspecified fields keep their value (or the defaults). */
export async function setAccount(store: KeyStore, id: string, patch: AccountPatch): Promise<Account> {
  const account = { ...((await store.getAccount(id)) ?? newAccount(id)), ...patch };
  await store.putAccount(account);
  return account;
}

export interface StoreAuthenticatorOptions {
  readonly clock?: () => Date;
  /** Called when the store fails a lookup (the request gets a 503); the server logs it. */
  readonly onStoreError?: (error: unknown) => void;
}

/** Seconds a client is asked to wait when the key store cannot be reached. */
export const STORE_RETRY_AFTER_SECONDS = 2;

/**
 * The app's authentication seam backed by a store: parse and checksum first, then one lookup.
 * A store that fails (Redis stopped, a file unreadable) gives a 503 with Retry-After: the key
 * could not be checked, which is neither the client's fault nor a bug.
 */
export function createStoreAuthenticator(store: KeyStore, options: StoreAuthenticatorOptions = {}): Authenticate {
  const clock = options.clock ?? (() => new Date());
  const hashes = createHashCache();
  return async ({ authorization, resource }) => {
    const presented = presentedKey(authorization);
    // decideAccess answers an unusable header itself (with its WWW-Authenticate challenge).
    if (!presented.ok) return decideAccess(authorization, null, null, resource, clock());
    const hash = await hashes(presented.key);
    let record: KeyRecord | null;
    let account: Account | null;
    try {
      record = await store.findKeyByHash(hash);
      account = record ? await store.getAccount(record.account) : null;
    } catch (error) {
      options.onStoreError?.(error);
      return problem(
        'unavailable',
        `the API key store (${store.name}) cannot be reached, so the key could not be checked; retry after the Retry-After delay (the server log says why)`,
        { 'retry-after': String(STORE_RETRY_AFTER_SECONDS) },
      );
    }
    const refused = decideAccess(authorization, record, account, resource, clock());
    // decideAccess allows only a found key of an existing account.
    return refused ?? { key: record!, account: account! };
  };
}

/** Presented keys whose hashes are remembered, at most (a few hundred kB). */
export const HASH_CACHE_SIZE = 4096;

/**
 * SHA-256 of presented keys, remembered: Web Crypto's digest is asynchronous (argument checks, a
 * trip through the thread pool, promises), ~27 CPU-µs a call on the 2-core dev machine, about 2 %
 * of a short keyed request. The store is still asked for the hash every time, so a revoked or
 * expired key is refused as before; the oldest entry goes first once the cache is full.
 */
export function createHashCache(size = HASH_CACHE_SIZE, hashOf: (key: string) => Promise<string> = hashApiKey): (key: string) => Promise<string> {
  const hashes = new Map<string, string>();
  return async (key) => {
    const known = hashes.get(key);
    if (known !== undefined) return known;
    const hash = await hashOf(key);
    if (hashes.size >= size) hashes.delete(hashes.keys().next().value!);
    hashes.set(key, hash);
    return hash;
  };
}

/** Parses durations like 30d, 12h, 15m, 45s, 2w into milliseconds. */
export function parseDuration(text: string): number | null {
  const m = /^(\d+)\s*(s|m|h|d|w)$/.exec(text.trim());
  if (!m) return null;
  const unit = { s: 1e3, m: 6e4, h: 3.6e6, d: 8.64e7, w: 6.048e8 }[m[2] as 's' | 'm' | 'h' | 'd' | 'w'];
  return Number(m[1]) * unit;
}
