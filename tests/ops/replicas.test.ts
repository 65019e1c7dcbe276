// Three `lexembed serve` replicas sharing one real Redis key store behind a real HAProxy (Debian's,
// on loopback), under steady load from the lexembed client: one replica is killed (SIGKILL) and
// another drained (SIGTERM). The client sees no failed request (its retries and HAProxy's
// redispatch do the rest), every 200 carries the right vectors, HAProxy stops sending to the
// draining replica because its /readyz turns 503, and a revoked key is refused by every replica
// within a second. The measured figures are printed (docs/operating.md quotes a run).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Lexembed } from '../../src/client/index.ts';
import { loadModelFolder, STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { runCli, startServe, type ServerProcess } from '../support/cli.ts';
import { freePort, startRedis } from '../support/redis.ts';

const TEXTS = Array.from({ length: 8 }, (_, i) => `Section ${i}. The tenant shall pay rent on the first day of each month.`);
const cosine = (a: ArrayLike<number>, b: ArrayLike<number>) => Array.from(a).reduce((s, x, i) => s + x * b[i]!, 0);
const work = mkdtempSync(join(tmpdir(), 'lexembed-replicas-'));
let redis: Awaited<ReturnType<typeof startRedis>>;
const replicas: ServerProcess[] = [];
let haproxy: ChildProcess;
let lbUrl: string;
let key: string;
let keyId: string;

beforeAll(async () => {
  if (spawnSync('haproxy', ['-v']).error) throw new Error('haproxy is not installed: apt-get install -y haproxy (.ci/run does)');
  redis = await startRedis();
  const store = ['--store', 'redis', '--redis-url', redis.url];
  const created = await runCli(['keys', 'create', '--account', 'load', ...store]);
  expect(created.code, created.stderr).toBe(0);
  key = created.stdout.trim().split('\n').at(-1)!;
  keyId = /created (key_\w+)/.exec(created.stdout)![1]!;
  for (let i = 0; i < 3; i++) replicas.push(await startServe(['--model', STATIC_MODEL_DIR, ...store, '--drain-delay', '3', '--data-dir', work]));
  const port = await freePort();
  lbUrl = `http://127.0.0.1:${port}`;
  const cfg = join(work, 'haproxy.cfg');
  writeFileSync(cfg, `global
  maxconn 512
defaults
  mode http
  timeout connect 2s
  timeout client 60s
  timeout server 60s
  retries 3
  option redispatch
  retry-on conn-failure empty-response response-timeout 503
frontend lexembed
  bind 127.0.0.1:${port}
  default_backend replicas
backend replicas
  balance roundrobin
  option httpchk
  http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host lexembed
  http-check expect status 200
  default-server inter 300ms fall 1 rise 2
${replicas.map((r, i) => `  server r${i} ${new URL(r.url).host} check`).join('\n')}
`);
  haproxy = spawn('haproxy', ['-f', cfg, '-db'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  haproxy.stdout!.on('data', (d) => (out += d));
  haproxy.stderr!.on('data', (d) => (out += d));
  for (;;) {
    const ok = await fetch(`${lbUrl}/readyz`).then((r) => r.ok, () => false);
    if (ok) break;
    if (haproxy.exitCode !== null) throw new Error(`haproxy exited:\n${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}, 180_000);

afterAll(async () => {
  haproxy?.kill('SIGTERM');
  await Promise.all(replicas.filter((r) => r.child.exitCode === null && r.child.signalCode === null).map((r) => r.stop()));
  await redis?.stop();
  rmSync(work, { recursive: true, force: true });
});

it('through one SIGKILL and one SIGTERM under load: 0 failed requests, every 200 correct, the draining replica taken out by /readyz', async () => {
  const local = await loadModelFolder(STATIC_MODEL_DIR, { inference: 'main' });
  const expected = await local.embed({ texts: TEXTS, task: null, overflowStrategy: 'drop_end', dimensions: null });
  await local.dispose();
  if (!expected.ok) throw new Error('local embed failed');

  let attempts = 0;
  const counting: typeof fetch = (input, init) => (attempts++, fetch(input, init));
  const client = new Lexembed({ baseURL: `${lbUrl}/v1`, apiKey: key, maxRetries: 3, fetch: counting });
  const latencies: number[] = [];
  const failures: string[] = [];
  let wrong = 0;
  let running = true;
  const worker = async () => {
    while (running) {
      const started = performance.now();
      try {
        const res = await client.embeddings.create({ model: 'legal-2-embedder-static', texts: TEXTS });
        latencies.push(performance.now() - started);
        res.embeddings.forEach((e, i) => cosine(e.embedding, expected.value.vectors[i]!) < 0.999999 && wrong++);
      } catch (error) {
        failures.push(String(error));
      }
    }
  };
  const load = Promise.all(Array.from({ length: 8 }, worker));
  const served = () => latencies.length;
  const waitServed = async (n: number) => {
    const target = served() + n;
    while (served() < target) {
      if (failures.length) throw new Error(`failed under load after ${served()} requests: ${failures.slice(0, 3).join(' | ')}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  await waitServed(100);
  replicas[0]!.child.kill('SIGKILL');
  await waitServed(100);
  const drainStarted = Date.now();
  replicas[1]!.child.kill('SIGTERM');
  const exited = new Promise<number | null>((r) => replicas[1]!.child.once('exit', (code) => r(code)));
  await waitServed(100);
  expect(await exited).toBe(0);
  await waitServed(100);
  running = false;
  await load;

  const sorted = [...latencies].sort((a, b) => a - b);
  const p99 = sorted[Math.floor(sorted.length * 0.99)]!;
  console.log(`replicas: ${latencies.length} requests of ${TEXTS.length} texts, ${failures.length} failed, ${attempts - latencies.length - failures.length} client retries, p50 ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms`);
  expect(failures).toEqual([]);
  expect(wrong).toBe(0);

  // The draining replica: /readyz said 503 at once, HAProxy's check (every 300 ms) took it out, so
  // no request reached it in the last part of its 3 s --drain-delay, before its listener closed.
  const log = replicas[1]!.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { time: string; msg?: string; route?: string; status?: number });
  const lastEmbedding = Math.max(...log.filter((r) => r.route === '/v1/embeddings').map((r) => Date.parse(r.time)));
  expect(log.some((r) => r.msg?.includes('/readyz answers 503 now'))).toBe(true);
  expect(lastEmbedding - drainStarted).toBeLessThan(2_500);
  expect(log.some((r) => r.route === '/readyz' && r.status === 503)).toBe(true);
}, 300_000);

it('a key revoked in Redis is refused by every live replica within a second', async () => {
  const live = replicas.filter((r) => r.child.exitCode === null && r.child.signalCode === null);
  expect(live.length).toBeGreaterThanOrEqual(1);
  const post = (url: string) => fetch(`${url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify({ model: 'legal-2-embedder-static', texts: ['Lease'] }) });
  for (const r of live) expect((await post(r.url)).status).toBe(200);
  const revoked = await runCli(['keys', 'revoke', keyId, '--store', 'redis', '--redis-url', redis.url]);
  expect(revoked.code, revoked.stderr).toBe(0);
  const at = Date.now();
  for (const r of live) {
    while ((await post(r.url)).status !== 401) {
      expect(Date.now() - at).toBeLessThan(1_000);
      await new Promise((res) => setTimeout(res, 20));
    }
  }
  expect((await post(lbUrl)).status).toBe(401);
}, 60_000);
