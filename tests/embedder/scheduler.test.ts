// The batching scheduler with a deterministic fake model whose calls we release by hand.
import { describe, expect, it } from 'vitest';
import { BatchScheduler, QueueFullError, selectBatch, type QueuedSequence } from '../../src/embedder/scheduler.ts';
import { createEmbedder } from '../../src/embedder/embedder.ts';
import { createApp } from '../../src/http/app.ts';
import type { EmbeddingBackend } from '../../src/embedder/types.ts';
import { createFakeBackend, fakeSettings } from '../support/fake-backend.ts';

/** Vector of a sequence: [length, sum of ids] — so every result can be checked against its input. */
const expected = (ids: readonly number[]) => [ids.length, ids.reduce((a, b) => a + b, 0)];

function gatedBackend() {
  const calls: number[][][] = [];
  const gates: (() => void)[] = [];
  let auto = false;
  const backend: EmbeddingBackend = {
    name: 'gated',
    encode: () => [],
    run: async (batch) => {
      calls.push(batch.map((s) => [...s]));
      if (!auto) await new Promise<void>((r) => gates.push(r));
      return batch.map((s) => Float32Array.from(expected(s)));
    },
    dispose: async () => {},
  };
  const tick = () => new Promise((r) => setTimeout(r, 0));
  return {
    backend,
    calls,
    /** Lets the oldest blocked model call finish. */
    release: async () => (gates.shift()?.(), await tick()),
    runFreely: async () => ((auto = true), gates.splice(0).forEach((g) => g()), await tick()),
    tick,
  };
}

const seq = (len: number, base = 1) => Array.from({ length: len }, (_, i) => base + i);
const vecs = (r: Float32Array[]) => r.map((v) => Array.from(v));

