// Kubernetes-style probes on the real server: /livez while the process runs; /readyz only when the
// model is loaded, the key store answers and the server is not draining. On SIGTERM /readyz turns
// 503 at once while requests are still served for --drain-delay, then the listener closes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/http/app.ts';
import { STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import type { Embedder } from '../../src/embedder/types.ts';
import { startServe } from '../support/cli.ts';
import { startRedis } from '../support/redis.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'lexembed-probes-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
const embed = (url: string) =>
  fetch(`${url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'legal-2-embedder-static', texts: ['Lease'] }) });

describe('/livez and /readyz', () => {
  it('while the model loads: alive, not ready (503 problem)', async () => {
    const app = createApp({ embedder: new Promise<Embedder>(() => {}), readiness: { draining: () => false } });
    expect((await app.request('/livez')).status).toBe(200);
    const res = await app.request('/readyz');
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect((await res.json()).detail).toContain('the model is loading');
  });

  it('SIGTERM: /readyz is 503 at once, requests are still answered during --drain-delay, then it closes and exits 0', async () => {
    const server = await startServe(['--model', STATIC_MODEL_DIR, '--no-auth', '--drain-delay', '3', '--data-dir', dataDir]);
    const exited = new Promise<number | null>((r) => server.child.once('exit', (code) => r(code)));
    expect(await (await fetch(`${server.url}/livez`)).json()).toEqual({ status: 'alive' });
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', model: 'legal-2-embedder-static', model_id: expect.any(String), fingerprint: expect.stringMatching(/^sha256:/) });
    server.child.kill('SIGTERM');
    // The first /readyz answered after the signal was handled is a 503; meanwhile requests still get 200.
    let readyz: Response;
    for (;;) {
      readyz = await fetch(`${server.url}/readyz`);
      if (readyz.status === 503) break;
      await new Promise((r) => setImmediate(r));
    }
    expect((await readyz.json()).detail).toContain('shutting down');
    expect((await embed(server.url)).status).toBe(200);
    expect((await fetch(`${server.url}/livez`)).status).toBe(200);
    expect(await exited).toBe(0);
    expect(server.output()).toContain('/readyz answers 503 now; still serving for 3 s (--drain-delay)');
    await expect(fetch(`${server.url}/livez`)).rejects.toThrow();
  }, 60_000);

  it('a Redis key store that stops answering makes /readyz 503 (naming it) while /livez stays 200', async () => {
    const redis = await startRedis();
    const server = await startServe(['--model', STATIC_MODEL_DIR, '--store', 'redis', '--redis-url', redis.url, '--data-dir', dataDir]);
    try {
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
      await redis.stop();
      const res = await fetch(`${server.url}/readyz`);
      expect(res.status).toBe(503);
      expect((await res.json()).detail).toContain('the key store cannot be reached');
      expect((await fetch(`${server.url}/livez`)).status).toBe(200);
    } finally {
      await server.stop();
      await redis.stop();
    }
  }, 60_000);
});
