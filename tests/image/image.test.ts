// npm run test:image: the container image, built and run with the real Docker engine. The base is
// built locally (registry images cannot be pulled here): deploy/image/make-base.sh, Debian from
// Debian's mirror plus Node 24 from the npm registry. The container runs on the host network
// (loopback), read-only, as a non-root user, with the key store in a volume.
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR, loadModelFolder, PROJECT_ROOT } from '../../src/node/runtime/load-model.ts';
import { freePort } from '../support/redis.ts';

const exec = promisify(execFile);
const BASE = 'lexembed-base:bookworm-node24';
const IMAGE = 'lexembed:test';
const id = randomBytes(4).toString('hex');
const NAME = `lexembed-test-${id}`;
const VOLUME = `lexembed-test-data-${id}`;
const docker = async (...args: string[]) => (await exec('docker', args, { maxBuffer: 64 << 20 })).stdout.trim();
const cosine = (a: number[], b: ArrayLike<number>) => a.reduce((s, x, i) => s + x * b[i]!, 0);

/** Polls `check` (a state, not a fixed sleep) until it is true or `ms` pass. */
async function until(what: string, check: () => Promise<boolean>, ms: number) {
  const deadline = Date.now() + ms;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

let url: string;

beforeAll(async () => {
  if (!(await docker('info', '--format', '{{.ServerVersion}}').catch(() => ''))) {
    // No daemon: start one (root; Debian's docker.io, overlay2), detached so it outlives this run.
    spawn('dockerd', [], { detached: true, stdio: 'ignore' }).unref();
    await until('dockerd', async () => (await docker('info', '--format', '{{.ServerVersion}}')) !== '', 60_000);
  }
  await exec('bash', [join(PROJECT_ROOT, 'deploy', 'image', 'make-base.sh'), BASE], { maxBuffer: 64 << 20 });
  await exec('docker', ['build', '--network', 'host', '--build-arg', `BASE=${BASE}`, '-t', IMAGE, PROJECT_ROOT], { maxBuffer: 256 << 20 });
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  await docker('run', '-d', '--name', NAME, '--network', 'host', '--read-only', '--tmpfs', '/tmp', '-v', `${VOLUME}:/data`,
    '-e', `LEXEMBED_PORT=${port}`, '-e', 'LEXEMBED_HOST=127.0.0.1', IMAGE);
  await until('/readyz', async () => (await fetch(`${url}/readyz`)).ok, 180_000);
}, 1_500_000);

afterAll(async () => {
  await docker('rm', '-f', NAME).catch(() => {});
  await docker('volume', 'rm', '-f', VOLUME).catch(() => {});
});

describe('the container image', () => {
  it('is small enough to say: reports its size, runs as non-root, read-only, from the entrypoint', async () => {
    const size = Number(await docker('image', 'inspect', '--format', '{{.Size}}', IMAGE));
    console.log(`image ${IMAGE}: ${(size / 2 ** 20).toFixed(0)} MiB`);
    expect(size).toBeGreaterThan(50 << 20);
    expect(await docker('inspect', '--format', '{{.Config.User}}', NAME)).toBe('10001:10001');
    expect(await docker('inspect', '--format', '{{.HostConfig.ReadonlyRootfs}}', NAME)).toBe('true');
    expect(await docker('exec', NAME, 'id', '-u')).toBe('10001');
    expect(JSON.parse(await docker('inspect', '--format', '{{json .Config.Entrypoint}}', IMAGE))).toEqual(['node', '/app/bin/lexembed.js']);
  });

  it('answers with the vectors npm start gives (cosine ≥ 0.999999), with the dev key from its volume', async () => {
    const key = await docker('exec', NAME, 'cat', '/data/dev-key.txt');
    expect(key).toMatch(/^lxk_v1_/);
    const texts = ['The lessee shall pay the rent on the first day of each month.', 'Limitation period'];
    const res = await fetch(`${url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify({ model: 'legal-2-embedder', texts }) });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { embeddings: { embedding: number[] }[] };
    const local = await loadModelFolder(BUNDLED_MODEL_DIR);
    try {
      const r = await local.embed({ texts, task: null, overflowStrategy: 'drop_end', dimensions: null });
      if (!r.ok) throw new Error('local embed failed');
      r.value.vectors.forEach((v, i) => expect(cosine(body.embeddings[i]!.embedding, v)).toBeGreaterThanOrEqual(0.999999));
    } finally {
      await local.dispose();
    }
    expect(res.headers.get('x-lexembed-model-fingerprint')).toBe(local.settings.fingerprint);
    // The HEALTHCHECK runs in the image and sees it ready.
    await until('healthy', async () => (await docker('inspect', '--format', '{{.State.Health.Status}}', NAME)) === 'healthy', 60_000);
  }, 120_000);

  it('docker stop drains: the request in flight is answered, /readyz went 503 first, exit code 0', async () => {
    const key = await docker('exec', NAME, 'cat', '/data/dev-key.txt');
    const texts = Array.from({ length: 128 }, (_, i) => `Section ${i}. ${'The tenant shall give notice of termination in writing to the landlord. '.repeat(30)}`);
    const inFlight = fetch(`${url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify({ model: 'legal-2-embedder', texts }) });
    await until('the request queued', async () => Number(/^lexembed_queue_depth (\d+)/m.exec(await (await fetch(`${url}/metrics`)).text())?.[1] ?? 0) > 0, 30_000);
    const stopped = docker('stop', '-t', '60', NAME);
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect((await res.json()).embeddings).toHaveLength(128);
    await stopped;
    expect(await docker('inspect', '--format', '{{.State.ExitCode}}', NAME)).toBe('0');
    const logs = (await exec('docker', ['logs', NAME], { maxBuffer: 64 << 20 })).stdout;
    expect(logs).toContain('SIGTERM: closing');
    expect(logs).toContain('closed: every received request was answered');
  }, 180_000);
});
