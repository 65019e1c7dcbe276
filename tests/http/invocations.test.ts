// Proxy deployment mode through app.request(): /invocations equals the direct route, /ping,
// no keys, and no way around authentication in the normal mode.
import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/http/app.ts';
import { createEmbedder } from '../../src/embedder/embedder.ts';
import { problem } from '../../src/contract/index.ts';
import type { Embedder } from '../../src/embedder/types.ts';
import { createFakeBackend, fakeSettings } from '../support/fake-backend.ts';

const embedder = () => createEmbedder(fakeSettings(), createFakeBackend());
const refuseAll = () => problem('incorrectKey', 'no');
const proxy = createApp({ embedder: embedder(), deployment: 'proxy', authenticate: refuseAll, maxBodyBytes: 4096 });
const direct = createApp({ embedder: embedder(), maxBodyBytes: 4096 });

const invoke = (app: typeof proxy, payload: unknown) =>
  app.request('/invocations', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload) });
const call = (app: typeof proxy, data: unknown) =>
  app.request('/v1/embeddings', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(data) });

async function same(a: Response, b: Response) {
  expect(a.status).toBe(b.status);
  expect(a.headers.get('content-type')).toBe(b.headers.get('content-type'));
  expect(await a.text()).toBe(await b.text());
}

describe('proxy deployment', () => {
  it.each([
    ['success', { model: 'legal-2-embedder', texts: ['a b', 'c'], dimensions: 4 }],
    ['validation error', { model: 'legal-2-embedder', texts: ['a', ' '] }],
    ['input too large', { model: 'legal-2-embedder', texts: ['1 2 3 4 5 6 7 8 9 10'], overflow_strategy: null }],
    ['unsupported dimension', { model: 'legal-2-embedder', texts: 'a', dimensions: 99 }],
    ['request too large', { model: 'legal-2-embedder', texts: ['x'.repeat(5000)] }],
  ])('/invocations answers exactly as the direct call: %s', async (_, data) => {
    await same(await invoke(proxy, { path: '/v1/embeddings', method: 'POST', headers: null, data }), await call(direct, data));
  });

  it('defaults method to POST and ignores a passed key (no key needed)', async () => {
    const data = { model: 'legal-2-embedder', texts: 'a' };
    expect((await invoke(proxy, { path: '/v1/embeddings', data })).status).toBe(200);
    expect((await invoke(proxy, { path: '/v1/embeddings', headers: { Authorization: 'Bearer nonsense' }, data })).status).toBe(200);
    expect((await call(proxy, data)).status).toBe(200);
  });

  it('dispatches to any route row, as its direct call answers: a probe, a page, the OpenAI model list', async () => {
    for (const path of ['/health', '/openapi.json', '/openai/v1/models']) {
      const direct = await proxy.request(path);
      const invoked = await invoke(proxy, { path, method: 'GET' });
      await same(invoked, direct);
    }
    // An operation's answer carries the model identity through the proxy as it does directly.
    const named = createApp({ embedder: createEmbedder(fakeSettings({ id: 'fake-v1' }), createFakeBackend()), deployment: 'proxy' });
    const embedded = await invoke(named, { path: '/v1/embeddings', data: { model: 'legal-2-embedder', texts: 'a' } });
    const direct = await call(named, { model: 'legal-2-embedder', texts: 'a' });
    expect([embedded.headers.get('x-lexembed-model-id'), direct.headers.get('x-lexembed-model-id')]).toEqual(['fake-v1', 'fake-v1']);
    expect(embedded.headers.get('x-request-id')).toMatch(/\S/);
  });

  it('drops hop-by-hop headers', async () => {
    const res = await invoke(proxy, { path: '/v1/embeddings', headers: { connection: 'close', 'transfer-encoding': 'chunked', 'x-request-id': 'r1' }, data: { model: 'legal-2-embedder', texts: 'a' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('connection')).toBeNull();
    expect(res.headers.get('transfer-encoding')).toBeNull();
  });

  it('answers a malformed proxy body, an unknown path and a wrong method with problems', async () => {
    const bad = await invoke(proxy, { method: 'POST' });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toBe('application/problem+json');
    expect((await bad.json()).detail).toBe('path is required');
    expect((await (await invoke(proxy, { path: '/v1/embeddings', extra: 1 })).json()).detail).toContain('allowed fields are path, method, headers, data');
    const notJson = await proxy.request('/invocations', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' });
    expect(notJson.status).toBe(400);
    const unknown = await invoke(proxy, { path: '/v1/nowhere', data: {} });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toBe('application/problem+json');
    const wrong = await invoke(proxy, { path: '/v1/embeddings', method: 'GET' });
    expect(wrong.status).toBe(405);
    expect((await wrong.json()).detail).toBe('GET is not allowed on /v1/embeddings; use POST');
    expect((await invoke(proxy, { path: '/invocations', data: {} })).status).toBe(400);
    const detail = async (payload: unknown) => {
      const r = await invoke(proxy, payload);
      return [r.status, ((await r.json()) as { detail: string }).detail] as const;
    };
    const data = { model: 'legal-2-embedder', texts: 'a' };
    expect(await detail({ path: '/v1/embeddings', headers: { 'bad name': 'x' }, data })).toEqual([400, 'headers has an invalid header name "bad name"']);
    expect(await detail({ path: '/v1/embeddings', headers: { 'x-a': 'line\nbreak' }, data })).toEqual([400, 'headers["x-a"] has an invalid value (a line break or NUL)']);
    for (const method of ['TRACE', 'CONNECT']) {
      expect(await detail({ path: '/v1/embeddings', method })).toEqual([400, `method must be one of GET, POST, PUT, PATCH, DELETE, OPTIONS, got "${method}"`]);
    }
    // A HEAD answer has no body: through the proxy it would be a bare status that says nothing.
    expect(await detail({ path: '/v1/embeddings', method: 'head' })).toEqual([400, expect.stringMatching(/^method HEAD is not proxied: .* send "GET"/)]);
    const escapes = ['/%69nvocations', '/invocation%73', '/v1/%65mbeddings', '/v1/embeddings%2F', '/x\\..\\invocations'];
    for (const path of ['/x/../invocations', '/v1/./embeddings', '//v1/embeddings', '/v1/%2e%2e/invocations', ...escapes]) {
      const [status, why] = await detail({ path, data });
      expect([status, why], path).toEqual([400, expect.stringMatching(/^path must be a plain absolute path/)]);
    }
    const noData = await invoke(proxy, { path: '/v1/embeddings', data: null });
    expect(noData.status).toBe(400);
    expect((await noData.json()).detail).toBe('the request body is empty; send a JSON object with model and texts');
  });

  it('GET /ping answers 503 until the model is loaded, then 200', async () => {
    let release!: (e: Embedder) => void;
    const app = createApp({ embedder: new Promise<Embedder>((r) => (release = r)), deployment: 'proxy' });
    expect((await app.request('/ping')).status).toBe(503);
    release(embedder());
    await new Promise((r) => setTimeout(r, 0));
    expect((await app.request('/ping')).status).toBe(200);
  });

  it('in the normal mode /invocations does not exist, so it cannot bypass authentication', async () => {
    const guarded = createApp({ embedder: embedder(), authenticate: refuseAll });
    const res = await invoke(guarded, { path: '/v1/embeddings', data: { model: 'legal-2-embedder', texts: 'a' } });
    expect(res.status).toBe(404);
    expect((await call(guarded, { model: 'legal-2-embedder', texts: 'a' })).status).toBe(401);
    expect((await guarded.request('/ping')).status).toBe(404);
  });
});

describe('proxy deployment: logs and metrics', () => {
  it('an invocation is one request record, under /invocations, with the inner route\'s token count; no private header leaks', async () => {
    const records: { route: string; input_tokens: number | null; status: number }[] = [];
    const observed: { route: string; inputTokens: number | null }[] = [];
    const app = createApp({
      embedder: embedder(),
      deployment: 'proxy',
      log: (r) => records.push(r),
      metrics: { observeRequest: (r) => observed.push(r), render: async () => ({ contentType: 'text/plain', body: '' }) },
    });
    const res = await invoke(app, { path: '/v1/embeddings', data: { model: 'legal-2-embedder', texts: ['a b', 'c'] } });
    expect(res.status).toBe(200);
    const { usage } = (await res.json()) as { usage: { input_tokens: number } };
    expect(records).toEqual([expect.objectContaining({ route: '/invocations', status: 200, input_tokens: usage.input_tokens })]);
    expect(observed).toEqual([expect.objectContaining({ route: '/invocations', inputTokens: usage.input_tokens })]);
    expect([...res.headers.keys()].filter((h) => h.startsWith('x-lexembed'))).toEqual([]);
  });
});
