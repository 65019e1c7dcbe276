// API keys for real: keys made by the CLI, checked by a running server over HTTP, with the
// file store (changes seen without restart, keys survive a restart) and the Redis store.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR, TEST_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { createApp } from '../../src/http/app.ts';
import { createEmbedder } from '../../src/embedder/embedder.ts';
import { createRedisKeyStore } from '../../src/auth/stores/redis.ts';
import { createKey, createStoreAuthenticator } from '../../src/auth/service.ts';
import { createFileKeyStore } from '../../src/auth/stores/file.ts';
import { hashApiKey } from '../../src/auth/key-format.ts';
import { runCli, startServe, type ServerProcess } from '../support/cli.ts';
import { createFakeBackend, fakeSettings } from '../support/fake-backend.ts';
import { startRedis } from '../support/redis.ts';

const body = JSON.stringify({ model: 'legal-2-embedder', texts: ['Notice of termination'] });
const post = (url: string, authorization?: string) =>
  fetch(`${url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) }, body });

async function expectStatus(res: Response, status: number, title?: string) {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  if (title) {
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(JSON.parse(text).title).toBe(title);
  }
}

describe('API keys over HTTP with the file store', () => {
  let dataDir: string;
  let server: ServerProcess;
  const keys: Record<string, string> = {};
  const ids: Record<string, string> = {};
  const cli = async (...args: string[]) => {
    const r = await runCli([...args, '--data-dir', dataDir]);
    expect(r.code, r.stderr).toBe(0);
    return r.stdout.trim().split('\n');
  };
  const newKey = async (account: string, ...extra: string[]) => {
    const lines = await cli('keys', 'create', '--account', account, ...extra);
    return { id: /^created (key_\w+)/.exec(lines[0]!)![1]!, key: lines.at(-1)! };
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'lexembed-auth-'));
    for (const [name, account, ...extra] of [
      ['good', 'good'], ['overdue', 'overdue'], ['unsubscribed', 'unsubscribed'], ['inactive', 'inactive'],
      ['unverified', 'unverified'], ['rerank', 'good', '--resources', 'rerankings'], ['embedOnly', 'good', '--resources', 'embeddings'], ['revoked', 'good'],
    ]) {
      ({ key: keys[name!], id: ids[name!] } = await newKey(account!, ...extra));
    }
    await cli('accounts', 'set', 'overdue', '--overdue', 'true');
    await cli('accounts', 'set', 'unsubscribed', '--subscribed', 'false');
    await cli('accounts', 'set', 'inactive', '--active', 'false');
    await cli('accounts', 'set', 'unverified', '--verified', 'false');
    server = await startServe(['--model', BUNDLED_MODEL_DIR, '--data-dir', dataDir]);
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('keys create prints the key alone on the last line, in lxk_v1 form', () => {
    expect(keys.good).toMatch(/^lxk_v1_[0-9A-Za-z]{32}_[0-9A-Za-z]{6}$/);
  });

  it('200 for a good key', async () => expectStatus(await post(server.url, `Bearer ${keys.good}`), 200));

  it('401 Incorrect API key: missing, not Bearer, malformed, typo, unknown', async () => {
    await expectStatus(await post(server.url), 401, 'Incorrect API key error');
    await expectStatus(await post(server.url, `Basic ${keys.good}`), 401, 'Incorrect API key error');
    await expectStatus(await post(server.url, 'Bearer lxk_v1_nope'), 401, 'Incorrect API key error');
    const i = 12;
    const good = keys.good!;
    const typo = good.slice(0, i) + (good[i] === 'Q' ? 'R' : 'Q') + good.slice(i + 1);
    const res = await post(server.url, `Bearer ${typo}`);
    expect((await res.clone().json()).detail).toMatch(/checksum/);
    await expectStatus(res, 401, 'Incorrect API key error');
    const unknown = (await runCli(['keys', 'create', '--account', 'x', '--data-dir', mkdtempSync(join(tmpdir(), 'lexembed-other-'))])).stdout.trim().split('\n').at(-1)!;
    await expectStatus(await post(server.url, `Bearer ${unknown}`), 401, 'Incorrect API key error');
  });

  it('rerankings and the operations not served authenticate per resource (401); an authorised reranking is then validated', async () => {
    const call = (path: string, authorization?: string) =>
      fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) }, body: '{}' });
    await expectStatus(await call('/v1/rerankings'), 401, 'Incorrect API key error');
    await expectStatus(await call('/v1/rerankings', `Bearer ${keys.embedOnly}`), 401, 'Unauthorized API key error');
    // A key made with the defaults may use every served resource: embeddings and rerankings.
    expect((await call('/v1/rerankings', `Bearer ${keys.good}`)).status).toBe(400);
    const served = await call('/v1/rerankings', `Bearer ${keys.rerank}`);
    expect((await served.clone().json()).detail).toMatch(/model is required/);
    await expectStatus(served, 400, 'Validation error');
    await expectStatus(await call('/v1/enrichments'), 401, 'Incorrect API key error');
    const unserved = await call('/v1/enrichments', `Bearer ${keys.rerank}`);
    // The detail must not advise a key that would only get a 404 there.
    expect((await unserved.clone().json()).detail).toMatch(/is not authorised for enrichments; but this deployment does not serve POST \/v1\/enrichments \(embedding model only\), so no key gets an answer there$/);
    await expectStatus(unserved, 401, 'Unauthorized API key error');
    // A route it serves still names the key to make.
    expect((await (await call('/v1/rerankings', `Bearer ${keys.embedOnly}`)).json()).detail).toMatch(/create a key with --resources rerankings$/);
  });

  it('401s carry WWW-Authenticate: Bearer, with error="invalid_token" when a key was sent', async () => {
    expect((await post(server.url)).headers.get('www-authenticate')).toBe('Bearer');
    expect((await post(server.url, 'Bearer lxk_v1_nope')).headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    expect((await post(server.url, `Bearer ${keys.good}`)).headers.get('www-authenticate')).toBeNull();
  });

  it('401 Unauthorized API key for a key limited to another resource', async () => {
    await expectStatus(await post(server.url, `Bearer ${keys.rerank}`), 401, 'Unauthorized API key error');
  });

  it('402 overdue, 403 no subscription, 403 inactive, 403 unverified', async () => {
    await expectStatus(await post(server.url, `Bearer ${keys.overdue}`), 402, 'Account overdue error');
    await expectStatus(await post(server.url, `Bearer ${keys.unsubscribed}`), 403, 'No subscription error');
    await expectStatus(await post(server.url, `Bearer ${keys.inactive}`), 403, 'Access forbidden error');
    await expectStatus(await post(server.url, `Bearer ${keys.unverified}`), 403, 'Access forbidden error');
  });

  it('authentication runs before validation', async () => {
    const res = await fetch(`${server.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{bad json' });
    await expectStatus(res, 401, 'Incorrect API key error');
  });

  it('an expiring key works before its time and is refused after it (no waiting: the second key was made in the past)', async () => {
    ({ key: keys.expiring } = await newKey('good', '--expires', '1h'));
    await expectStatus(await post(server.url, `Bearer ${keys.expiring}`), 200);
    // Written as `keys create --expires 1s` would have a minute ago, into the store the server reads.
    const store = createFileKeyStore(dataDir);
    const { key: expired, record } = await createKey(store, { account: 'good', expiresInMs: 1000, now: new Date(Date.now() - 60_000) });
    await store.close();
    const res = await post(server.url, `Bearer ${expired}`);
    expect((await res.clone().json()).detail).toContain(`the API key ${record.id} expired at ${record.expires}`);
    await expectStatus(res, 401, 'Incorrect API key error');
  });

  it('revocation and account changes reach the running server without a restart', async () => {
    await expectStatus(await post(server.url, `Bearer ${keys.revoked}`), 200);
    expect((await cli('keys', 'revoke', ids.revoked!))[0]).toMatch(/^revoked key_/);
    await expectStatus(await post(server.url, `Bearer ${keys.revoked}`), 401, 'Incorrect API key error');
    await cli('accounts', 'set', 'overdue', '--overdue', 'false');
    await expectStatus(await post(server.url, `Bearer ${keys.overdue}`), 200);
  });

  it('keys list shows ids, accounts and states, never secrets or hashes', async () => {
    const listing = (await cli('keys', 'list')).join('\n');
    expect(listing).toMatch(/key_\w+\tgood\trevoked/);
    for (const key of Object.values(keys)) {
      expect(listing).not.toContain(key);
      expect(listing).not.toContain(await hashApiKey(key));
    }
  });

  it('no key or key hash appears in the server log', async () => {
    const log = server.output();
    for (const key of Object.values(keys)) {
      expect(log).not.toContain(key.slice(7, 39));
      expect(log).not.toContain(await hashApiKey(key));
    }
  });

  it('keys survive a restart', async () => {
    expect(await server.stop()).toBe(0);
    server = await startServe(['--model', BUNDLED_MODEL_DIR, '--data-dir', dataDir]);
    await expectStatus(await post(server.url, `Bearer ${keys.good}`), 200);
    expect(server.output()).not.toContain('development key');
  });
});

