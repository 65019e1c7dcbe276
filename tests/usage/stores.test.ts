// One conformance suite for every UsageStore (memory, file, Redis), then what the file store
// alone promises: its log survives a restart, a crash's cut line is dropped, months come back.
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openServerStores } from '../../src/cli/store-options.ts';
import { counters } from '../../src/usage/meter.ts';
import type { UsageStore } from '../../src/usage/store.ts';
import { createFileUsageStore, USAGE_LOG } from '../../src/usage/stores/file.ts';
import { createMemoryUsageStore } from '../../src/usage/stores/memory.ts';
import { createRedisUsageStore } from '../../src/usage/stores/redis.ts';
import { startRedis } from '../support/redis.ts';

const FAR = Date.now() + 3600_000;
const row = (over: Partial<{ account: string; key_id: string; operation: string; day: string }> = {}) => ({
  account: 'acme',
  key_id: 'key_a',
  operation: 'embeddings',
  day: '2026-11-24',
  ...over,
});

/** One counter's take, as {taken, used}. */
async function takeOne(store: UsageStore, counter: string, amount: number, limit: number | null, expiresAt: number) {
  const r = await store.take([{ counter, amount, limit, expiresAt }]);
  return { taken: r.taken, used: r.used[0] };
}

function describeUsageStore(name: string, open: () => Promise<UsageStore>) {
  describe(`UsageStore conformance: ${name}`, () => {
    it('takes up to a limit and no further, exactly, under 200 concurrent takes', async () => {
      const store = await open();
      try {
        const results = await Promise.all(Array.from({ length: 200 }, () => takeOne(store, 'rpm:key_c:1', 1, 10, FAR)));
        expect(results.filter((r) => r.taken)).toHaveLength(10);
        expect(results.filter((r) => !r.taken).every((r) => r.used === 10)).toBe(true);
        // Amounts: 7 + 7 passes a limit of 10, so the second is refused; no limit always takes.
        expect(await takeOne(store, 'tpm:key_c:1', 7, 10, FAR)).toEqual({ taken: true, used: 7 });
        expect(await takeOne(store, 'tpm:key_c:1', 7, 10, FAR)).toEqual({ taken: false, used: 7 });
        expect(await takeOne(store, 'tpm:key_c:1', 3, 10, FAR)).toEqual({ taken: true, used: 10 });
        expect(await takeOne(store, 'month:acme:2026-11', 1e9, null, FAR)).toEqual({ taken: true, used: 1e9 });
      } finally {
        await store.close();
      }
    });

    it('takes several counters all or nothing, naming the first that would pass its limit', async () => {
      const store = await open();
      try {
        const items = (tokens: number) => [
          { counter: 'tpm:key_m:1', amount: tokens, limit: 10, expiresAt: FAR },
          { counter: 'month:acme:2026-11', amount: tokens, limit: 15, expiresAt: FAR },
        ];
        expect(await store.take(items(8))).toEqual({ taken: true, used: [8, 8] });
        expect(await store.take(items(3))).toEqual({ taken: false, refused: 0, used: [8, 8] });
        await store.giveBack('tpm:key_m:1', 8);
        expect(await store.take(items(8))).toEqual({ taken: false, refused: 1, used: [0, 8] });
        expect(await store.take(items(7))).toEqual({ taken: true, used: [7, 15] });
      } finally {
        await store.close();
      }
    });

    it('gives back what was taken; a counter expires at its time', async () => {
      const store = await open();
      try {
        await takeOne(store, 'tpm:key_g:1', 9, 10, FAR);
        await store.giveBack('tpm:key_g:1', 9);
        expect(await takeOne(store, 'tpm:key_g:1', 10, 10, FAR)).toEqual({ taken: true, used: 10 });
        await takeOne(store, 'rpm:key_g:2', 1, 1, Date.now() + 150);
        expect((await takeOne(store, 'rpm:key_g:2', 1, 1, Date.now() + 150)).taken).toBe(false);
        await new Promise((r) => setTimeout(r, 400));
        expect((await takeOne(store, 'rpm:key_g:2', 1, 1, Date.now() + 150)).taken).toBe(true);
      } finally {
        await store.close();
      }
    });

    it('answers takes and records made in the same turn each in order (what the Redis store sends as one call)', async () => {
      const store = await open();
      try {
        const tpm = (amount: number) => store.take([{ counter: 'tpm:key_t:1', amount, limit: 10, expiresAt: FAR }, { counter: 'month:acme:2026-10', amount, limit: null, expiresAt: FAR }]);
        const results = await Promise.all([
          tpm(4),
          store.record(row({ key_id: 'key_t' }), 4),
          tpm(5),
          store.record(row({ key_id: 'key_t' }), 5),
          tpm(2), // 4 + 5 + 2 passes 10: refused, and the month is not charged for it
          takeOne(store, 'rpm:key_t:1', 1, 1, FAR),
          tpm(1),
          takeOne(store, 'rpm:key_t:1', 1, 1, FAR),
          store.record(row({ key_id: 'key_t', operation: 'tokenize' }), 0),
        ]);
        expect(results).toEqual([
          { taken: true, used: [4, 4] },
          undefined,
          { taken: true, used: [9, 9] },
          undefined,
          { taken: false, refused: 0, used: [9, 9] },
          { taken: true, used: 1 },
          { taken: true, used: [10, 10] },
          { taken: false, used: 1 },
          undefined,
        ]);
        const rows = await store.rows({ account: 'acme' });
        expect(rows.filter((r) => r.key_id === 'key_t')).toEqual([
          { ...row({ key_id: 'key_t' }), requests: 2, input_tokens: 9 },
          { ...row({ key_id: 'key_t', operation: 'tokenize' }), requests: 1, input_tokens: 0 },
        ]);
        // A counter given back to nothing and taken again still expires at its time.
        const soon = Date.now() + 150;
        await takeOne(store, 'rpm:key_t:2', 1, 1, soon);
        await store.giveBack('rpm:key_t:2', 1);
        expect(await takeOne(store, 'rpm:key_t:2', 1, 1, soon)).toEqual({ taken: true, used: 1 });
        await new Promise((r) => setTimeout(r, 400));
        expect(await takeOne(store, 'rpm:key_t:2', 1, 1, Date.now() + 60_000)).toEqual({ taken: true, used: 1 });
      } finally {
        await store.close();
      }
    });

    it('adds requests and tokens per account, key, operation and day; filters by account and days, inclusive', async () => {
      const store = await open();
      try {
        await Promise.all([
          ...Array.from({ length: 50 }, () => store.record(row(), 12)),
          store.record(row({ operation: 'rerankings' }), 40),
          store.record(row({ account: 'beta', key_id: 'key_b' }), 5),
          store.record(row({ day: '2026-11-23' }), 3),
          store.record(row({ day: '2026-12-01' }), 4),
        ]);
        await store.record(row({ operation: 'tokenize' }), 0);
        const all = await store.rows();
        expect(all).toContainEqual({ ...row(), requests: 50, input_tokens: 600 });
        expect(all).toContainEqual({ ...row({ operation: 'tokenize' }), requests: 1, input_tokens: 0 });
        expect(all).toHaveLength(6);
        expect(all.map((r) => r.day)).toEqual([...all.map((r) => r.day)].sort());
        expect((await store.rows({ account: 'beta' })).map((r) => r.key_id)).toEqual(['key_b']);
        expect((await store.rows({ since: '2026-11-24', until: '2026-11-24' })).every((r) => r.day === '2026-11-24')).toBe(true);
        expect((await store.rows({ since: '2026-11-24' })).some((r) => r.day === '2026-12-01')).toBe(true);
        expect(await store.rows({ until: '2026-11-23' })).toEqual([{ ...row({ day: '2026-11-23' }), requests: 1, input_tokens: 3 }]);
      } finally {
        await store.close();
      }
    });
  });
}

