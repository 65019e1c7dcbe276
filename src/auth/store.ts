// The key store interface every backend implements (memory, file, Redis); one conformance
// suite (tests/auth/store-conformance.ts) runs against each.
import type { Account, KeyRecord } from './records.ts';

export interface KeyLimits {
  readonly rpm?: number | null;
  readonly tpm?: number | null;
}

/** A record with limits applied: null removes a limit, undefined keeps it. */
export function withLimits(record: KeyRecord, limits: KeyLimits): KeyRecord {
  const next: KeyRecord = { ...record };
  for (const name of ['rpm', 'tpm'] as const) {
    const value = limits[name];
    if (value === null) delete next[name];
    else if (value !== undefined) next[name] = value;
  }
  return next;
}

export interface KeyStore {
  readonly name: string;
  insertKey(record: KeyRecord): Promise<void>;
  findKeyByHash(hash: string): Promise<KeyRecord | null>;
  listKeys(): Promise<KeyRecord[]>;
  /** Marks the key revoked at `at`; null when no key has that id. */
  revokeKey(id: string, at: string): Promise<KeyRecord | null>;
  /** Sets the key's rate limits (a null limit removes it; an absent one is kept); null when no key has that id. */
  setKeyLimits(id: string, limits: KeyLimits): Promise<KeyRecord | null>;
  getAccount(id: string): Promise<Account | null>;
  putAccount(account: Account): Promise<void>;
  listAccounts(): Promise<Account[]>;
  close(): Promise<void>;
}
