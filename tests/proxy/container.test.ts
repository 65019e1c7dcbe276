// Container contract of `lexembed serve --deployment proxy`, on the real process: /ping,
// /invocations, no keys, and SIGTERM draining in-flight requests.
import { Agent, request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { startServe, type ServerProcess } from '../support/cli.ts';

describe('lexembed serve --deployment proxy', () => {
  let server: ServerProcess;
  beforeAll(async () => void (server = await startServe(['--deployment', 'proxy', '--host', '127.0.0.1', '--model', BUNDLED_MODEL_DIR])));
  afterAll(() => server?.stop());

  it('answers /ping and needs no key', async () => {
    expect((await fetch(`${server.url}/ping`)).status).toBe(200);
    const res = await fetch(`${server.url}/invocations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ path: '/v1/embeddings', data: { model: 'legal-2-embedder', texts: ['Severability'] } }),
    });
    expect(res.status).toBe(200);
    expect((await res.json()).embeddings).toHaveLength(1);
    expect(server.output()).toContain('API keys are not required');
  });

  it('keeps answering /ping within 2 s while embedding under load', async () => {
    const texts = Array.from({ length: 128 }, (_, i) => `section ${i} ` + 'the tenant shall pay the rent on the first day of each month '.repeat(8));
    // 4 × 128 long texts keep the bundled (hybrid) model busy for several seconds on 2 cores.
    const load = Array.from({ length: 4 }, () =>
      fetch(`${server.url}/invocations`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ path: '/v1/embeddings', data: { model: 'legal-2-embedder', texts } }) }),
    );
    const started = performance.now();
    expect((await fetch(`${server.url}/ping`)).status).toBe(200);
    expect(performance.now() - started).toBeLessThan(2000);
    for (const r of await Promise.all(load)) expect(r.status).toBe(200);
  }, 180_000);

  it('SIGTERM stops accepting and drains in-flight requests', async () => {
    const texts = Array.from({ length: 128 }, (_, i) => `clause ${i} ` + 'indemnify and hold harmless '.repeat(10));
    // Requests ride connections the server has already accepted (warmed by a ping each): a
    // connection still in the kernel's accept queue when the listener closes is reset by the
    // OS, which no server can drain (platforms stop routing before they send SIGTERM).
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    const send = (method: string, path: string, body?: string) => {
      let sent!: () => void;
      const written = new Promise<void>((r) => (sent = r));
      const status = new Promise<number>((resolve, reject) => {
        const req = httpRequest(`${server.url}${path}`, { method, agent, headers: body ? { 'content-type': 'application/json' } : {} }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode!));
        });
        req.on('error', reject);
        req.on('finish', () => sent()); // the whole request is handed to the socket
        req.end(body);
      });
      return { status, written };
    };
    await Promise.all(Array.from({ length: 8 }, () => send('GET', '/ping').status));
    const body = JSON.stringify({ path: '/v1/embeddings', data: { model: 'legal-2-embedder', texts } });
    const inflight = Array.from({ length: 8 }, () => send('POST', '/invocations', body));
    // SIGTERM once every request is on its (already accepted) connection: an event, not a delay.
    await Promise.all(inflight.map((r) => r.written));
    const exit = server.stop();
    expect(await Promise.all(inflight.map((r) => r.status))).toEqual(Array(8).fill(200));
    agent.destroy();
    expect(await exit).toBe(0);
    expect(server.output()).toContain('SIGTERM: closing');
    await expect(fetch(`${server.url}/ping`)).rejects.toThrow();
  });
});