describeUsageStore('memory', async () => createMemoryUsageStore());

const root = mkdtempSync(join(tmpdir(), 'lexembed-usage-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
describeUsageStore('file', async () => createFileUsageStore(join(root, String(dirs++)), { writer: true }));

describe('redis', () => {
  let redis: Awaited<ReturnType<typeof startRedis>>;
  let prefixes = 0;
  beforeAll(async () => void (redis = await startRedis()));
  afterAll(async () => await redis?.stop());
  describeUsageStore('redis', async () => createRedisUsageStore(redis.url, `lexembed-usage-${prefixes++}:`));

  it("a server's key and usage stores share one connection, which the last of them to close closes", async () => {
    const { keys, usage } = openServerStores({ store: 'redis', 'redis-url': redis.url, 'data-dir': root }, { usage: true });
    const admin = new Redis(redis.url);
    const clients = async () => (await admin.client('LIST') as string).split('\n').filter((line: string) => line.includes('cmd=') && !line.includes('cmd=client')).length;
    try {
      const [found, taken] = await Promise.all([keys.findKeyByHash('none'), usage!.take([{ counter: 'rpm:key_w:1', amount: 1, limit: 5, expiresAt: FAR }])]);
      expect([found, taken]).toEqual([null, { taken: true, used: [1] }]);
      expect(await clients()).toBe(1);
      await usage!.close();
      expect(await keys.findKeyByHash('none')).toBeNull(); // still open for the key store
      await keys.close();
      await expect.poll(clients).toBe(0);
    } finally {
      admin.disconnect();
    }
  });

  it('two connections (two replicas) share counters and rows', async () => {
    const [a, b] = [createRedisUsageStore(redis.url, 'shared:'), createRedisUsageStore(redis.url, 'shared:')];
    try {
      const results = await Promise.all(Array.from({ length: 40 }, (_, i) => takeOne(i % 2 ? a : b, 'rpm:key_s:1', 1, 10, FAR)));
      expect(results.filter((r) => r.taken)).toHaveLength(10);
      await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).record(row(), 2)));
      expect(await b.rows()).toEqual([{ ...row(), requests: 30, input_tokens: 60 }]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe('the file store', () => {
  it('writes its rows to usage.log, reads them back after a restart, and seeds each month counter from them', async () => {
    const dir = join(root, 'restart');
    const first = createFileUsageStore(dir, { writer: true });
    await first.record(row(), 30);
    await first.record(row({ day: '2026-10-31' }), 7);
    await first.close();
    const again = createFileUsageStore(dir, { writer: true });
    try {
      expect(await again.rows()).toEqual([
        { ...row({ day: '2026-10-31' }), requests: 1, input_tokens: 7 },
        { ...row(), requests: 1, input_tokens: 30 },
      ]);
      // November's 30 tokens are back: a quota of 40 has 10 left.
      expect(await takeOne(again, counters.month('acme', '2026-11'), 11, 40, FAR)).toEqual({ taken: false, used: 30 });
      expect(await takeOne(again, counters.month('acme', '2026-11'), 10, 40, FAR)).toEqual({ taken: true, used: 40 });
    } finally {
      await again.close();
    }
  });

  it('drops a line a crash cut short, and appends after the last whole one', async () => {
    const dir = join(root, 'crash');
    const first = createFileUsageStore(dir, { writer: true });
    await first.record(row(), 30);
    await first.close();
    appendFileSync(join(dir, USAGE_LOG), '{"day":"2026-11-24","account":"acme","key_i');
    const reader = createFileUsageStore(dir, { writer: false });
    expect(await reader.rows()).toEqual([{ ...row(), requests: 1, input_tokens: 30 }]);
    await expect(reader.record(row(), 1)).rejects.toThrow(/read only/);
    const writer = createFileUsageStore(dir, { writer: true });
    await writer.record(row(), 5);
    await writer.close();
    const lines = readFileSync(join(dir, USAGE_LOG), 'utf8').trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines.map((l) => JSON.parse(l).input_tokens)).toEqual([30, 5]);
  });

  it('writes what it counts within a second, without being closed', async () => {
    const dir = join(root, 'flush');
    const store = createFileUsageStore(dir, { writer: true });
    try {
      await store.record(row(), 9);
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline && !readFileSync(join(dir, USAGE_LOG), 'utf8').includes('"input_tokens":9')) await new Promise((r) => setTimeout(r, 50));
      expect(readFileSync(join(dir, USAGE_LOG), 'utf8')).toContain('"input_tokens":9');
    } finally {
      await store.close();
    }
  });

  it('refuses a damaged line in the middle, naming the file and line', () => {
    const dir = join(root, 'damaged');
    const store = createFileUsageStore(dir, { writer: true });
    void store.close();
    writeFileSync(join(dir, USAGE_LOG), `${JSON.stringify({ ...row(), requests: 1, input_tokens: 1 })}\nnot json\n`);
    expect(() => createFileUsageStore(dir, { writer: false })).toThrow(/usage\.log has a damaged line 2/);
  });
});
