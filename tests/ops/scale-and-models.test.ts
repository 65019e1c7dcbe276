// Scale-out (two server processes sharing keys through a real Redis) and serving any model folder.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { runCli, startServe, type ServerProcess } from '../support/cli.ts';
import { startRedis } from '../support/redis.ts';

const post = (url: string, body: unknown, key?: string) =>
  fetch(`${url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) }, body: JSON.stringify(body) });

describe('two servers behind one address sharing keys through Redis', () => {
  let redis: Awaited<ReturnType<typeof startRedis>>;
  let servers: ServerProcess[] = [];
  const store = () => ['--store', 'redis', '--redis-url', redis.url];

  beforeAll(async () => {
    redis = await startRedis();
    await runCli(['keys', 'create', '--account', 'bootstrap', ...store()]); // not empty: no dev key race
    servers = await Promise.all([0, 1].map(() => startServe(['--model', TEST_MODEL_DIR, ...store()])));
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await redis?.stop();
  });

  it('a key created through the CLI works on both; a revocation reaches both', async () => {
    const created = await runCli(['keys', 'create', '--account', 'shared', ...store()]);
    expect(created.code, created.stderr).toBe(0);
    const key = created.stdout.trim().split('\n').at(-1)!;
    const id = /created (key_\w+)/.exec(created.stdout)![1];
    const body = { model: 'legal-2-embedder', texts: 'Lease' };
    for (const s of servers) expect((await post(s.url, body, key)).status).toBe(200);
    await runCli(['accounts', 'set', 'shared', '--overdue', 'true', ...store()]);
    for (const s of servers) expect((await post(s.url, body, key)).status).toBe(402);
    await runCli(['keys', 'revoke', id!, ...store()]);
    for (const s of servers) expect((await post(s.url, body, key)).status).toBe(401);
  });
});

describe('serving any model folder', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'lexembed-model-'));
    cpSync(TEST_MODEL_DIR, join(dir, 'my-model'), { recursive: true });
    const settings = JSON.parse(readFileSync(join(dir, 'my-model', 'lexembed.json'), 'utf8'));
    writeFileSync(
      join(dir, 'my-model', 'lexembed.json'),
      JSON.stringify({ ...settings, name: 'my-embedder', pooling: 'cls', max_input_tokens: 16, dimensions: { default: 16, max: 32 }, prompts: { 'retrieval/query': null, 'retrieval/document': null } }),
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('serves its settings: name, default dimensions, max tokens', async () => {
    const server = await startServe(['--no-auth', '--model', join(dir, 'my-model')]);
    try {
      const ok = await (await post(server.url, { model: 'my-embedder', texts: 'A long clause '.repeat(20) })).json();
      expect(ok.embeddings[0].embedding).toHaveLength(16);
      expect(ok.usage.input_tokens).toBe(16);
      const wrong = await (await post(server.url, { model: 'legal-2-embedder', texts: 'x' })).json();
      expect(wrong.detail).toBe('model must be "my-embedder"');
      expect((await post(server.url, { model: 'my-embedder', texts: 'x', dimensions: 33 })).status).toBe(400);
    } finally {
      await server.stop();
    }
  });

  it('--model-name overrides the accepted name', async () => {
    const server = await startServe(['--no-auth', '--model', join(dir, 'my-model'), '--model-name', 'legal-2-embedder']);
    try {
      expect((await post(server.url, { model: 'legal-2-embedder', texts: 'x' })).status).toBe(200);
    } finally {
      await server.stop();
    }
  });

  it('a folder without lexembed.json fails with a clear message', async () => {
    cpSync(join(dir, 'my-model'), join(dir, 'bare'), { recursive: true });
    unlinkSync(join(dir, 'bare', 'lexembed.json'));
    const r = await runCli(['serve', '--no-auth', '--port', '0', '--model', join(dir, 'bare')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/model folder .*bare has no lexembed\.json; write one with max_input_tokens and dimensions/);
  });

  it('a folder that does not exist, or is no model folder at all (no config.json), fails before listening, saying which', async () => {
    const r = await runCli(['serve', '--no-auth', '--port', '0', '--model', join(dir, 'nothing-here')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/model folder .*nothing-here does not exist; pass a folder with config\.json/);
    expect(r.stdout + r.stderr).not.toMatch(/listening on/);
    mkdirSync(join(dir, 'empty'), { recursive: true });
    const empty = await runCli(['serve', '--no-auth', '--port', '0', '--model', join(dir, 'empty')]);
    expect(empty.code).toBe(1);
    expect(empty.stderr).toMatch(/model folder .*empty has no config\.json/);
    expect(empty.stdout + empty.stderr).not.toMatch(/listening on/);
    writeFileSync(join(dir, 'one.jsonl'), '{"id": "a", "text": "Lease"}\n');
    const embed = await runCli(['embed', join(dir, 'one.jsonl'), '--model', join(dir, 'nothing-here'), '--output', join(dir, 'out.jsonl')]);
    expect(embed.code).not.toBe(0);
    expect(embed.stderr).toMatch(/model folder .*nothing-here does not exist/);
  });

  it('an invalid settings file names the field', async () => {
    cpSync(join(dir, 'my-model'), join(dir, 'broken'), { recursive: true });
    writeFileSync(join(dir, 'broken', 'lexembed.json'), JSON.stringify({ max_input_tokens: 'lots', dimensions: { default: 8, max: 4 } }));
    const r = await runCli(['serve', '--no-auth', '--port', '0', '--model', join(dir, 'broken')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('invalid model settings');
    expect(r.stderr).toContain('max_input_tokens');
    expect(r.stderr).toContain('default must not exceed max');
  });
});
