// Runs the conformance suite against the memory, file and Redis stores.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { createMemoryKeyStore } from '../../src/auth/stores/memory.ts';
import { createRedisKeyStore } from '../../src/auth/stores/redis.ts';
import { createFileKeyStore } from '../../src/auth/stores/file.ts';
import { createKey } from '../../src/auth/service.ts';
import { startRedis } from '../support/redis.ts';
import { describeKeyStore } from './store-conformance.ts';

describeKeyStore('memory', async () => ({ fresh: async () => ({ store: createMemoryKeyStore() }) }), { persists: false });

describeKeyStore(
  'file',
  async () => {
    const root = mkdtempSync(join(tmpdir(), 'lexembed-keys-'));
    let n = 0;
    return {
      async fresh() {
        const dir = join(root, String(n++));
        return { store: createFileKeyStore(dir), reopen: async () => createFileKeyStore(dir) };
      },
      cleanup: async () => rmSync(root, { recursive: true, force: true }),
    };
  },
  { persists: true },
);

describeKeyStore(
  'redis',
  async () => {
    const redis = await startRedis();
    let n = 0;
    return {
      // A key prefix of its own per test: an empty store on the same server.
      async fresh() {
        const prefix = `lexembed-test-${n++}:`;
        return { store: createRedisKeyStore(redis.url, prefix), reopen: async () => createRedisKeyStore(redis.url, prefix) };
      },
      cleanup: redis.stop,
    };
  },
  { persists: true },
);

it('file store: concurrent writers from two store instances lose nothing', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lexembed-keys-'));
  try {
    const a = createFileKeyStore(dir);
    const b = createFileKeyStore(dir);
    await Promise.all(Array.from({ length: 20 }, (_, i) => createKey(i % 2 ? a : b, { account: `acct${i}` })));
    expect(await a.listKeys()).toHaveLength(20);
    expect(await b.listAccounts()).toHaveLength(20);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
