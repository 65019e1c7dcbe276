// One conformance suite for every KeyStore implementation.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { KeyStore } from '../../src/auth/store.ts';
import { createKey, createStoreAuthenticator, setAccount } from '../../src/auth/service.ts';
import { newAccount } from '../../src/auth/records.ts';

export interface KeyStoreHarness {
  /** A new, empty store for one test, and where it persists, a way to open the same data again. */
  fresh(): Promise<{ store: KeyStore; reopen?: () => Promise<KeyStore> }>;
  cleanup?(): Promise<void>;
}

export interface KeyStoreCapabilities {
  /** Keys survive closing the store and opening it again (file, Redis; not memory). */
  readonly persists: boolean;
}

/** Every test gets a fresh, empty store; what a store cannot do is declared, and skipped visibly. */
export function describeKeyStore(name: string, setup: () => Promise<KeyStoreHarness>, capabilities: KeyStoreCapabilities) {
  describe(`KeyStore conformance: ${name}`, () => {
    let harness: KeyStoreHarness;
    let store: KeyStore;
    let reopen: (() => Promise<KeyStore>) | undefined;
    beforeAll(async () => void (harness = await setup()));
    beforeEach(async () => void ({ store, reopen } = await harness.fresh()));
    afterEach(async () => void (await store?.close()));
    afterAll(async () => void (await harness?.cleanup?.()));

    it('stores a key by hash only and finds it', async () => {
      const { key, record } = await createKey(store, { account: 'acme' });
      const found = await store.findKeyByHash(record.hash);
      expect(found).toEqual(record);
      expect(JSON.stringify(await store.listKeys())).not.toContain(key);
      expect(await store.findKeyByHash('0'.repeat(64))).toBeNull();
    });

    it('holds under concurrency: keys and account changes made at once are all kept', async () => {
      const made = await Promise.all(Array.from({ length: 24 }, (_, i) => createKey(store, { account: `busy${i % 4}` })));
      await Promise.all(['busy0', 'busy1', 'busy2', 'busy3'].map((id, i) => setAccount(store, id, { overdue: i % 2 === 0 })));
      const listed = new Set((await store.listKeys()).map((k) => k.id));
      for (const { record } of made) {
        expect(listed.has(record.id), record.id).toBe(true);
        expect(await store.findKeyByHash(record.hash)).toEqual(record);
      }
      expect((await Promise.all(['busy0', 'busy1', 'busy2', 'busy3'].map((id) => store.getAccount(id)))).map((a) => a?.overdue)).toEqual([true, false, true, false]);
    });

    it('creates the account with defaults on first key', async () => {
      await createKey(store, { account: 'fresh' });
      expect(await store.getAccount('fresh')).toEqual(newAccount('fresh'));
    });

    it('lists keys and accounts: exactly those made', async () => {
      expect(await store.listKeys()).toEqual([]);
      const { record } = await createKey(store, { account: 'lister' });
      expect((await store.listKeys()).map((k) => k.id)).toEqual([record.id]);
      expect((await store.listAccounts()).map((a) => a.id)).toEqual(['lister']);
    });

    it('revokes by id, keeping the first revocation time; unknown ids give null', async () => {
      const { record } = await createKey(store, { account: 'acme' });
      const revoked = await store.revokeKey(record.id, '2026-01-01T00:00:00.000Z');
      expect(revoked?.revoked).toBe('2026-01-01T00:00:00.000Z');
      expect((await store.revokeKey(record.id, '2027-01-01T00:00:00.000Z'))?.revoked).toBe('2026-01-01T00:00:00.000Z');
      expect((await store.findKeyByHash(record.hash))?.revoked).toBe('2026-01-01T00:00:00.000Z');
      expect(await store.revokeKey('key_missing', 'x')).toBeNull();
    });

    it('updates accounts, keeping unspecified fields', async () => {
      await setAccount(store, 'states', { overdue: true });
      await setAccount(store, 'states', { verified: false });
      expect(await store.getAccount('states')).toEqual({ ...newAccount('states'), overdue: true, verified: false });
    });

    it('authenticates through the store', async () => {
      const auth = createStoreAuthenticator(store);
      const { key, record } = await createKey(store, { account: 'auth-acct' });
      expect(await auth({ authorization: `Bearer ${key}`, resource: 'embeddings' })).toEqual({ key: record, account: newAccount('auth-acct') });
      await setAccount(store, 'auth-acct', { overdue: true });
      expect(await auth({ authorization: `Bearer ${key}`, resource: 'embeddings' })).toMatchObject({ code: 'accountOverdue' });
    });

    it('sets and removes a key\'s rate limits by id, keeping the rest of the record; unknown ids give null', async () => {
      const { record } = await createKey(store, { account: 'limited', rpm: 10 });
      expect(record.rpm).toBe(10);
      expect(await store.setKeyLimits(record.id, { tpm: 5000 })).toEqual({ ...record, rpm: 10, tpm: 5000 });
      expect(await store.setKeyLimits(record.id, { rpm: null })).toEqual({ ...record, rpm: undefined, tpm: 5000 });
      const found = await store.findKeyByHash(record.hash);
      expect(found).toMatchObject({ id: record.id, tpm: 5000, revoked: null });
      expect(found && 'rpm' in found).toBe(false);
      expect(await store.setKeyLimits('key_missing', { rpm: 1 })).toBeNull();
    });

    it.skipIf(!capabilities.persists)('keeps keys across a reopen', async () => {
      const { record } = await createKey(store, { account: 'durable' });
      const again = await reopen!();
      try {
        expect(await again.findKeyByHash(record.hash)).toEqual(record);
      } finally {
        await again.close();
      }
    });
  });
}
