// The client library against real HTTP servers: the lexembed app served by the Node adapter,
// small misbehaving servers for retries and timeouts, and the platform emulator for the proxy.
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  InternalServerError,
  Lexembed,
  LexembedError,
  UnprocessableEntityError,
  PaymentRequiredError,
  PermissionDeniedError,
  RequestTooLargeError,
} from '../../src/client/index.ts';
import { createApp } from '../../src/http/app.ts';
import { createEmbedder } from '../../src/embedder/embedder.ts';
import { createMemoryKeyStore } from '../../src/auth/stores/memory.ts';
import { createKey, createStoreAuthenticator, setAccount } from '../../src/auth/service.ts';
import { startServer, type RunningServer } from '../../src/node/server.ts';
import { createFakeBackend, fakeSettings } from '../support/fake-backend.ts';
import { startPlatformEmulator } from '../support/platform-emulator.ts';
import { freePort } from '../support/redis.ts';

const MODEL = 'legal-2-embedder' as const;
const servers: { close: () => Promise<unknown> }[] = [];
afterAll(async () => Promise.all(servers.map((s) => s.close())));

async function serveApp(app: ReturnType<typeof createApp>): Promise<RunningServer> {
  const s = await startServer(app, { port: 0, host: '127.0.0.1' });
  servers.push(s);
  return s;
}

