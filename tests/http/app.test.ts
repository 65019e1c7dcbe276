// The HTTP contract through app.request(): every catalogue row that applies, on the
// deterministic fake backend and on the real test model.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/http/app.ts';
import { createEmbedder } from '../../src/embedder/embedder.ts';
import { problem } from '../../src/contract/index.ts';
import { loadModelFolder, TEST_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import type { Embedder } from '../../src/embedder/types.ts';
import { createFakeBackend, fakeSettings } from '../support/fake-backend.ts';

const MODEL = 'legal-2-embedder';
const json = (body: unknown, headers: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: typeof body === 'string' ? body : JSON.stringify(body),
});

async function expectProblem(res: Response, status: number, title: string, anchor: string, detail?: string | RegExp) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  const body = await res.json();
  // No docsUrl configured: absolute on the request's origin (app.request() uses http://localhost).
  expect(body).toMatchObject({ status, title, type: `http://localhost/docs/api-reference/errors#${anchor}`, instance: null });
  expect(Object.keys(body).sort()).toEqual(['detail', 'instance', 'status', 'title', 'type']);
  if (typeof detail === 'string') expect(body.detail).toBe(detail);
  else if (detail) expect(body.detail).toMatch(detail);
  return body;
}

describe('POST /v1/embeddings on the fake backend', () => {
  const app = createApp({ embedder: createEmbedder(fakeSettings(), createFakeBackend()) });

  it('a 200 and a problem carry the same common headers: request id (given or new), CORP, content type', async () => {
    const ok = await app.request('/v1/embeddings', json({ model: MODEL, texts: ['a b'] }, { 'x-request-id': 'req-ok-1' }));
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-request-id')).toBe('req-ok-1');
    expect(ok.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
    expect(ok.headers.get('content-type')).toBe('application/json');
    const bad = await app.request('/v1/embeddings', json({ model: MODEL, texts: [] }));
    expect(bad.status).toBe(400);
    expect(bad.headers.get('x-request-id')).toMatch(/^[\w-]{36}$/);
    expect(bad.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
    const fresh = await app.request('/v1/embeddings', json({ model: MODEL, texts: ['c'] }));
    expect(fresh.headers.get('x-request-id')).toMatch(/^[\w-]{36}$/);
  });

  it('answers 200 with one embedding per text, index = input position, and usage', async () => {
    const res = await app.request('/v1/embeddings', json({ model: MODEL, texts: ['a b', 'c', 'd e f'] }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = await res.json();
    expect(body.embeddings.map((e: { index: number }) => e.index)).toEqual([0, 1, 2]);
    expect(body.embeddings[0].embedding).toHaveLength(6);
    expect(body.usage).toEqual({ input_tokens: 4 + 3 + 5 });
  });

  it('takes a single string', async () => {
    const body = await (await app.request('/v1/embeddings', json({ model: MODEL, texts: 'only one' }))).json();
    expect(body.embeddings).toHaveLength(1);
  });

  it('400 Validation error names the bad element', async () => {
    await expectProblem(
      await app.request('/v1/embeddings', json({ model: MODEL, texts: ['a', 'b', 'c', '  '] })),
      400, 'Validation error', '400-validation-error', 'texts[3] must contain at least one non-whitespace character',
    );
  });

  it('400 for an unknown field, by name', async () => {
    await expectProblem(await app.request('/v1/embeddings', json({ model: MODEL, texts: 'a', inputs: 'x' })), 400, 'Validation error', '400-validation-error', /unknown field "inputs"/);
  });

  it('400 for a body nested deeper than 64 levels, before anything walks it (strings may hold brackets)', async () => {
    const deep = (n: number) => `{"model": "${MODEL}", "texts": ${'['.repeat(n)}"a"${']'.repeat(n)}}`;
    await expectProblem(await app.request('/v1/embeddings', json(deep(10_000))), 400, 'Validation error', '400-validation-error', /^the request body nests arrays or objects more than 64 levels deep; /);
    // 63 levels inside the body's own object: the ordinary validation answers, not the depth check.
    await expectProblem(await app.request('/v1/embeddings', json(deep(63))), 400, 'Validation error', '400-validation-error', 'texts[0] must be a string');
    expect((await app.request('/v1/embeddings', json({ model: MODEL, texts: ['[[[[{{{{'.repeat(20), '\\"[[[['] }))).status).toBe(200);
  });

  it('a route has one spelling: percent-escapes, dot segments and "//" are no route (404), before authentication', async () => {
    const guarded = createApp({ embedder: createEmbedder(fakeSettings(), createFakeBackend()), authenticate: async () => problem('incorrectKey', 'no key') });
    for (const path of ['/v1/%65mbeddings', '/v1/embeddings%2f', '/v1//embeddings', '/%76%31/embeddings']) {
      await expectProblem(await guarded.request(path, json({ model: MODEL, texts: 'a' })), 404, 'Not found error', '404-not-found', /routes are matched only as written/);
    }
    // Dot segments never reach the app through the URL parser; the Node adapter passes the raw target (tests/reliability).
    const raw = (target: string) => guarded.fetch(new Request('http://localhost/v1/embeddings', json({ model: MODEL, texts: 'a' })), { 'lexembed.rawTarget': target });
    await expectProblem(await raw('/x/../v1/embeddings'), 404, 'Not found error', '404-not-found', /has a "\." or "\.\." segment/);
    await expectProblem(await raw('/v1/embeddings'), 401, 'Incorrect API key error', '401-not-authenticated');
  });

  it('400 for malformed JSON, a non-object body, an empty body and a wrong content type', async () => {
    await expectProblem(await app.request('/v1/embeddings', json('{"model": ')), 400, 'Validation error', '400-validation-error', /^the request body is not valid JSON/);
    await expectProblem(await app.request('/v1/embeddings', json('"texts"')), 400, 'Validation error', '400-validation-error', 'the request body must be a JSON object');
    await expectProblem(await app.request('/v1/embeddings', json('')), 400, 'Validation error', '400-validation-error', /empty/);
    await expectProblem(
      await app.request('/v1/embeddings', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' }),
      400, 'Validation error', '400-validation-error', 'Content-Type must be application/json, got "text/plain"',
    );
  });

  it('400 Embedding input too large error under overflow_strategy null', async () => {
    const texts = ['short', 'one two three four five six seven eight nine'];
    await expectProblem(
      await app.request('/v1/embeddings', json({ model: MODEL, texts, overflow_strategy: null })),
      400, 'Embedding input too large error', '400-validation-error', /^texts\[1\] is 11 tokens long, over the model's maximum of 8/,
    );
    expect((await app.request('/v1/embeddings', json({ model: MODEL, texts }))).status).toBe(200);
  });

  it('400 Unsupported embedding dimension error above the maximum; renormalised below', async () => {
    await expectProblem(await app.request('/v1/embeddings', json({ model: MODEL, texts: 'a', dimensions: 9 })), 400, 'Unsupported embedding dimension error', '400-validation-error', /maximum of 8/);
    const body = await (await app.request('/v1/embeddings', json({ model: MODEL, texts: 'a', dimensions: 3 }))).json();
    const v: number[] = body.embeddings[0].embedding;
    expect(v).toHaveLength(3);
    expect(Math.hypot(...v)).toBeCloseTo(1, 5);
  });

  it('400 Unsupported embedding task error when the model lacks the task', async () => {
    const only = createApp({ embedder: createEmbedder(fakeSettings({ tasks: ['retrieval/document'] }), createFakeBackend()) });
    await expectProblem(await only.request('/v1/embeddings', json({ model: MODEL, texts: 'a', task: 'retrieval/query' })), 400, 'Unsupported embedding task error', '400-validation-error');
  });

  it('413 Request too large error from Content-Length, and from a streamed body without one', async () => {
    const small = createApp({ embedder: createEmbedder(fakeSettings(), createFakeBackend()), maxBodyBytes: 100 });
    const big = JSON.stringify({ model: MODEL, texts: ['x'.repeat(200)] });
    await expectProblem(await small.request('/v1/embeddings', json(big)), 413, 'Request too large error', '413-request-too-large', /limit of 100 bytes/);
    let pulled = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        if (pulled > 1000) controller.close();
        else controller.enqueue(new TextEncoder().encode('x'.repeat(64)));
      },
    });
    const res = await small.request('/v1/embeddings', { method: 'POST', headers: { 'content-type': 'application/json' }, body: stream, duplex: 'half' } as RequestInit);
    await expectProblem(res, 413, 'Request too large error', '413-request-too-large');
    expect(pulled).toBeLessThan(10); // stopped reading early instead of buffering 64 KB
  });

  it('404 and 405 as problems', async () => {
    await expectProblem(await app.request('/v1/nothing'), 404, 'Not found error', '404-not-found', /no route at \/v1\/nothing/);
    const res = await app.request('/v1/embeddings');
    expect(res.headers.get('allow')).toBe('POST');
    await expectProblem(res, 405, 'Method not allowed error', '405-method-not-allowed', 'GET is not allowed on /v1/embeddings; use POST');
  });

  it('500 Internal server error leaks no internals', async () => {
    const backend = { ...createFakeBackend(), run: async () => { throw new Error('secret onnx stack /opt/x'); } };
    const seen: unknown[] = [];
    const broken = createApp({ embedder: createEmbedder(fakeSettings(), backend), onUnexpectedError: (e) => seen.push(e) });
    const body = await expectProblem(await broken.request('/v1/embeddings', json({ model: MODEL, texts: 'a' })), 500, 'Internal server error', '500-internal-server-error');
    expect(JSON.stringify(body)).not.toContain('secret');
    expect(seen).toHaveLength(1);
  });

  it('runs the authentication seam before validation, with the resource and header', async () => {
    const calls: unknown[] = [];
    const guarded = createApp({
      embedder: createEmbedder(fakeSettings(), createFakeBackend()),
      authenticate: (req) => (calls.push(req), req.authorization === 'Bearer good' ? null : problem('incorrectKey', 'bad key')),
    });
    await expectProblem(await guarded.request('/v1/embeddings', json({ nonsense: true })), 401, 'Incorrect API key error', '401-not-authenticated', 'bad key');
    expect(calls).toEqual([{ authorization: null, resource: 'embeddings' }]);
    expect((await guarded.request('/v1/embeddings', json({ model: MODEL, texts: 'a' }, { authorization: 'Bearer good' }))).status).toBe(200);
  });

  it.each([
    ['unauthorizedKey', 401, 'Unauthorized API key error', '401-not-authenticated'],
    ['accountOverdue', 402, 'Account overdue error', '402-payment-required'],
    ['accessForbidden', 403, 'Access forbidden error', '403-access-forbidden'],
    ['noSubscription', 403, 'No subscription error', '403-access-forbidden'],
  ] as const)('serialises %s refused by the seam as %i', async (code, status, title, anchor) => {
    const guarded = createApp({ embedder: createEmbedder(fakeSettings(), createFakeBackend()), authenticate: () => problem(code, 'what to do') });
    await expectProblem(await guarded.request('/v1/embeddings', json({ model: MODEL, texts: 'a' })), status, title, anchor, 'what to do');
  });

  it('uses a configured docs_url in every type', async () => {
    const custom = createApp({ embedder: createEmbedder(fakeSettings(), createFakeBackend()), docsUrl: 'https://docs.example.com/' });
    const body = await (await custom.request('/v1/embeddings', json({}))).json();
    expect(body.type).toBe('https://docs.example.com/api-reference/errors#400-validation-error');
  });

  it('serves an errors page whose anchors match every problem type', async () => {
    const html = await (await app.request('/docs/api-reference/errors')).text();
    for (const anchor of ['400-validation-error', '401-not-authenticated', '402-payment-required', '403-access-forbidden', '413-request-too-large', '500-internal-server-error']) {
      expect(html).toContain(`id="${anchor}"`);
    }
  });
});

describe('health and model loading', () => {
  it('answers 503 while the model loads, then 200; embeddings wait for the model', async () => {
    let release!: (e: Embedder) => void;
    const app = createApp({ embedder: new Promise<Embedder>((r) => (release = r)) });
    await expectProblem(await app.request('/health'), 503, 'Service unavailable error', '503-service-unavailable');
    const pending = app.request('/v1/embeddings', json({ model: MODEL, texts: 'a' }));
    release(createEmbedder(fakeSettings(), createFakeBackend()));
    expect((await pending).status).toBe(200);
    expect(await (await app.request('/health')).json()).toMatchObject({ status: 'ok', model: MODEL });
  });
  it('a model that failed to load: 503 with a detail saying so on every model route, not a 500; the docs still answer', async () => {
    const seen: unknown[] = [];
    const app = createApp({ embedder: Promise.reject(new Error('onnx/model.onnx: no such file')), onUnexpectedError: (e) => seen.push(e) });
    for (const path of ['/v1/embeddings', '/v1/rerankings']) {
      const res = await app.request(path, json({ model: MODEL, texts: 'a' }));
      expect((await res.clone().json()).detail).toMatch(/the model failed to load/);
      await expectProblem(res, 503, 'Service unavailable error', '503-service-unavailable');
    }
    expect(await (await app.request('/health')).json()).toMatchObject({ status: 503, detail: expect.stringMatching(/failed to load/) });
    expect((await app.request('/openapi.json')).status).toBe(200);
    expect(seen).toEqual([]);
  });
});


describe('POST /v1/embeddings on the real test model', () => {
  let embedder: Embedder;
  beforeAll(async () => void (embedder = await loadModelFolder(TEST_MODEL_DIR)));
  afterAll(() => embedder?.dispose());

  it('returns unit vectors and exact token usage', async () => {
    const app = createApp({ embedder });
    const res = await app.request('/v1/embeddings', json({ model: MODEL, texts: ['hello world', 'hello'], task: 'retrieval/document' }));
    expect(res.status).toBe(200);
    const body = await res.json();
    // "passage: " prompt = 2 tokens; [CLS] hello world [SEP] = 4; [CLS] hello [SEP] = 3
    expect(body.usage.input_tokens).toBe(6 + 5);
    for (const e of body.embeddings) expect(Math.hypot(...e.embedding)).toBeCloseTo(1, 5);
  });
});