describe('BatchScheduler', () => {
  it('runs a lone request at once, with no fixed wait', async () => {
    const g = gatedBackend();
    const s = new BatchScheduler(g.backend, { maxBatchSize: 8, maxBatchTokens: 1000, maxQueueTokens: 10_000 });
    const p = s.submit([seq(3)]);
    await Promise.resolve();
    expect(g.calls).toHaveLength(1);
    await g.release();
    expect(vecs(await p)).toEqual([expected(seq(3))]);
  });

  it('returns results in index order although batches are sorted by length', async () => {
    const g = gatedBackend();
    await g.runFreely();
    const s = new BatchScheduler(g.backend, { maxBatchSize: 2, maxBatchTokens: 1000, maxQueueTokens: 10_000 });
    const input = [seq(9), seq(1), seq(5), seq(2), seq(7)];
    expect(vecs(await s.submit(input))).toEqual(input.map(expected));
  });

  it("splits one request's 128 texts across several batches", async () => {
    const g = gatedBackend();
    await g.runFreely();
    const s = new BatchScheduler(g.backend, { maxBatchSize: 32, maxBatchTokens: 100_000, maxQueueTokens: 100_000 });
    const input = Array.from({ length: 128 }, (_, i) => seq(1 + (i % 13), i));
    expect(vecs(await s.submit(input))).toEqual(input.map(expected));
    expect(g.calls.length).toBeGreaterThanOrEqual(4);
    expect(Math.max(...g.calls.map((c) => c.length))).toBeLessThanOrEqual(32);
  });

  it('batches texts of concurrent requests together while the model is busy', async () => {
    const g = gatedBackend();
    const s = new BatchScheduler(g.backend, { maxBatchSize: 16, maxBatchTokens: 1000, maxQueueTokens: 10_000 });
    const first = s.submit([seq(4)]);
    await Promise.resolve();
    const a = s.submit([seq(4, 10), seq(4, 20)]);
    const b = s.submit([seq(4, 30)]);
    await g.release();
    expect(g.calls).toHaveLength(2);
    expect(g.calls[1]).toHaveLength(3); // a's two texts and b's one, in one model call
    await g.release();
    expect(vecs(await a)).toEqual([expected(seq(4, 10)), expected(seq(4, 20))]);
    expect(vecs(await b)).toEqual([expected(seq(4, 30))]);
    await first;
  });

  it('groups by length to limit padding, within the padded-token budget', async () => {
    const g = gatedBackend();
    const s = new BatchScheduler(g.backend, { maxBatchSize: 8, maxBatchTokens: 64, maxQueueTokens: 100_000 });
    const blocker = s.submit([seq(2)]);
    await Promise.resolve();
    const lengths = [2, 30, 3, 31, 2, 29, 3, 30, 2, 3];
    const pending = lengths.map((n, i) => s.submit([seq(n, i * 100)]));
    await g.runFreely();
    await Promise.all([blocker, ...pending]);
    for (const call of g.calls) {
      const widths = call.map((c) => c.length);
      expect(Math.max(...widths) * call.length).toBeLessThanOrEqual(64);
      expect(Math.max(...widths) - Math.min(...widths)).toBeLessThanOrEqual(2); // no short text padded to 30
    }
    const st = s.stats();
    expect(st.realTokens / st.paddedTokens).toBeGreaterThan(0.9);
  });

  it('keeps each batch at the minimum padding efficiency (a long text is not padded with short ones)', async () => {
    const g = gatedBackend();
    const s = new BatchScheduler(g.backend, { maxBatchSize: 64, maxBatchTokens: 100_000, maxQueueTokens: 100_000, minPaddingEfficiency: 0.9 });
    const blocker = s.submit([seq(2)]);
    await Promise.resolve();
    const lengths = [500, 12, 14, 480, 13, 120, 15, 490, 118, 12];
    const pending = lengths.map((n, i) => s.submit([seq(n, i * 1000)]));
    await g.runFreely();
    await Promise.all([blocker, ...pending]);
    for (const call of g.calls.slice(1)) {
      const width = Math.max(...call.map((c) => c.length));
      const real = call.reduce((n, c) => n + c.length, 0);
      expect(real / (width * call.length)).toBeGreaterThanOrEqual(0.9);
    }
    expect(g.calls.length).toBeLessThan(lengths.length + 1); // still batched: similar lengths went together
  });

  it('is fair: the oldest waiting text is in the next batch, so long texts do not starve', async () => {
    const g = gatedBackend();
    const s = new BatchScheduler(g.backend, { maxBatchSize: 4, maxBatchTokens: 200, maxQueueTokens: 100_000 });
    const blocker = s.submit([seq(2)]);
    await Promise.resolve();
    const long = s.submit([seq(150)]);
    const shorts = Array.from({ length: 12 }, (_, i) => s.submit([seq(2, i * 10)]));
    await g.release(); // blocker done; next call must take the long text (the oldest)
    expect(g.calls[1]!.map((c) => c.length)).toContain(150);
    await g.runFreely();
    await Promise.all([blocker, long, ...shorts]);
  });

  it('refuses past the queue limit (in tokens) and recovers once drained', async () => {
    const g = gatedBackend();
    const s = new BatchScheduler(g.backend, { maxBatchSize: 4, maxBatchTokens: 100, maxQueueTokens: 20 });
    const running = s.submit([seq(5)]);
    await Promise.resolve();
    const queued = s.submit([seq(10), seq(8)]);
    await expect(s.submit([seq(5)])).rejects.toBeInstanceOf(QueueFullError);
    expect(s.stats().queuedTokens).toBe(18);
    await g.runFreely();
    await Promise.all([running, queued]);
    expect(vecs(await s.submit([seq(5)]))).toEqual([expected(seq(5))]);
  });

  it('admits on an estimate before tokenising: a reservation holds room, a full queue refuses at once, release frees it', async () => {
    const g = gatedBackend();
    const s = new BatchScheduler(g.backend, { maxBatchSize: 4, maxBatchTokens: 100, maxQueueTokens: 20 });
    const first = s.reserve(30); // an empty queue takes one oversized request
    expect(() => s.reserve(1)).toThrow(/the queue holds 0 tokens \(and 30 more being tokenised\); about 1 more would pass its limit of 20/);
    // The reserved request is queued whatever its estimate missed; its room is then its real tokens.
    const running = s.submit([seq(5)], undefined, first);
    await Promise.resolve();
    const second = s.reserve(18); // the first's tokens are in the model now: the queue is empty
    await expect(s.submit([seq(4)])).rejects.toThrow(/\(and 18 more being tokenised\); 4 more would pass its limit of 20/);
    second.release();
    second.release(); // idempotent
    const queued = s.submit([seq(4)]);
    expect(s.stats().queuedTokens).toBe(4);
    await g.runFreely();
    expect(vecs(await running)).toEqual([expected(seq(5))]);
    expect(vecs(await queued)).toEqual([expected(seq(4))]);
    expect(() => s.reserve(20).release()).not.toThrow();
  });

  it('takes the texts of an aborted request off the queue; others are unaffected', async () => {
    const g = gatedBackend();
    const s = new BatchScheduler(g.backend, { maxBatchSize: 16, maxBatchTokens: 1000, maxQueueTokens: 10_000 });
    const running = s.submit([seq(3)]);
    await Promise.resolve();
    const controller = new AbortController();
    const gone = s.submit([seq(4, 500), seq(4, 600)], controller.signal);
    const kept = s.submit([seq(4, 700)]);
    controller.abort(new Error('client disconnected'));
    await expect(gone).rejects.toThrow('client disconnected');
    expect(s.stats().queuedSequences).toBe(1);
    await g.runFreely();
    expect(vecs(await kept)).toEqual([expected(seq(4, 700))]);
    expect(g.calls.flat().some((ids) => ids[0] === 500 || ids[0] === 600)).toBe(false);
    await running;
  });

  it('loses nothing under a random load of concurrent requests', async () => {
    const g = gatedBackend();
    await g.runFreely();
    const s = new BatchScheduler(g.backend, { maxBatchSize: 16, maxBatchTokens: 512, maxQueueTokens: 1_000_000 });
    let x = 7;
    const rand = () => ((x = (x * 1103515245 + 12345) % 2 ** 31), x / 2 ** 31);
    const requests = Array.from({ length: 200 }, (_, r) => Array.from({ length: 1 + Math.floor(rand() * 20) }, (_, i) => seq(1 + Math.floor(rand() * 60), r * 1000 + i)));
    const results = await Promise.all(requests.map((texts) => s.submit(texts)));
    results.forEach((r, i) => expect(vecs(r)).toEqual(requests[i]!.map(expected)));
    const total = requests.reduce((n, t) => n + t.length, 0);
    expect(s.stats().sequences).toBe(total);
  });

  it('fails only the requests in a failed model call', async () => {
    let calls = 0;
    const backend: EmbeddingBackend = {
      name: 'flaky',
      encode: () => [],
      run: async (batch) => {
        if (calls++ === 0) throw new Error('model crashed');
        return batch.map((ids) => Float32Array.from(expected(ids)));
      },
      dispose: async () => {},
    };
    const s = new BatchScheduler(backend, { maxBatchSize: 1, maxBatchTokens: 1000, maxQueueTokens: 10_000 });
    const first = s.submit([seq(2)]);
    const second = s.submit([seq(3)]);
    await expect(first).rejects.toThrow('model crashed');
    expect(vecs(await second)).toEqual([expected(seq(3))]);
  });
});