async function serveRaw(handler: Parameters<typeof createServer>[1]): Promise<{ url: string; hits: () => number }> {
  let hits = 0;
  const server: Server = createServer((req, res) => (hits++, handler!(req, res)));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push({ close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))) });
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`, hits: () => hits };
}

const okBody = JSON.stringify({ embeddings: [{ index: 0, embedding: [1, 0] }], usage: { input_tokens: 3 } });

describe('client against the lexembed server', () => {
  const store = createMemoryKeyStore();
  const keys: Record<string, string> = {};
  let url: string;
  let brokenURL: string;

  beforeAll(async () => {
    for (const account of ['good', 'overdue', 'unsubscribed', 'inactive']) keys[account] = (await createKey(store, { account })).key;
    await setAccount(store, 'overdue', { overdue: true });
    await setAccount(store, 'unsubscribed', { subscribed: false });
    await setAccount(store, 'inactive', { active: false });
    const app = createApp({ embedder: createEmbedder(fakeSettings(), createFakeBackend()), authenticate: createStoreAuthenticator(store), maxBodyBytes: 2048 });
    url = `${(await serveApp(app)).url}/v1`;
    const failing = { ...createFakeBackend(), run: async () => Promise.reject(new Error('boom')) };
    const broken = createApp({ embedder: createEmbedder(fakeSettings(), failing), onUnexpectedError: () => {} });
    brokenURL = `${(await serveApp(broken)).url}/v1`;
  });

  it('embeds, typed from the contract', async () => {
    const client = new Lexembed({ apiKey: keys.good, baseURL: url });
    const res = await client.embeddings.create({ model: MODEL, texts: ['Lease term', 'Rent'], task: 'retrieval/document', dimensions: 4 });
    expect(res.embeddings.map((e) => [e.index, e.embedding.length])).toEqual([[0, 4], [1, 4]]);
    expect(res.usage.input_tokens).toBeGreaterThan(0);
  });

  it('reads LEXEMBED_API_KEY and LEXEMBED_BASE_URL from the environment', async () => {
    process.env.LEXEMBED_API_KEY = keys.good;
    process.env.LEXEMBED_BASE_URL = url;
    try {
      const client = new Lexembed();
      expect(client.baseURL).toBe(url);
      expect((await client.embeddings.create({ model: MODEL, texts: 'x' })).embeddings).toHaveLength(1);
    } finally {
      delete process.env.LEXEMBED_API_KEY;
      delete process.env.LEXEMBED_BASE_URL;
    }
  });

  it.each([
    ['good', { model: MODEL, texts: [' '] }, BadRequestError, 400, 'Validation error'],
    ['bad', { model: MODEL, texts: 'x' }, AuthenticationError, 401, 'Incorrect API key error'],
    ['overdue', { model: MODEL, texts: 'x' }, PaymentRequiredError, 402, 'Account overdue error'],
    ['unsubscribed', { model: MODEL, texts: 'x' }, PermissionDeniedError, 403, 'No subscription error'],
    ['inactive', { model: MODEL, texts: 'x' }, PermissionDeniedError, 403, 'Access forbidden error'],
    ['good', { model: MODEL, texts: ['x'.repeat(5000)] }, RequestTooLargeError, 413, 'Request too large error'],
  ] as const)('raises a typed error (%s key → %s)', async (who, params, Class, status, title) => {
    const client = new Lexembed({ apiKey: keys[who] ?? 'lxk_v1_bad', baseURL: url, maxRetries: 0 });
    const error = await client.embeddings.create(params).catch((e) => e);
    expect(error).toBeInstanceOf(Class);
    expect(error).toMatchObject({ status, title });
    expect(error.type).toMatch(/\/api-reference\/errors#/);
    expect(typeof error.detail).toBe('string');
    expect(error.headers.get('content-type')).toBe('application/problem+json');
  });

  it('raises InternalServerError for a 500, after retrying it', async () => {
    const client = new Lexembed({ apiKey: null, baseURL: brokenURL, maxRetries: 1 });
    const error = await client.embeddings.create({ model: MODEL, texts: 'x' }).catch((e) => e);
    expect(error).toBeInstanceOf(InternalServerError);
    expect(error).toMatchObject({ status: 500, title: 'Internal server error' });
  });
});

describe('client retries, timeouts and connection errors', () => {
  it('retries a 503 and then succeeds, honouring retry-after-ms', async () => {
    let n = 0;
    const server = await serveRaw((_req, res) => {
      if (n++ === 0) res.writeHead(503, { 'retry-after-ms': '300', 'content-type': 'application/problem+json' }).end('{"title":"Service unavailable error","status":503}');
      else res.writeHead(200, { 'content-type': 'application/json' }).end(okBody);
    });
    const started = performance.now();
    const res = await new Lexembed({ apiKey: null, baseURL: server.url, maxRetries: 2 }).embeddings.create({ model: MODEL, texts: 'x' });
    expect(res.usage.input_tokens).toBe(3);
    expect(server.hits()).toBe(2);
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('honours retry-after in seconds', async () => {
    let n = 0;
    const server = await serveRaw((_req, res) => {
      if (n++ === 0) res.writeHead(429, { 'retry-after': '1' }).end();
      else res.writeHead(200, { 'content-type': 'application/json' }).end(okBody);
    });
    const started = performance.now();
    await new Lexembed({ apiKey: null, baseURL: server.url }).embeddings.create({ model: MODEL, texts: 'x' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(990);
  });

  it('does not retry when x-should-retry is false, nor a 400; retries a 409 when told to', async () => {
    const no = await serveRaw((_req, res) => res.writeHead(503, { 'x-should-retry': 'false' }).end());
    await expect(new Lexembed({ apiKey: null, baseURL: no.url, maxRetries: 3 }).embeddings.create({ model: MODEL, texts: 'x' })).rejects.toBeInstanceOf(InternalServerError);
    expect(no.hits()).toBe(1);
    const bad = await serveRaw((_req, res) => res.writeHead(400, { 'content-type': 'application/problem+json' }).end('{"title":"Validation error","status":400,"detail":"d"}'));
    await expect(new Lexembed({ apiKey: null, baseURL: bad.url, maxRetries: 3 }).embeddings.create({ model: MODEL, texts: 'x' })).rejects.toBeInstanceOf(BadRequestError);
    expect(bad.hits()).toBe(1);
    let n = 0;
    const conflict = await serveRaw((_req, res) => (n++ === 0 ? res.writeHead(409, { 'retry-after-ms': '10' }).end() : res.writeHead(200, { 'content-type': 'application/json' }).end(okBody)));
    await new Lexembed({ apiKey: null, baseURL: conflict.url }).embeddings.create({ model: MODEL, texts: 'x' });
    expect(conflict.hits()).toBe(2);
  });

  it('a 200 whose body is not JSON (a proxy\'s HTML page) is an APIError saying so, not a bare SyntaxError', async () => {
    const html = await serveRaw((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Welcome to nginx!</body></html>'));
    const error = await new Lexembed({ apiKey: null, baseURL: html.url, maxRetries: 0 }).embeddings.create({ model: MODEL, texts: 'x' }).catch((e) => e);
    expect(error).toBeInstanceOf(APIError);
    expect(error).toMatchObject({ status: 200, body: '<html><body>Welcome to nginx!</body></html>' });
    expect(error.message).toMatch(/^the server answered 200 with a body that is not JSON \(text\/html, 43 characters: "<html><body>Welcome to nginx!/);
    expect(error.cause).toBeInstanceOf(SyntaxError);
  });

  it('APIError takes one options object, and each subclass narrows status', () => {
    const headers = new Headers({ 'x-request-id': 'req-1' });
    const error = new BadRequestError({ status: 400, title: 'Validation error', detail: 'texts must be…', type: 't', headers, body: { title: 'Validation error' } });
    const status: 400 = error.status; // a type-level check: BadRequestError's status is the literal 400
    expect([status, error.message, error.requestID, error.error]).toEqual([400, '400 Validation error: texts must be…', 'req-1', { title: 'Validation error' }]);
    const offline: undefined = new APIConnectionError().status;
    expect(offline).toBeUndefined();
    expect(new APIError({ message: 'custom', cause: 'why' })).toMatchObject({ message: 'custom', cause: 'why', status: undefined });
  });

  it('times out with APIConnectionTimeoutError', async () => {
    const silent = await serveRaw(() => {});
    const error = await new Lexembed({ apiKey: null, baseURL: silent.url, timeout: 200, maxRetries: 0 }).embeddings.create({ model: MODEL, texts: 'x' }).catch((e) => e);
    expect(error).toBeInstanceOf(APIConnectionTimeoutError);
  });

  it('raises APIConnectionError when the connection is refused, after retrying', async () => {
    const port = await freePort();
    const started = performance.now();
    const error = await new Lexembed({ apiKey: null, baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 1 }).embeddings.create({ model: MODEL, texts: 'x' }).catch((e) => e);
    expect(error).toBeInstanceOf(APIConnectionError);
    expect(error).not.toBeInstanceOf(APIConnectionTimeoutError);
    // The message names the call and the cause, not only fetch's "fetch failed".
    expect(error.message).toContain(`POST http://127.0.0.1:${port}/v1/embeddings failed: fetch failed (connect ECONNREFUSED 127.0.0.1:${port})`);
    expect(performance.now() - started).toBeGreaterThanOrEqual(350); // one backoff of ~0.375–0.5 s
  });
});

