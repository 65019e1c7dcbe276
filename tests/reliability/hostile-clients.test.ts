// The reliability suite: what a hostile or unlucky client did to the real `lexembed serve`
// process (issue 22), reproduced on loopback with bounded sizes. Every case must end in an
// answer: a 2xx, or a problem with the right status; never a 5xx from a bug, a reset or silence.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { runCli, startServe, waitForOutput, type ServerProcess, devKey } from '../support/cli.ts';
import { httpMessage, rawRequest } from '../support/raw-http.ts';
import { startRedis } from '../support/redis.ts';

const MODEL = 'legal-2-embedder-static';
const JSON_HEADERS = { 'content-type': 'application/json' };
const problemOf = async (res: Response) => {
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  return (await res.json()) as { title: string; status: number; detail: string };
};
/** Long legal texts: ~3,000 characters, several hundred tokens each. */
const longTexts = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => `${tag} ${i}: ` + 'The Lessee shall indemnify and hold harmless the Lessor from every claim arising out of the use of the Premises. '.repeat(27));

describe('the API deployment (static model, file key store)', () => {
  let server: ServerProcess;
  let dataDir: string;
  let key: string;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'lexembed-reliability-'));
    server = await startServe(['--model', STATIC_MODEL_DIR, '--data-dir', dataDir, '--max-queue-tokens', '65536']);
    key = devKey(dataDir);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const auth = () => ({ authorization: `Bearer ${key}` });

  it('one spelling per route: escapes, dot segments and "//" are 404 problems, never the route (sent raw, as typed)', async () => {
    const body = JSON.stringify({ model: MODEL, texts: 'Severability' });
    for (const target of ['/v1/%65mbeddings', '/x/../v1/embeddings', '/v1/%2e%2e/v1/embeddings', '/v1/./embeddings', '//v1/embeddings', '/v1/embeddings%2F']) {
      const answer = await rawRequest(server.url, httpMessage('POST', target, { ...JSON_HEADERS, ...auth() }, body));
      expect([answer.status, answer.headers['content-type']], target).toEqual([404, 'application/problem+json']);
      expect(JSON.parse(answer.body).detail, target).toMatch(/routes are matched only as written/);
    }
    const plain = await rawRequest(server.url, httpMessage('POST', '/v1/embeddings', { ...JSON_HEADERS, ...auth() }, body));
    expect(plain.status).toBe(200);
  });

  it('a body nested 5,000 deep is a 400 on every route', async () => {
    const deep = `{"model": "${MODEL}", "texts": ${'['.repeat(5000)}${']'.repeat(5000)}}`;
    for (const path of ['/v1/embeddings', '/v1/rerankings']) {
      const res = await fetch(`${server.url}${path}`, { method: 'POST', headers: { ...JSON_HEADERS, ...auth() }, body: deep });
      expect(res.status, path).toBe(400);
      expect((await problemOf(res)).detail).toMatch(/nests arrays or objects more than 64 levels deep/);
    }
  });

  it("a 100 KB Authorization header, a '*' target and an unknown method get problems, not resets or plain text", async () => {
    const huge = await rawRequest(server.url, httpMessage('POST', '/v1/embeddings', { ...JSON_HEADERS, authorization: `Bearer ${'x'.repeat(100_000)}` }, '{}'));
    expect([huge.status, huge.headers['content-type'], huge.error]).toEqual([413, 'application/problem+json', undefined]);
    expect(JSON.parse(huge.body)).toMatchObject({ title: 'Request too large error', detail: expect.stringMatching(/headers exceed this server's limit of 16384 bytes/) });
    const star = await rawRequest(server.url, httpMessage('OPTIONS', '*'));
    expect([star.status, star.headers['content-type']]).toEqual([400, 'application/problem+json']);
    expect(JSON.parse(star.body).detail).toMatch(/request target is not a path/);
    const unknown = await rawRequest(server.url, httpMessage('BREW', '/v1/embeddings'));
    expect([unknown.status, unknown.headers['content-type'], unknown.headers.allow]).toEqual([405, 'application/problem+json', 'GET, POST']);
    expect(JSON.parse(unknown.body).title).toBe('Method not allowed error');
    const garbage = await rawRequest(server.url, 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nthis is no header\r\n\r\n');
    expect([garbage.status, garbage.headers['content-type']]).toEqual([400, 'application/problem+json']);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  });

  it('a reranking that would split into 800,000 chunks is a 400 naming the limit, and /health answers meanwhile', async () => {
    const texts = longTexts(1000, 'clause').map((t) => t.slice(0, 3400));
    const started = fetch(`${server.url}/v1/rerankings`, {
      method: 'POST',
      headers: { ...JSON_HEADERS, ...auth() },
      body: JSON.stringify({ model: 'legal-2-reranker', query: 'indemnity', texts, chunking_options: { size: 1 } }),
    });
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    const res = await started;
    expect(res.status).toBe(400);
    expect((await problemOf(res)).detail).toMatch(/^the texts split into more than 4096 chunks, this server's limit per request \(texts\[0\] to texts\[\d\] alone make \d+ chunks of 1 tokens\); use a larger chunking_options.size/);
  });

  it('a 3.6 MB text to /v1/tokenize (and /v1/embeddings) does not stall the event loop: /health keeps answering meanwhile', async () => {
    const huge = longTexts(1, 'statute')[0]!.repeat(1200); // 3.6 MB of words
    for (const [path, body] of [
      ['/v1/tokenize', { model: MODEL, texts: huge, return_offsets: false }],
      ['/v1/embeddings', { model: MODEL, texts: [huge], overflow_strategy: null }],
    ] as const) {
      const health: number[] = [];
      let pending = true;
      const t0 = performance.now();
      const answer = fetch(`${server.url}${path}`, { method: 'POST', headers: { ...JSON_HEADERS, ...auth() }, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, body: await r.json() }));
      void answer.finally(() => (pending = false));
      while (pending) {
        const t = performance.now();
        await fetch(`${server.url}/health`).then((r) => r.arrayBuffer());
        health.push(performance.now() - t);
      }
      const total = performance.now() - t0;
      const { status, body: result } = await answer;
      if (path === '/v1/tokenize') {
        expect(status).toBe(200);
        expect(result.results[0].input_tokens).toBeGreaterThan(600_000);
      } else {
        expect(status).toBe(400);
        expect(result.detail).toMatch(/^texts\[0\] is \d{6,} tokens long, over the model's maximum of 512/);
      }
      // Before: one synchronous tokenising call held the loop for most of the request (~1 s here).
      console.log(`${path}, 3.6 MB: answered in ${total.toFixed(0)} ms; /health answered ${health.length} times, slowest ${Math.max(...health).toFixed(0)} ms`);
      expect(Math.max(...health)).toBeLessThan(Math.max(250, total / 4));
      expect(health.length).toBeGreaterThan(3);
    }
  });

  it('at saturation every request is answered: 200 with every vector, or a 503 problem with Retry-After', async () => {
    // 24 clients × 128 texts of ~700 tokens each (truncated to 512) against a 65,536-token queue: one request fills it.
    const texts = longTexts(128, 'overload');
    const answers = await Promise.all(
      Array.from({ length: 24 }, () => fetch(`${server.url}/v1/embeddings`, { method: 'POST', headers: { ...JSON_HEADERS, ...auth() }, body: JSON.stringify({ model: MODEL, texts }) })),
    );
    const statuses = answers.map((r) => r.status);
    expect(statuses.every((s) => s === 200 || s === 503), statuses.join(' ')).toBe(true);
    expect(statuses).toContain(200);
    expect(statuses).toContain(503);
    for (const res of answers) {
      if (res.status === 200) expect(((await res.json()) as { embeddings: unknown[] }).embeddings).toHaveLength(128);
      else {
        expect(res.headers.get('retry-after')).toBe('1');
        expect((await problemOf(res)).detail).toMatch(/^the server is at capacity \(the queue holds/);
      }
    }
    // A full queue (like loading or draining) is an expected state, not a fault: its 503s are
    // logged at level warn, so alerts on "error" stay quiet.
    await waitForOutput(server, /"status":503/);
    const records = server.output().split('\n').filter((l) => l.includes('"msg":"request"') && l.includes('"status":503')).map((l) => JSON.parse(l) as { level: string });
    expect(records.length).toBeGreaterThan(0);
    expect(new Set(records.map((r) => r.level))).toEqual(new Set(['warn']));
  }, 120_000);
});

describe('the proxy deployment', () => {
  let server: ServerProcess;
  beforeAll(async () => void (server = await startServe(['--deployment', 'proxy', '--host', '127.0.0.1', '--model', STATIC_MODEL_DIR])), 120_000);
  afterAll(async () => void (await server?.stop()));
  const invoke = (payload: unknown) => fetch(`${server.url}/invocations`, { method: 'POST', headers: JSON_HEADERS, body: typeof payload === 'string' ? payload : JSON.stringify(payload) });

  it('data nested 5,000 deep (arrays, objects) is a 400, not a stack overflow', async () => {
    for (const [open, close] of [['[', ']'], ['{"a":', '}']]) {
      const res = await invoke(`{"path": "/v1/embeddings", "data": ${open!.repeat(5000)}1${close!.repeat(5000)}}`);
      expect(res.status).toBe(400);
      expect((await problemOf(res)).detail).toMatch(/more than 64 levels deep/);
    }
    expect(server.output()).not.toMatch(/Maximum call stack|unexpected error/);
  });

  it('cannot reach itself through any spelling, however deeply nested', async () => {
    let payload: unknown = { path: '/ping', method: 'GET' };
    for (let i = 0; i < 20; i++) payload = { path: i % 2 ? '/%69nvocations' : '/invocation%73', data: payload };
    for (const path of ['/%69nvocations', '/invocation%73', '/x/../invocations', '/v1/%65mbeddings']) {
      const res = await invoke({ path, data: { model: MODEL, texts: 'a' } });
      expect(res.status, path).toBe(400);
      expect((await problemOf(res)).detail, path).toMatch(/^path must be a plain absolute path/);
    }
    expect((await invoke(payload)).status).toBe(400);
  });

  it('HEAD is refused with a problem that has a body', async () => {
    const res = await invoke({ path: '/v1/embeddings', method: 'HEAD' });
    expect(res.status).toBe(400);
    expect((await problemOf(res)).detail).toMatch(/^method HEAD is not proxied/);
  });
});

it('SIGTERM with 50 received requests on fresh connections: every one is answered (200 or a logged 503), then exit 0', async () => {
  const server = await startServe(['--no-auth', '--model', STATIC_MODEL_DIR]);
  const body = JSON.stringify({ model: MODEL, texts: longTexts(128, 'drain').map((t) => t.slice(0, 600)) });
  // One connection per request, none warmed: many are still in the listen backlog at SIGTERM.
  const agent = new Agent({ keepAlive: false, maxSockets: 100 });
  const sent = Array.from({ length: 50 }, () => {
    let written!: () => void;
    const onSocket = new Promise<void>((r) => (written = r));
    const answer = new Promise<{ status: number | null; error?: string }>((resolve) => {
      const req = httpRequest(`${server.url}/v1/embeddings`, { method: 'POST', agent, headers: JSON_HEADERS }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode! }));
      });
      req.on('error', (e: NodeJS.ErrnoException) => resolve({ status: null, error: e.code }));
      req.on('finish', () => written());
      req.end(body);
    });
    return { onSocket, answer };
  });
  await Promise.all(sent.map((s) => s.onSocket));
  const exit = server.stop();
  const answers = await Promise.all(sent.map((s) => s.answer));
  agent.destroy();
  expect(answers.filter((a) => a.status !== 200 && a.status !== 503)).toEqual([]);
  expect(await exit).toBe(0);
  const served = answers.filter((a) => a.status === 200).length;
  expect(served).toBeGreaterThan(0);
  // Every answer is in the log, the 503s included.
  const logged = server.output().split('\n').filter((l) => l.includes('"msg":"request"') && l.includes('/v1/embeddings'));
  expect(logged.length).toBe(50);
  expect(server.output()).toMatch(/SIGTERM: closing/);
}, 180_000);

