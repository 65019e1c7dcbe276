// The edge entry in workerd (through miniflare), with real requests: the bundled worker, the
// runtime's .wasm as a compiled module, the model from a service binding, keys injected.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryKeyStore } from '../../src/auth/stores/memory.ts';
import { createKey } from '../../src/auth/service.ts';
import { DEFAULT_OVERLAP_RATIO } from '../../src/contract/index.ts';
import { STATIC_MODEL_DIR, PROJECT_ROOT, loadModelFolder } from '../../src/node/runtime/load-model.ts';

const DIST = join(PROJECT_ROOT, 'edge', 'dist');
let mf: Miniflare;
let key: string;
let rerankKey: string;

beforeAll(async () => {
  await import(join(PROJECT_ROOT, 'edge', 'build.mjs'));
  const store = createMemoryKeyStore();
  ({ key } = await createKey(store, { account: 'edge', resources: ['embeddings'] }));
  ({ key: rerankKey } = await createKey(store, { account: 'edge' })); // the defaults: embeddings and rerankings
  const injected = JSON.stringify({ keys: await store.listKeys(), accounts: await store.listAccounts() });
  mf = new Miniflare({
    modules: [
      { type: 'ESModule', path: join(DIST, 'worker.mjs') },
      { type: 'CompiledWasm', path: join(DIST, 'ort-wasm-simd-threaded.asyncify.wasm') },
    ],
    modulesRoot: DIST,
    compatibilityDate: '2026-04-01',
    cf: false, // no network: do not fetch the Request.cf placeholder data
    bindings: { LEXEMBED_KEYS: injected },
    serviceBindings: {
      // The model folder, as an assets or R2-backed service would serve it.
      MODEL: async (request: { url: string }) => {
        const file = new URL(request.url).pathname.slice(1);
        try {
          return new Response(readFileSync(join(STATIC_MODEL_DIR, file)));
        } catch {
          return new Response('not found', { status: 404 });
        }
      },
    },
  });
}, 120_000);
afterAll(() => mf?.dispose());

const post = (body: unknown, authorization?: string) =>
  mf.dispatchFetch('http://edge.local/v1/embeddings', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
    body: JSON.stringify(body),
  });