describe('BatchScheduler with a backend that holds the next batch (maxBatchesInFlight)', () => {
  it('sends the next batch while one runs, never more than the backend takes, and each request gets its own vectors', async () => {
    const g = gatedBackend();
    const backend = { ...g.backend, maxBatchesInFlight: 2 };
    const s = new BatchScheduler(backend, { maxBatchSize: 2, maxBatchTokens: 1000, maxQueueTokens: 10_000 });
    const requests = [[seq(2, 10), seq(2, 20)], [seq(3, 30), seq(3, 40)], [seq(4, 50), seq(4, 60)]];
    const pending = requests.map((texts) => s.submit(texts));
    await g.tick();
    expect(g.calls).toHaveLength(2); // the second batch went before the first came back; the third waits
    await g.release();
    expect(g.calls).toHaveLength(3); // one came back: the next goes at once
    await g.release();
    await g.release();
    const results = await Promise.all(pending);
    results.forEach((r, i) => expect(vecs(r)).toEqual(requests[i]!.map(expected)));
  });

  it('loses nothing under a random load with two batches in flight, and fails only a failed batch', async () => {
    let calls = 0;
    const backend: EmbeddingBackend = {
      name: 'two in flight',
      maxBatchesInFlight: 2,
      encode: () => [],
      run: async (batch) => {
        const n = calls++;
        await new Promise((r) => setTimeout(r, n % 3)); // replies come back out of order
        if (n === 5) throw new Error('model crashed');
        return batch.map((ids) => Float32Array.from(expected(ids)));
      },
      dispose: async () => {},
    };
    const s = new BatchScheduler(backend, { maxBatchSize: 1, maxBatchTokens: 1000, maxQueueTokens: 1_000_000 });
    const requests = Array.from({ length: 40 }, (_, r) => [seq(1 + (r % 7), r * 100)]);
    const settled = await Promise.allSettled(requests.map((texts) => s.submit(texts)));
    expect(settled.filter((r) => r.status === 'rejected')).toHaveLength(1);
    settled.forEach((r, i) => r.status === 'fulfilled' && expect(vecs(r.value)).toEqual(requests[i]!.map(expected)));
  });
});

