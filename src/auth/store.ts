// The key store interface every backend implements (memory, file, Redis); one conformance
// suite (tests/auth/store-conformance.ts) runs against each.
import type { Account, KeyRecord } from './records.ts';

export interface KeyStore {
  readonly name: string;
  insertKey(record: KeyRecord): Promise<void>;
  findKeyByHash(hash: string): Promise<KeyRecord | null>;
  listKeys(): Promise<KeyRecord[]>;
  /** Marks the key revoked at `at`; null when no key has that id. */
  revokeKey(id: string, at: string): Promise<KeyRecord | null>;
  getAccount(id: string): Promise<Account | null>;
  putAccount(account: Account): Promise<void>;
  listAccounts(): Promise<Account[]>;
  close(): Promise<void>;
}