describe('edge worker in workerd', () => {
  it('embeds with the static model, matching the Node server on the same folder', async () => {
    const texts = ['Overtime pay for hours beyond forty in a workweek', 'Security deposit returned within 45 days'];
    const res = await post({ model: 'legal-2-embedder-static', texts, dimensions: 256 }, `Bearer ${key}`);
    const body = (await res.json()) as { embeddings: { index: number; embedding: number[] }[]; usage: { input_tokens: number } };
    expect(res.status, JSON.stringify(body)).toBe(200);
    const node = await loadModelFolder(STATIC_MODEL_DIR, { inference: 'main' });
    const r = await node.embed({ texts, task: null, overflowStrategy: 'drop_end', dimensions: 256 });
    await node.dispose();
    // The answer names the model as a Node server's does: the same id and fingerprint (hashed as the files streamed in).
    expect(node.settings.fingerprint).toMatch(/^sha256:[0-9a-f]{16}$/);
    expect(res.headers.get('x-lexembed-model-id')).toBe(node.settings.id);
    expect(res.headers.get('x-lexembed-model-fingerprint')).toBe(node.settings.fingerprint);
    if (!r.ok) throw new Error('node embed failed');
    expect(body.usage.input_tokens).toBe(r.value.inputTokens);
    body.embeddings.forEach((e, i) => {
      expect(e.index).toBe(i);
      const cos = e.embedding.reduce((s, x, k) => s + x * r.value.vectors[i]![k]!, 0);
      expect(cos).toBeGreaterThanOrEqual(0.999);
    });
  }, 120_000);

  it("serves sparse vectors as the Node server does, a query's term neighbours included", async () => {
    const texts = ['Notice of termination of a lease', 'Security deposit returned within 45 days'];
    const node = await loadModelFolder(STATIC_MODEL_DIR, { inference: 'main' });
    try {
      const served: Record<string, { indices: number[] }[]> = {};
      for (const task of ['retrieval/query', 'retrieval/document'] as const) {
        const res = await mf.dispatchFetch('http://edge.local/v1/embeddings/sparse', {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify({ model: 'legal-2-embedder-static', texts, task }),
        });
        const body = (await res.json()) as { embeddings: { indices: number[]; values: number[] }[]; vocabulary_size: number };
        expect(res.status, JSON.stringify(body)).toBe(200);
        const want = await node.sparse!.embed({ texts, task, overflowStrategy: 'drop_end', weighting: 'tf' });
        if (!want.ok) throw new Error('node sparse failed');
        expect(body.vocabulary_size).toBe(node.sparse!.vocabularySize);
        body.embeddings.forEach((e, i) => {
          expect(e.indices, `${task} ${texts[i]}`).toEqual(want.value.vectors[i]!.indices);
          e.values.forEach((v, k) => expect(v).toBeCloseTo(want.value.vectors[i]!.values[k]!, 6));
        });
        served[task] = body.embeddings;
      }
      // the query got neighbours the document form did not ("lease" brings "rental", "lessee", ...)
      expect(served['retrieval/query']![0]!.indices.length).toBeGreaterThan(served['retrieval/document']![0]!.indices.length);
    } finally {
      await node.dispose();
    }
  }, 120_000);

  it('serves the OpenAI-compatible route: base64 decodes to the spec route vectors; errors in OpenAI\'s shape', async () => {
    const texts = ['Overtime pay for hours beyond forty in a workweek'];
    const openai = await mf.dispatchFetch('http://edge.local/openai/v1/embeddings', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'legal-2-embedder-static:query', input: texts, encoding_format: 'base64' }),
    });
    const body = (await openai.json()) as { data: { embedding: string }[] };
    expect(openai.status, JSON.stringify(body)).toBe(200);
    const bytes = Uint8Array.from(atob(body.data[0]!.embedding), (ch) => ch.charCodeAt(0));
    const decoded = Array.from({ length: bytes.length / 4 }, (_, i) => new DataView(bytes.buffer).getFloat32(i * 4, true));
    const spec = (await (await post({ model: 'legal-2-embedder-static', texts, task: 'retrieval/query' }, `Bearer ${key}`)).json()) as { embeddings: { embedding: number[] }[] };
    expect(decoded.reduce((sum, x, k) => sum + x * spec.embeddings[0]!.embedding[k]!, 0)).toBeGreaterThanOrEqual(0.999999);
    const refused = await mf.dispatchFetch('http://edge.local/openai/v1/embeddings', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'legal-2-embedder-static', input: 'x' }) });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
  }, 120_000);

  it('reranks with the static model\'s fit, with the scores the Node server gives', async () => {
    const body = { model: 'legal-2-reranker', query: 'Return of the security deposit', texts: ['Overtime pay for hours beyond forty in a workweek', 'Security deposit returned within 45 days'] };
    const unauthorised = await mf.dispatchFetch('http://edge.local/v1/rerankings', { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body) });
    expect(unauthorised.status).toBe(401);
    const res = await mf.dispatchFetch('http://edge.local/v1/rerankings', { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${rerankKey}` }, body: JSON.stringify(body) });
    const edge = (await res.json()) as { results: { index: number; score: number }[]; usage: { input_tokens: number } };
    expect(res.status, JSON.stringify(edge)).toBe(200);
    const node = await loadModelFolder(STATIC_MODEL_DIR, { inference: 'main' });
    const r = await node.reranker!.rerank({ query: body.query, texts: body.texts, chunking: { size: node.reranker!.maxChunkTokens, overlap: Math.floor(node.reranker!.maxChunkTokens * DEFAULT_OVERLAP_RATIO) }, method: 'auto' });
    await node.dispose();
    if (!r.ok) throw new Error('node rerank failed');
    expect(edge.results.map((x) => x.index)).toEqual([1, 0]);
    expect(edge.usage.input_tokens).toBe(r.value.inputTokens);
    for (const x of edge.results) expect(x.score).toBeCloseTo(r.value.scores[x.index]!, 4);
  }, 120_000);

  it("answers to its model's own name: the static model's, and a request for the hybrid's legal-2-embedder is a problem naming it", async () => {
    // The same name must mean the same vectors everywhere: a Node server on the bundled model answers
    // legal-2-embedder with the hybrid's vectors, so the static model here may not answer to it.
    const health = (await (await mf.dispatchFetch('http://edge.local/health')).json()) as { model: string };
    expect(health.model).toBe('legal-2-embedder-static');
    const res = await post({ model: 'legal-2-embedder', texts: ['Notice to vacate'] }, `Bearer ${key}`);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(await res.json()).toMatchObject({ title: 'Validation error', detail: 'model must be "legal-2-embedder-static"' });
    const openai = await mf.dispatchFetch('http://edge.local/openai/v1/models', { headers: { authorization: `Bearer ${key}` } });
    expect(((await openai.json()) as { data: { id: string }[] }).data.map((m) => m.id)).toEqual(['legal-2-embedder-static', 'legal-2-embedder-static:query', 'legal-2-embedder-static:document']);
  });

  it('answers a validation error as a problem', async () => {
    const res = await post({ model: 'legal-2-embedder-static', texts: ['ok', ' '] }, `Bearer ${key}`);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(await res.json()).toMatchObject({ title: 'Validation error', detail: 'texts[1] must contain at least one non-whitespace character' });
  });

  it('answers 401 without a key, and with a key the store does not hold', async () => {
    const none = await post({ model: 'legal-2-embedder-static', texts: 'x' });
    expect(none.status).toBe(401);
    expect(((await none.json()) as { title: string }).title).toBe('Incorrect API key error');
    const other = await createKey(createMemoryKeyStore(), { account: 'elsewhere' });
    expect((await post({ model: 'legal-2-embedder-static', texts: 'x' }, `Bearer ${other.key}`)).status).toBe(401);
  });
});

describe('npm run edge:dev (the documented local run)', () => {
  it('serves the built Worker in workerd on a port, with the static model from the folder, and answers /v1/embeddings', async () => {
    const { spawn } = await import('node:child_process');
    const child = spawn(process.execPath, [join(PROJECT_ROOT, 'edge', 'dev.mjs'), '--no-auth', '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`edge:dev did not start:\n${output}`)), 60_000);
        child.on('exit', (code) => reject(new Error(`edge:dev exited with ${code}:\n${output}`)));
        child.stdout.on('data', () => {
          const m = /edge Worker \(workerd\) on (http:\/\/[^\s]+?)\/? serving/.exec(output);
          if (m) (clearTimeout(timer), resolve(m[1]!));
        });
      });
      const res = await fetch(`${url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'legal-2-embedder-static', texts: ['Notice of termination'] }) });
      expect(res.status, await res.clone().text()).toBe(200);
      expect((await res.json()).embeddings[0].embedding).toHaveLength(1536);
      expect(output).toContain('serving ' + STATIC_MODEL_DIR + ' as model "legal-2-embedder-static"');
    } finally {
      child.kill('SIGTERM');
    }
  }, 120_000);

  it('says what is missing: no keys and no --no-auth', async () => {
    const { execFile } = await import('node:child_process');
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) =>
      execFile(process.execPath, [join(PROJECT_ROOT, 'edge', 'dev.mjs'), '--keys', '/nonexistent/keys.json'], (error, _stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, stderr })),
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('no key store at /nonexistent/keys.json');
  });
});