describe('first start with an empty store', () => {
  it('a file store gets one development key, written to <data-dir>/dev-key.txt (mode 600), never to the log; it works', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'lexembed-dev-'));
    const server = await startServe(['--model', BUNDLED_MODEL_DIR, '--data-dir', dataDir]);
    try {
      const file = join(dataDir, 'dev-key.txt');
      const key = readFileSync(file, 'utf8').trim();
      expect(key).toMatch(/^lxk_v1_\S+$/);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(server.output()).not.toContain(key.slice(7, 39));
      expect(server.output()).not.toMatch(/lxk_v1_/);
      expect(server.output()).toContain(`the key is in ${file}`);
      await expectStatus(await post(server.url, `Bearer ${key}`), 200);
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('in the container image the log says to read the dev key with docker exec, not from the host', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'lexembed-dev-'));
    const server = await startServe(['--model', TEST_MODEL_DIR, '--data-dir', dataDir], { LEXEMBED_IN_CONTAINER: '1' });
    try {
      const file = join(dataDir, 'dev-key.txt');
      expect(server.output()).toContain(`the key is in ${file} inside the container`);
      expect(server.output()).toContain(`export LEXEMBED_API_KEY=$(docker exec <container> cat ${file})`);
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('--no-dev-key makes none and says how to create a key', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'lexembed-dev-'));
    const server = await startServe(['--model', BUNDLED_MODEL_DIR, '--data-dir', dataDir, '--no-dev-key']);
    try {
      expect(existsSync(join(dataDir, 'dev-key.txt'))).toBe(false);
      expect(server.output()).toContain('has no keys yet, so every request gets 401: create one with lexembed keys create');
      await expectStatus(await post(server.url, 'Bearer lxk_v1_nope'), 401);
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('an empty Redis store (shared, production) never gets a development key', async () => {
    const redis = await startRedis();
    const dataDir = mkdtempSync(join(tmpdir(), 'lexembed-dev-'));
    const server = await startServe(['--model', BUNDLED_MODEL_DIR, '--store', 'redis', '--redis-url', redis.url, '--data-dir', dataDir]);
    try {
      expect(server.output()).toContain('no development key is made in a shared store');
      expect(server.output()).not.toMatch(/lxk_v1_/);
      expect(existsSync(join(dataDir, 'dev-key.txt'))).toBe(false);
      const store = createRedisKeyStore(redis.url);
      try {
        expect(await store.listKeys()).toEqual([]);
      } finally {
        await store.close();
      }
    } finally {
      await server.stop();
      await redis.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('key commands name their store; accounts set refuses an unknown account', () => {
  it('prints the absolute store path, refuses a typo without --create, and creates with it', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'lexembed-acct-'));
    try {
      const created = await runCli(['keys', 'create', '--account', 'acme', '--data-dir', dataDir]);
      expect(created.code, created.stderr).toBe(0);
      expect(created.stderr).toContain(`file key store in ${dataDir}`);
      const typo = await runCli(['accounts', 'set', 'acmee', '--active', 'false', '--data-dir', dataDir]);
      expect(typo.code).toBe(2);
      expect(typo.stderr).toContain('no account "acmee"');
      expect(typo.stderr).toContain('accounts there: acme');
      expect(typo.stderr).toContain('--create');
      const listed = await runCli(['accounts', 'list', '--data-dir', dataDir]);
      expect(listed.stdout).not.toContain('acmee');
      const made = await runCli(['accounts', 'set', 'acmee', '--active', 'false', '--create', '--data-dir', dataDir]);
      expect(made.code, made.stderr).toBe(0);
      expect(made.stdout).toContain('account acmee: active false');
      const revoke = await runCli(['keys', 'revoke', 'key_doesnotexist', '--data-dir', dataDir]);
      expect(revoke.code).toBe(2);
      expect(revoke.stderr).toContain(`in the file key store in ${dataDir}`);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('two app instances sharing one Redis store', () => {
  let redis: Awaited<ReturnType<typeof startRedis>>;
  beforeAll(async () => void (redis = await startRedis()));
  afterAll(() => redis?.stop());

  it('a key created through one is usable through the other, and a revocation reaches both', async () => {
    const storeA = createRedisKeyStore(redis.url);
    const storeB = createRedisKeyStore(redis.url);
    try {
      const app = (store: typeof storeA) => createApp({ embedder: createEmbedder(fakeSettings(), createFakeBackend()), authenticate: createStoreAuthenticator(store) });
      const [a, b] = [app(storeA), app(storeB)];
      const { key, record } = await createKey(storeA, { account: 'shared' });
      const req = () => ({ method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body });
      expect((await a.request('/v1/embeddings', req())).status).toBe(200);
      expect((await b.request('/v1/embeddings', req())).status).toBe(200);
      await storeB.revokeKey(record.id, new Date().toISOString());
      expect((await a.request('/v1/embeddings', req())).status).toBe(401);
      expect((await b.request('/v1/embeddings', req())).status).toBe(401);
    } finally {
      await storeA.close();
      await storeB.close();
    }
  });
});