describe('client errors and options, as in the official SDKs', () => {
  let url: string;
  let key: string;
  beforeAll(async () => {
    const store = createMemoryKeyStore();
    key = (await createKey(store, { account: 'good' })).key;
    url = `${(await serveApp(createApp({ embedder: createEmbedder(fakeSettings(), createFakeBackend()), authenticate: createStoreAuthenticator(store) }))).url}/v1`;
  });

  it('an APIError carries the parsed problem as .error (title, detail, type kept) and requestID from x-request-id', async () => {
    const error = await new Lexembed({ apiKey: 'lxk_v1_bad', baseURL: url, maxRetries: 0 }).embeddings.create({ model: MODEL, texts: 'x' }).catch((e) => e);
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error.error).toMatchObject({ title: 'Incorrect API key error', status: 401 });
    expect(error).toMatchObject({ title: 'Incorrect API key error', detail: expect.stringMatching(/malformed/), type: expect.stringMatching(/#401-/) });
    expect(error.requestID).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('connection, timeout and abort errors are APIErrors without a status; 409 and 422 have their classes', async () => {
    const port = await freePort();
    const refused = await new Lexembed({ apiKey: null, baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 }).embeddings.create({ model: MODEL, texts: 'x' }).catch((e) => e);
    expect(refused).toBeInstanceOf(APIError);
    expect(refused.status).toBeUndefined();
    const silent = await serveRaw(() => {});
    const controller = new AbortController();
    const pending = new Lexembed({ apiKey: null, baseURL: silent.url }).embeddings.create({ model: MODEL, texts: 'x' }, { signal: controller.signal }).catch((e) => e);
    setTimeout(() => controller.abort(), 50);
    const aborted = await pending;
    expect(aborted).toBeInstanceOf(APIUserAbortError);
    expect(aborted).toBeInstanceOf(APIError);
    const early = await new Lexembed({ apiKey: null, baseURL: silent.url }).embeddings.create({ model: MODEL, texts: 'x' }, { signal: AbortSignal.abort() }).catch((e) => e);
    expect(early).toBeInstanceOf(APIUserAbortError);
    for (const [status, Class] of [[409, ConflictError], [422, UnprocessableEntityError]] as const) {
      const server = await serveRaw((_req, res) => res.writeHead(status, { 'content-type': 'application/problem+json' }).end(`{"title":"t","status":${status}}`));
      const error = await new Lexembed({ apiKey: null, baseURL: server.url, maxRetries: 0 }).embeddings.create({ model: MODEL, texts: 'x' }).catch((e) => e);
      expect(error).toBeInstanceOf(Class);
      expect(error.status).toBe(status);
    }
  });

  it('honours per-request timeout, maxRetries and headers', async () => {
    const silent = await serveRaw(() => {});
    const slow = await new Lexembed({ apiKey: null, baseURL: silent.url, maxRetries: 0 }).embeddings.create({ model: MODEL, texts: 'x' }, { timeout: 150 }).catch((e) => e);
    expect(slow).toBeInstanceOf(APIConnectionTimeoutError);
    const failing = await serveRaw((_req, res) => res.writeHead(500).end());
    await new Lexembed({ apiKey: null, baseURL: failing.url, maxRetries: 3 }).embeddings.create({ model: MODEL, texts: 'x' }, { maxRetries: 0 }).catch(() => {});
    expect(failing.hits()).toBe(1);
    let seen: string | undefined;
    const echo = await serveRaw((req, res) => ((seen = req.headers['x-trace'] as string), res.writeHead(200, { 'content-type': 'application/json' }).end(okBody)));
    await new Lexembed({ apiKey: null, baseURL: echo.url }).embeddings.create({ model: MODEL, texts: 'x' }, { headers: { 'x-trace': 'abc' } });
    expect(seen).toBe('abc');
  });

  it('create().withResponse() gives the data and the raw Response', async () => {
    const { data, response } = await new Lexembed({ apiKey: key, baseURL: url }).embeddings.create({ model: MODEL, texts: ['a', 'b'] }).withResponse();
    expect(data.embeddings).toHaveLength(2);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('a missing API key fails at construction, naming LEXEMBED_API_KEY; apiKey: null or an invocationsURL need none', () => {
    const saved = process.env.LEXEMBED_API_KEY;
    delete process.env.LEXEMBED_API_KEY;
    try {
      expect(() => new Lexembed({ baseURL: url })).toThrow(LexembedError);
      expect(() => new Lexembed({ baseURL: url })).toThrow(/LEXEMBED_API_KEY/);
      expect(() => new Lexembed({ baseURL: url, apiKey: null })).not.toThrow();
      expect(() => new Lexembed({ invocationsURL: 'http://127.0.0.1:1/invocations' })).not.toThrow();
    } finally {
      if (saved !== undefined) process.env.LEXEMBED_API_KEY = saved;
    }
  });
});

describe('proxy transport through a hosting-platform emulator', () => {
  let container: RunningServer;
  let emulator: Awaited<ReturnType<typeof startPlatformEmulator>>;
  let garbling: Awaited<ReturnType<typeof startPlatformEmulator>>;
  let direct: Lexembed;

  beforeAll(async () => {
    const app = createApp({ embedder: createEmbedder(fakeSettings(), createFakeBackend()), deployment: 'proxy', maxBodyBytes: 2048 });
    container = await serveApp(app);
    emulator = await startPlatformEmulator(container.url);
    garbling = await startPlatformEmulator(container.url, { garbleErrors: true });
    servers.push(emulator, garbling);
    direct = new Lexembed({ apiKey: null, baseURL: `${container.url}/v1`, maxRetries: 0 });
  });

  const proxied = () => new Lexembed({ invocationsURL: emulator.url, baseURL: 'http://unused.invalid/v1', maxRetries: 0, apiKey: 'ignored' });

  it('gives the same result as a direct call', async () => {
    const params = { model: MODEL, texts: ['Indemnity', 'Term'], dimensions: 5 };
    expect(await proxied().embeddings.create(params)).toEqual(await direct.embeddings.create(params));
  });

  it.each([
    [{ model: MODEL, texts: [' '] }, BadRequestError],
    [{ model: MODEL, texts: 'x', dimensions: 99 }, BadRequestError],
    [{ model: MODEL, texts: ['x'.repeat(5000)] }, RequestTooLargeError],
  ] as const)('unwraps a wrapped error into the same typed error as a direct call (%j)', async (params, Class) => {
    const viaProxy = await proxied().embeddings.create(params).catch((e) => e);
    const viaDirect = await direct.embeddings.create(params).catch((e) => e);
    expect(viaProxy).toBeInstanceOf(Class);
    expect({ status: viaProxy.status, title: viaProxy.title, detail: viaProxy.detail, type: viaProxy.type }).toEqual({
      status: viaDirect.status, title: viaDirect.title, detail: viaDirect.detail, type: viaDirect.type,
    });
  });

  it('passes a wrapped body that is not a problem through as-is', async () => {
    const client = new Lexembed({ invocationsURL: garbling.url, maxRetries: 0 });
    const error = await client.embeddings.create({ model: MODEL, texts: [' '] }).catch((e) => e);
    expect(error).toBeInstanceOf(APIError);
    expect(error.status).toBe(424);
    expect(error.body).toMatchObject({ OriginalStatusCode: 400, OriginalMessage: 'upstream worker crashed' });
  });
});
