// Prometheus /metrics and structured JSON request logs of the real Node server.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/key-format.ts';
import { BUNDLED_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { runCli, startServe, waitForOutput, type ServerProcess } from '../support/cli.ts';

const SECRET_TEXT = 'Confidential settlement amount of 4,812,337 dollars';

describe('metrics and logs', () => {
  let server: ServerProcess;
  let dataDir: string;
  let key: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'lexembed-ops-'));
    key = (await runCli(['keys', 'create', '--account', 'ops', '--data-dir', dataDir])).stdout.trim().split('\n').at(-1)!;
    server = await startServe(['--model', BUNDLED_MODEL_DIR, '--data-dir', dataDir]);
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const embed = (headers: Record<string, string> = {}, texts: string[] = [SECRET_TEXT, 'Term of the lease']) =>
    fetch(`${server.url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
      body: JSON.stringify({ model: 'legal-2-embedder', texts }),
    });

  const logRecords = () =>
    server
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));

  it('prints nothing but JSON records, on stdout and stderr: with --device auto on a machine without a usable GPU, Dawn\'s own warnings stay in the probe', async () => {
    await embed();
    const lines = server.output().split('\n').filter((l) => l.trim());
    expect(lines.filter((l) => !l.startsWith('{'))).toEqual([]);
    expect(logRecords().some((r) => /^device: auto: /.test(r.msg))).toBe(true);
  });

  it('returns the given x-request-id, or a generated one', async () => {
    const res = await embed({ 'x-request-id': 'req-abc.123' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('req-abc.123');
    const generated = (await embed()).headers.get('x-request-id');
    expect(generated).toMatch(/^[0-9a-f-]{36}$/);
    expect((await embed({ 'x-request-id': 'bad id with spaces' })).headers.get('x-request-id')).not.toBe('bad id with spaces');
  });

  it('logs one JSON record per request with id, status, latency and tokens', async () => {
    const res = await embed({ 'x-request-id': 'log-check-1' });
    const { usage } = await res.json();
    await fetch(`${server.url}/v1/embeddings`, { method: 'POST', headers: { 'x-request-id': 'log-check-2' } });
    await waitForOutput(server, /"request_id":"log-check-2"/);
    const records = logRecords();
    const ok = records.find((r) => r.request_id === 'log-check-1');
    expect(ok).toMatchObject({ level: 'info', msg: 'request', method: 'POST', route: '/v1/embeddings', status: 200, input_tokens: usage.input_tokens });
    expect(ok.latency_ms).toBeGreaterThan(0);
    expect(typeof ok.time).toBe('string');
    expect(records.find((r) => r.request_id === 'log-check-2')).toMatchObject({ status: 401, input_tokens: null });
  });

  it('never logs texts, keys or key hashes', async () => {
    const hash = await hashApiKey(key);
    const out = server.output();
    expect(out).not.toContain(SECRET_TEXT);
    expect(out).not.toContain('4,812,337');
    expect(out).not.toContain(key);
    expect(out).not.toContain(hash);
  });

  it('exposes Prometheus metrics: requests, latency, tokens, batches, queue, model load, process', async () => {
    await embed();
    const res = await fetch(`${server.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(text).toMatch(/lexembed_http_requests_total\{route="\/v1\/embeddings",method="POST",status="200"\} [1-9]/);
    expect(text).toMatch(/lexembed_http_requests_total\{route="\/v1\/embeddings",method="POST",status="401"\} [1-9]/);
    expect(text).toMatch(/lexembed_http_request_duration_seconds_bucket\{le="0\.1",route="\/v1\/embeddings",method="POST"\} [1-9]/);
    expect(text).toMatch(/lexembed_tokens_embedded_total [1-9]/);
    expect(text).toMatch(/lexembed_batch_size_count [1-9]/);
    expect(text).toMatch(/lexembed_queue_depth 0/);
    expect(text).toMatch(/lexembed_model_load_seconds 0\.\d+|lexembed_model_load_seconds [1-9]/);
    expect(text).toMatch(/lexembed_process_resident_memory_bytes [1-9]/);
  });

  it('counts reranking tokens in its log record and in the token total', async () => {
    const tokensTotal = async () => Number(/lexembed_tokens_embedded_total (\d+)/.exec(await (await fetch(`${server.url}/metrics`)).text())![1]);
    const before = await tokensTotal();
    const res = await fetch(`${server.url}/v1/rerankings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-request-id': 'rerank-log-1' },
      body: JSON.stringify({ model: 'legal-2-reranker', query: 'Term of the lease', texts: ['The term of the lease is one year.', 'Overtime pay'] }),
    });
    expect(res.status).toBe(200);
    const { usage } = await res.json();
    await waitForOutput(server, /"request_id":"rerank-log-1"/);
    expect(logRecords().find((r) => r.request_id === 'rerank-log-1')).toMatchObject({ route: '/v1/rerankings', status: 200, input_tokens: usage.input_tokens });
    expect((await tokensTotal()) - before).toBe(usage.input_tokens);
    expect(await (await fetch(`${server.url}/metrics`)).text()).toMatch(/lexembed_http_requests_total\{route="\/v1\/rerankings",method="POST",status="200"\} 1/);
  });

  it('labels unknown routes as unmatched rather than by raw path', async () => {
    await fetch(`${server.url}/v1/some/${'x'.repeat(20)}`);
    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(text).toMatch(/route="unmatched",method="GET",status="404"/);
    expect(text).not.toContain('x'.repeat(20));
  });
});
