// Metering, rate limits and quotas through the HTTP app (in process, the deterministic fake
// model, memory stores, a clock the tests move): what is counted, what is refused and how.
import { describe, expect, it } from 'vitest';
import { createKey, createStoreAuthenticator, setAccount } from '../../src/auth/service.ts';
import { Lexembed, RateLimitError } from '../../src/client/index.ts';
import { createMemoryKeyStore } from '../../src/auth/stores/memory.ts';
import { createEmbedder } from '../../src/embedder/embedder.ts';
import { createApp } from '../../src/http/app.ts';
import { createMeter } from '../../src/usage/meter.ts';
import type { UsageStore } from '../../src/usage/store.ts';
import { createMemoryUsageStore } from '../../src/usage/stores/memory.ts';
import { createFakeBackend, fakeSettings } from '../support/fake-backend.ts';

const T0 = Date.parse('2026-11-24T10:00:05Z');

async function setup(limits: { rpm?: number; tpm?: number; quota?: number } = {}, usageStore?: UsageStore) {
  let now = T0;
  const keys = createMemoryKeyStore();
  const usage = usageStore ?? createMemoryUsageStore({ now: () => now });
  const { key, record } = await createKey(keys, { account: 'acme', rpm: limits.rpm, tpm: limits.tpm });
  if (limits.quota) await setAccount(keys, 'acme', { monthly_tokens: limits.quota });
  const app = createApp({
    embedder: createEmbedder(fakeSettings({ reranking: { name: 'legal-2-reranker', weights: { intercept: 0, cosine: 1, lexical: 0 } } }), createFakeBackend()),
    authenticate: createStoreAuthenticator(keys),
    usage: createMeter(usage, { now: () => now }),
  });
  const post = (path: string, body: unknown, auth = key) =>
    app.request(path, { method: 'POST', headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const embed = (texts: string[], extra: Record<string, unknown> = {}) => post('/v1/embeddings', { model: 'legal-2-embedder', texts, ...extra });
  return { app, keys, usage, key, record, post, embed, setNow: (t: number) => void (now = t) };
}

describe('usage records', () => {
  it('count every 200 exactly as its usage.input_tokens, per operation; refusals and failures count nothing', async () => {
    const s = await setup();
    let reported = 0;
    for (const texts of [['lease of land'], ['the tenant shall pay', 'rent'], ['a b c d e f']]) {
      const res = await s.embed(texts);
      expect(res.status).toBe(200);
      reported += ((await res.json()) as { usage: { input_tokens: number } }).usage.input_tokens;
    }
    const openai = await s.post('/openai/v1/embeddings', { model: 'legal-2-embedder', input: 'deposit' });
    reported += ((await openai.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens;
    const rerank = await s.post('/v1/rerankings', { model: 'legal-2-reranker', query: 'rent', texts: ['pay rent', 'quiet enjoyment'] });
    expect(rerank.status).toBe(200);
    const rerankTokens = ((await rerank.json()) as { usage: { input_tokens: number } }).usage.input_tokens;
    expect((await s.post('/v1/tokenize', { model: 'legal-2-embedder', texts: ['rent'] })).status).toBe(200);
    // Not counted: a validation error, an over-long text, a wrong key.
    expect((await s.embed([''])).status).toBe(400);
    expect((await s.embed(['one two three four five six seven eight nine'], { overflow_strategy: null })).status).toBe(400);
    expect((await s.post('/v1/embeddings', { model: 'legal-2-embedder', texts: ['x'] }, 'lxk_v1_nope')).status).toBe(401);
    const rows = await s.usage.rows();
    const of = (operation: string) => rows.find((r) => r.operation === operation)!;
    expect(of('embeddings')).toMatchObject({ account: 'acme', key_id: s.record.id, day: '2026-11-24', requests: 4, input_tokens: reported });
    expect(of('rerankings')).toMatchObject({ requests: 1, input_tokens: rerankTokens });
    expect(of('tokenize')).toMatchObject({ requests: 1, input_tokens: 0 });
    expect(rows).toHaveLength(3);
  });
});

describe('rate limits', () => {
  it('--rpm: exactly that many requests a minute; the next is a 429 problem naming the limit, with Retry-After and RateLimit headers; the next minute frees it', async () => {
    const s = await setup({ rpm: 3 });
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await s.embed(['rent'])).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    const refused = await s.embed(['rent']);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect(refused.headers.get('retry-after')).toBe('55');
    expect(refused.headers.get('ratelimit-policy')).toBe('"rpm";q=3;w=60;qu="requests"');
    expect(refused.headers.get('ratelimit')).toBe('"rpm";r=0;t=55');
    expect(refused.headers.get('x-should-retry')).toBeNull();
    const body = (await refused.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ title: 'Rate limit exceeded error', status: 429, type: expect.stringMatching(/\/docs\/api-reference\/errors#429-too-many-requests$/) });
    expect(body.detail).toMatch(/may make 3 requests per minute .* frees in 55 s \(at 2026-11-24T10:01:00\.000Z\)/);
    s.setNow(T0 + 55_000);
    const freed = await s.embed(['rent']);
    expect(freed.status).toBe(200);
    expect(freed.headers.get('ratelimit')).toBe('"rpm";r=2;t=60');
    expect((await s.usage.rows())[0]).toMatchObject({ requests: 4 });
  });

  it('--tpm: a request that would pass the minute\'s tokens is refused before the model runs and gives nothing back twice; one larger than the limit says to split it, without Retry-After', async () => {
    const s = await setup({ tpm: 10 });
    expect((await s.embed(['a b c d'])).status).toBe(200); // 6 tokens
    const over = await s.embed(['a b c']); // 5 more: 11 > 10
    expect(over.status).toBe(429);
    expect(((await over.json()) as { detail: string }).detail).toMatch(/has 5 input tokens and the API key key_\w+ has 4 of its 10 input tokens per minute left; the limit frees in 55 s/);
    expect(over.headers.get('ratelimit')).toBe('"tpm";r=4;t=55');
    expect((await s.embed(['a b'])).status).toBe(200); // 4: exactly 10
    s.setNow(T0 + 60_000);
    const huge = await s.embed(['a b c d e f', 'a b c d e f']); // 16 > 10 whatever the minute
    expect(huge.status).toBe(429);
    expect(huge.headers.get('retry-after')).toBeNull();
    expect(huge.headers.get('x-should-retry')).toBe('false');
    expect(((await huge.json()) as { detail: string }).detail).toMatch(/16 input tokens, more than the API key key_\w+ may use in a minute \(10\); send fewer or shorter texts/);
    expect((await s.embed(['a b c d e f'])).status).toBe(200); // 8: the refused 16 were not kept
    expect((await s.usage.rows())[0]).toMatchObject({ requests: 3, input_tokens: 18 });
  });

  it('--rpm with --tpm: an answered embedding takes its request and tokens in one store call; a request refused for tokens or failing validation still counts against the rate', async () => {
    const memory = createMemoryUsageStore({ now: () => T0 });
    const calls: string[] = [];
    const counting: UsageStore = {
      ...memory,
      take: (items) => (calls.push(`take ${items.map((i) => i.counter.split(':')[0]).join('+')}${items.some((i) => i.limit === null && i.counter.startsWith('rpm')) ? ' (counted, no limit)' : ''}`), memory.take(items)),
      record: (row, tokens) => (calls.push('record'), memory.record(row, tokens)),
    };
    const s = await setup({ rpm: 3, tpm: 10 }, counting);
    const ok = await s.embed(['a b c d']); // 6 tokens
    expect(ok.status).toBe(200);
    expect(calls).toEqual(['take rpm+tpm+month', 'record']);
    calls.length = 0;
    const overTokens = await s.embed(['a b c']); // 5 more: 11 > 10
    expect(overTokens.status).toBe(429);
    expect(overTokens.headers.get('ratelimit')).toBe('"rpm";r=1;t=55, "tpm";r=4;t=55');
    expect((await s.embed([''])).status).toBe(400); // never charged: counted at settle
    expect(calls).toEqual(['take rpm+tpm+month', 'take rpm (counted, no limit)', 'take rpm (counted, no limit)']);
    const third = await s.embed(['a']);
    expect(third.status).toBe(429);
    expect(((await third.json()) as { detail: string }).detail).toMatch(/may make 3 requests per minute and has made them all this minute/);
    expect(third.headers.get('ratelimit')).toBe('"rpm";r=0;t=55, "tpm";r=4;t=55');
    // /v1/tokenize is never charged: it is admitted against the rate (refused here, not counted at settle).
    const tokenize = await s.post('/v1/tokenize', { model: 'legal-2-embedder', texts: ['rent'] });
    expect(tokenize.status).toBe(429);
    expect((await s.usage.rows())[0]).toMatchObject({ requests: 1, input_tokens: 6 });
  });

  it('answers 429 in OpenAI\'s shape under /openai/v1, with the same headers', async () => {
    const s = await setup({ rpm: 1 });
    await s.post('/openai/v1/embeddings', { model: 'legal-2-embedder', input: 'rent' });
    const refused = await s.post('/openai/v1/embeddings', { model: 'legal-2-embedder', input: 'rent' });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('55');
    expect(await refused.json()).toEqual({ error: { message: expect.stringMatching(/1 requests per minute/), type: 'requests', param: null, code: 'rate_limit_exceeded' } });
  });

  it('a key without limits gets no RateLimit headers; limits changed in the store apply to the next request', async () => {
    const s = await setup();
    const open = await s.embed(['rent']);
    expect(open.headers.get('ratelimit-policy')).toBeNull();
    await s.keys.setKeyLimits(s.record.id, { rpm: 1 });
    expect((await s.embed(['rent'])).status).toBe(200);
    expect((await s.embed(['rent'])).status).toBe(429);
    await s.keys.setKeyLimits(s.record.id, { rpm: null });
    expect((await s.embed(['rent'])).status).toBe(200);
  });
});

describe('monthly quotas', () => {
  it('refuse a request that would pass the quota, naming it and the month\'s usage, with Retry-After to the month\'s end; a new month starts afresh', async () => {
    const s = await setup({ quota: 10 });
    expect((await s.embed(['a b c d'])).status).toBe(200); // 6
    const over = await s.embed(['a b c']); // 5: 11 > 10
    expect(over.status).toBe(429);
    expect(over.headers.get('x-should-retry')).toBe('false');
    expect(over.headers.get('retry-after')).toBe(String((Date.parse('2026-12-01T00:00:00Z') - T0) / 1000));
    const body = (await over.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ title: 'Quota exceeded error', status: 429 });
    expect(body.detail).toBe('the account acme has used 6 of its monthly quota of 10 input tokens in 2026-11 (UTC), and this request needs 5; the quota renews at 2026-12-01T00:00:00.000Z');
    expect((await s.embed(['a b'])).status).toBe(200); // 4: exactly 10
    const openai = await s.post('/openai/v1/embeddings', { model: 'legal-2-embedder', input: 'a' });
    expect(await openai.json()).toMatchObject({ error: { type: 'insufficient_quota', code: 'insufficient_quota' } });
    s.setNow(Date.parse('2026-12-01T00:00:01Z'));
    expect((await s.embed(['a b c d'])).status).toBe(200);
  });

  it('a quota set mid-month counts the month\'s usage before it', async () => {
    const s = await setup();
    expect((await s.embed(['a b c d e f'])).status).toBe(200); // 8
    await setAccount(s.keys, 'acme', { monthly_tokens: 11 });
    expect((await s.embed(['a b c'])).status).toBe(429); // 5 > 3 left
    expect((await s.embed(['a'])).status).toBe(200); // 3: exactly 11
  });

  it('a usage store that fails is a 503 with Retry-After, never a 500 or a free pass', async () => {
    let takes = 0;
    const broken: UsageStore = {
      name: 'broken',
      take: async () => (takes++, Promise.reject(new Error('connection lost'))),
      giveBack: async () => {},
      record: async () => {},
      rows: async () => [],
      close: async () => {},
    };
    const s = await setup({ rpm: 5 }, broken);
    const res = await s.embed(['rent']);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('2');
    expect(((await res.json()) as { detail: string }).detail).toMatch(/usage store \(broken\) cannot be reached/);
    expect(takes).toBe(1); // the failed check is not followed by a count against the rate, which would fail too
  });
});

describe('OpenAPI', () => {
  it('documents 429 on metered routes when usage is on', async () => {
    const s = await setup();
    const doc = (await (await s.app.request('/openapi.json')).json()) as { paths: Record<string, { post?: { responses: Record<string, unknown> } }> };
    expect(Object.keys(doc.paths['/v1/embeddings']!.post!.responses)).toContain('429');
    expect(Object.keys(doc.paths['/openai/v1/embeddings']!.post!.responses)).toContain('429');
    const plain = createApp({ embedder: createEmbedder(fakeSettings(), createFakeBackend()) });
    const plainDoc = (await (await plain.request('/openapi.json')).json()) as typeof doc;
    expect(Object.keys(plainDoc.paths['/v1/embeddings']!.post!.responses)).not.toContain('429');
  });
});

describe('the lexembed client', () => {
  it('retries a rate limit after its Retry-After and succeeds; a spent quota is thrown at once (RateLimitError, title "Quota exceeded error")', async () => {
    // Metering's clock stands at hh:mm:59 now, so a Retry-After of 1 s lands in the next minute.
    const offset = 59_000 - (Date.now() % 60_000);
    const keys = createMemoryKeyStore();
    const { key } = await createKey(keys, { account: 'acme', rpm: 1 });
    const usage = createMemoryUsageStore({ now: () => Date.now() + offset });
    const app = createApp({
      embedder: createEmbedder(fakeSettings(), createFakeBackend()),
      authenticate: createStoreAuthenticator(keys),
      usage: createMeter(usage, { now: () => Date.now() + offset }),
    });
    const statuses: number[] = [];
    const client = new Lexembed({
      apiKey: key,
      baseURL: 'http://lexembed.test/v1',
      fetch: async (input, init) => {
        const res = await app.request(String(input).replace('http://lexembed.test', ''), init as RequestInit);
        statuses.push(res.status);
        return res;
      },
    });
    await client.embeddings.create({ model: 'legal-2-embedder', texts: ['rent'] });
    const second = await client.embeddings.create({ model: 'legal-2-embedder', texts: ['rent'] });
    expect(second.embeddings).toHaveLength(1);
    expect(statuses).toEqual([200, 429, 200]);

    await setAccount(keys, 'acme', { monthly_tokens: 7 });
    await keys.setKeyLimits((await keys.listKeys())[0]!.id, { rpm: null });
    statuses.length = 0;
    const error = await client.embeddings.create({ model: 'legal-2-embedder', texts: ['a b c'] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error).toMatchObject({ status: 429, title: 'Quota exceeded error' });
    expect(statuses).toEqual([429]);
  });
});