describe('selectBatch (pure)', () => {
  const waiting = (lengths: number[]): QueuedSequence<string>[] => lengths.map((n, order) => ({ request: `r${order}`, index: 0, ids: seq(n), order }));
  it('takes the oldest and its nearest neighbours in length, within the padded budget, and changes nothing', () => {
    const queue = waiting([10, 3, 11, 50, 9, 12]);
    const before = JSON.stringify(queue);
    const batch = selectBatch(queue, { maxBatchSize: 8, maxBatchTokens: 48, maxQueueTokens: 1000 });
    expect(batch.map((q) => q.order)).toEqual([4, 0, 2, 5]); // 9, 10, 11, 12: 4 × 12 = 48 padded tokens
    expect(JSON.stringify(queue)).toBe(before);
    expect(selectBatch(queue, { maxBatchSize: 2, maxBatchTokens: 1000, maxQueueTokens: 1000 })).toHaveLength(2);
    expect(selectBatch([], { maxBatchSize: 2, maxBatchTokens: 10, maxQueueTokens: 10 })).toEqual([]);
  });
});

describe('backpressure over HTTP', () => {
  it('answers 503 with Retry-After as a problem when the queue is full', async () => {
    const g = gatedBackend();
    const fake = createFakeBackend();
    const backend = { ...g.backend, encode: fake.encode };
    const embedder = createEmbedder(fakeSettings(), backend, { maxBatchSize: 4, maxBatchTokens: 100, maxQueueTokens: 8 });
    const app = createApp({ embedder });
    const req = (texts: string[]) => app.request('/v1/embeddings', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'legal-2-embedder', texts }) });
    const running = req(['a b c']);
    await g.tick();
    const queued = req(['d e f g h i']); // 8 tokens: fills the queue
    await g.tick();
    const refused = await req(['x']);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect((await refused.json()).title).toBe('Service unavailable error');
    await g.runFreely();
    expect((await running).status).toBe(200);
    expect((await queued).status).toBe(200);
  });
});
