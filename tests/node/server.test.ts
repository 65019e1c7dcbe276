// The real Node server (the `lexembed serve` process) on a free port, called over HTTP.
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { startServe } from '../support/cli.ts';

describe('lexembed serve', () => {
  let server: Awaited<ReturnType<typeof startServe>>;
  beforeAll(async () => void (server = await startServe(['--no-auth', '--model', BUNDLED_MODEL_DIR, '--max-body-bytes', '2048'])));
  afterAll(() => void server?.child.kill('SIGTERM'));

  it('answers /health and POST /v1/embeddings over HTTP', async () => {
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    const res = await fetch(`${server.url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'legal-2-embedder', texts: ['The lessee shall pay rent.', 'Severability'], dimensions: 16 }),
    });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.embeddings.map((e: { index: number; embedding: number[] }) => [e.index, e.embedding.length])).toEqual([[0, 16], [1, 16]]);
    expect(body.usage.input_tokens).toBeGreaterThan(4);
  });

  it('refuses a chunked body over the limit with 413 without reading it all', async () => {
    const { status, contentType } = await new Promise<{ status: number; contentType: string }>((resolve, reject) => {
      const req = httpRequest(`${server.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        res.resume();
        resolve({ status: res.statusCode!, contentType: String(res.headers['content-type']) });
        req.destroy();
      });
      req.on('error', (e) => ((e as NodeJS.ErrnoException).code === 'ECONNRESET' || (e as NodeJS.ErrnoException).code === 'EPIPE' ? undefined : reject(e)));
      const chunk = 'x'.repeat(1024);
      let sent = 0;
      const write = () => {
        while (sent < 1000 && req.write(chunk)) sent++;
        if (sent < 1000 && !req.destroyed) req.once('drain', write);
      };
      write();
    });
    expect(status).toBe(413);
    expect(contentType).toBe('application/problem+json');
  });

  it('over HTTP (the body read from its declared length): an empty body, a wrong type, one over the limit, each named; a 200 carries the common headers', async () => {
    const post = (body: string, type = 'application/json') => fetch(`${server.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': type }, body });
    const detail = async (res: Response) => [res.status, (await res.json()).detail];
    expect(await detail(await post(''))).toEqual([400, 'the request body is empty; send a JSON object with model and texts']);
    expect(await detail(await post('{"model":"legal-2-embedder","texts":["a"]}', 'text/plain'))).toEqual([400, 'Content-Type must be application/json, got "text/plain"']);
    expect((await detail(await post(JSON.stringify({ model: 'legal-2-embedder', texts: ['x'.repeat(3000)] }))))[0]).toBe(413);
    const ok = await fetch(`${server.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'node-1' }, body: '{"model":"legal-2-embedder","texts":["Rent"],"dimensions":8}' });
    expect([ok.status, ok.headers.get('x-request-id'), ok.headers.get('cross-origin-resource-policy'), ok.headers.get('content-type')]).toEqual([200, 'node-1', 'cross-origin', 'application/json']);
    expect(ok.headers.get('x-lexembed-model-id')).toBeTruthy();
  });

  it('warns loudly that authentication is off', () => {
    expect(server.output()).toContain('WARNING: authentication is OFF (--no-auth)');
  });

  it('stops on SIGTERM', async () => {
    const exited = new Promise<number | null>((r) => server.child.once('exit', r));
    server.child.kill('SIGTERM');
    const code = await exited;
    expect(code, server.output()).toBe(0);
    expect(server.output()).toContain('SIGTERM');
  });
});

describe('startServer drain (the Node adapter in process)', () => {
  it('answers a received request that outlives the drain limit with a 503 problem, closes idle connections, and reports it', async () => {
    const { startServer } = await import('../../src/node/server.ts');
    let arrived!: () => void;
    const received = new Promise<void>((r) => (arrived = r));
    // An app whose one route never answers on its own; /quick answers at once.
    const app = { fetch: (req: Request) => (new URL(req.url).pathname === '/quick' ? new Response('ok') : (arrived(), new Promise<Response>(() => {}))) };
    const server = await startServer(app, { port: 0, host: '127.0.0.1' });
    const idle = await fetch(`${server.url}/quick`); // leaves a keep-alive connection open and idle
    expect(await idle.text()).toBe('ok');
    const stuck = fetch(`${server.url}/stuck`, { method: 'POST', body: 'x' });
    await received;
    const outcome = await server.close(300);
    expect(outcome).toEqual({ unfinished: 1 });
    const res = await stuck;
    expect([res.status, res.headers.get('content-type'), res.headers.get('retry-after'), res.headers.get('connection')]).toEqual([503, 'application/problem+json', '1', 'close']);
    expect((await res.json()).detail).toMatch(/^the server is shutting down and could not finish this request within its 0.3 s drain/);
    await expect(fetch(`${server.url}/quick`)).rejects.toThrow();
  });

  it('answers a request that comes on a connection accepted before the drain but read later than the idle grace (a loaded server falls behind)', async () => {
    const { startServer } = await import('../../src/node/server.ts');
    const server = await startServer({ fetch: () => new Response('ok') }, { port: 0, host: '127.0.0.1' });
    const { port } = new URL(server.url);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise<void>((r) => socket.once('connect', () => r()));
    let reply = '';
    socket.on('data', (d: Buffer) => (reply += d));
    const ended = new Promise<string>((r) => socket.once('close', (hadError) => r(hadError ? 'reset' : 'closed')));
    socket.on('error', () => {});
    const drained = server.close(10_000);
    // The request's bytes come 1.5 s into the drain: longer than a connection that has served a
    // request is kept idle (1 s), as when this process could not read them sooner.
    await new Promise((r) => setTimeout(r, 1_500));
    socket.write('GET /late HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(await ended).toBe('closed');
    expect(reply).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(reply.toLowerCase()).toContain('connection: close');
    expect(await drained).toEqual({ unfinished: 0 });
  });
});