it('Redis paused, then gone: 503 with Retry-After saying the key store is unreachable within ~1 s, and back to 200 when it returns', async () => {
  const redis = await startRedis();
  const dataDir = mkdtempSync(join(tmpdir(), 'lexembed-redis-'));
  // A Redis store gets no development key: make one the way an operator would.
  const key = (await runCli(['keys', 'create', '--account', 'redis', '--store', 'redis', '--redis-url', redis.url])).stdout.trim().split('\n').at(-1)!;
  const server = await startServe(['--model', STATIC_MODEL_DIR, '--store', 'redis', '--redis-url', redis.url, '--data-dir', dataDir]);
  try {
    const embed = () => fetch(`${server.url}/v1/embeddings`, { method: 'POST', headers: { ...JSON_HEADERS, authorization: `Bearer ${key}` }, body: JSON.stringify({ model: MODEL, texts: 'Severability' }) });
    expect((await embed()).status).toBe(200);
    redis.child.kill('SIGSTOP'); // a hung Redis: commands time out
    const hung = await embed();
    expect([hung.status, hung.headers.get('retry-after')]).toEqual([503, '2']);
    expect((await problemOf(hung)).detail).toMatch(/^the API key store \(redis\) cannot be reached/);
    redis.child.kill('SIGCONT');
    expect((await embed()).status).toBe(200);
    redis.child.kill('SIGKILL'); // a stopped Redis: the connection is lost
    await new Promise((r) => redis.child.once('exit', r));
    const gone = await embed();
    expect(gone.status).toBe(503);
    await waitForOutput(server, /the key store cannot be reached: requests get 503 until it can/);
    expect(server.output()).not.toMatch(/unexpected error/);
  } finally {
    await server.stop();
    await redis.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}, 120_000);

it('a truncated tokenizer.json stops start-up with a message naming the file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lexembed-broken-'));
  try {
    cpSync(STATIC_MODEL_DIR, join(dir, 'm'), { recursive: true });
    const file = join(dir, 'm', 'tokenizer.json');
    writeFileSync(file, readFileSync(file).subarray(0, 5000));
    const r = await runCli(['serve', '--no-auth', '--port', '0', '--model', join(dir, 'm')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${file} is not valid JSON`);
    expect(r.stderr).toMatch(/damaged or truncated/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
