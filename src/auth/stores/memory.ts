// An in-memory key store: tests, and edge deployments with injected records.
import type { Account, KeyRecord } from '../records.ts';
import { withLimits, type KeyStore } from '../store.ts';

export function createMemoryKeyStore(initial: { keys?: KeyRecord[]; accounts?: Account[] } = {}): KeyStore {
  const keys = new Map((initial.keys ?? []).map((k) => [k.hash, structuredClone(k)]));
  const accounts = new Map((initial.accounts ?? []).map((a) => [a.id, structuredClone(a)]));
  return {
    name: 'memory',
    async insertKey(record) {
      keys.set(record.hash, structuredClone(record));
    },
    async findKeyByHash(hash) {
      const k = keys.get(hash);
      return k ? structuredClone(k) : null;
    },
    async listKeys() {
      return [...keys.values()].map((k) => structuredClone(k));
    },
    async revokeKey(id, at) {
      const k = [...keys.values()].find((r) => r.id === id);
      if (!k) return null;
      k.revoked ??= at;
      return structuredClone(k);
    },
    async setKeyLimits(id, limits) {
      const k = [...keys.values()].find((r) => r.id === id);
      if (!k) return null;
      const next = withLimits(k, limits);
      keys.set(next.hash, next);
      return structuredClone(next);
    },
    async getAccount(id) {
      const a = accounts.get(id);
      return a ? structuredClone(a) : null;
    },
    async putAccount(account) {
      accounts.set(account.id, structuredClone(account));
    },
    async listAccounts() {
      return [...accounts.values()].map((a) => structuredClone(a));
    },
    async close() {},
  };
}
