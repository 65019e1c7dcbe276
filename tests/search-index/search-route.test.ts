// POST /v1/search on a real index (static bundled model, PGlite in a folder) through the app
// (app.request, no sockets): the hits the library's search gives, with excerpts and the next
// page's offset; every bad request a 400/404 problem that says what to fix; the client's
// search.create(); OpenAPI documents the route only where an index is served.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Lexembed, NotFoundError } from '../../src/client/index.ts';
import type { Embedder } from '../../src/embedder/types.ts';
import { createApp } from '../../src/http/app.ts';
import { loadModelFolder, STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { openIndex, type SearchIndex } from '../../src/search-index/index.ts';
import { TOPICS, writeContracts } from '../support/contracts.ts';

let dir: string;
let embedder: Embedder;
let index: SearchIndex;
let app: ReturnType<typeof createApp>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lexembed-search-route-'));
  await writeContracts(join(dir, 'contracts'), 8);
  embedder = await loadModelFolder(STATIC_MODEL_DIR, { inference: 'main' });
  index = await openIndex(join(dir, 'contracts.index'), { embedder });
  await index.update([join(dir, 'contracts')]);
  app = createApp({ embedder, search: index });
}, 180_000);

afterAll(async () => {
  await index?.close();
  await embedder?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const post = (body: unknown, target = app) => target.request('/v1/search', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('POST /v1/search', () => {
  it('answers what the library search answers, with the matching sentences and the next page', async () => {
    const query = 'What law governs the agreement?';
    const res = await post({ query, top: 3 });
    expect(res.status).toBe(200);
    const body = await res.json();
    const local = await index.search(query, { top: 3 });
    expect(body.hits.map((h: { passage_id: string }) => h.passage_id)).toEqual(local.map((h) => h.passageId));
    expect(body.hits[0]).toMatchObject({ rank: 1, file: local[0]!.file, chunk: local[0]!.chunk, excerpt: expect.stringContaining('GOVERNING LAW') });
    expect(body).toMatchObject({ index: join(dir, 'contracts.index'), mode: 'hybrid', next_offset: 3, usage: { input_tokens: expect.any(Number) } });
    const next = await (await post({ query, top: 3, offset: 3 })).json();
    expect(next.hits[0].rank).toBe(4);
    expect(next.hits.map((h: { passage_id: string }) => h.passage_id)).toEqual((await index.search(query, { top: 3, offset: 3 })).map((h) => h.passageId));
  }, 60_000);

  it('keeps the filters and modes of lexembed search', async () => {
    const [topic] = TOPICS[2]!;
    const only = await (await post({ query: topic, file: '*.md', mode: 'sparse' })).json();
    expect(only.mode).toBe('sparse');
    expect(only.hits.length).toBeGreaterThan(0);
    expect(only.hits.every((h: { file: string; dense: number | null }) => h.file.endsWith('.md') && h.dense === null)).toBe(true);
    const one = await (await post({ query: topic, document: 'contract-02.pdf', top: 50 })).json();
    expect(new Set(one.hits.map((h: { file: string }) => h.file))).toEqual(new Set(['contract-02.pdf']));
    expect(one.hits[0]).toMatchObject({ unit: 'page', first: expect.any(Number) });
    expect(one.next_offset).toBeNull();
  }, 60_000);

  it.each([
    ['no query', {}, /query is required/],
    ['a blank query', { query: '   ' }, /query must contain at least one non-whitespace character/],
    ['a query of 10,001 characters', { query: 'x'.repeat(10_001) }, /query must be at most 10,000 characters/],
    ['top 0', { query: 'rent', top: 0 }, /top must be an integer from 1 to 1000/],
    ['top 2.5', { query: 'rent', top: 2.5 }, /top must be an integer from 1 to 1000/],
    ['offset 10,001', { query: 'rent', offset: 10_001 }, /offset must be an integer from 0 to 10000/],
    ['an unknown mode', { query: 'rent', mode: 'fuzzy' }, /mode must be one of "hybrid", "dense", "sparse"/],
    ['another model', { query: 'rent', model: 'other-model' }, () => new RegExp(`model must be "${embedder.modelName}", the model that made the index's vectors`)],
    ['an unknown field', { query: 'rent', limit: 5 }, /unknown field "limit"; allowed fields are query, model, index, top, offset, mode, file, document/],
  ])('refuses %s with a 400 that says what to fix', async (_, body, detail) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect((await res.json()).detail).toMatch(typeof detail === 'function' ? detail() : detail);
  });

  it('answers 404 for an index this server does not hold, naming the one it does', async () => {
    const res = await post({ query: 'rent', index: 'leases.index' });
    expect(res.status).toBe(404);
    expect((await res.json()).detail).toMatch(/this server searches the index .*contracts\.index \(by name "contracts\.index"\), not "leases\.index"/);
    expect((await post({ query: 'rent', index: 'contracts' })).status).toBe(200);
    expect((await post({ query: 'rent', index: 'contracts.index' })).status).toBe(200);
  });

  it('is served by client.search.create(), and documented in /openapi.json only where an index is served', async () => {
    const client = new Lexembed({ apiKey: null, baseURL: 'http://in-process/v1', fetch: async (input, init) => app.request(String(input).replace('http://in-process', ''), init) });
    const { hits } = await client.search.create({ query: 'security deposit', top: 1 });
    expect(hits[0]!.excerpt).toMatch(/security deposit/i);
    const spec = await (await app.request('/openapi.json')).json();
    expect(spec.paths['/v1/search'].post.operationId).toBe('search');
    expect(spec.components.schemas.SearchRequest.properties.query.maxLength).toBe(10_000);
    const plain = createApp({ embedder });
    expect((await (await plain.request('/openapi.json')).json()).paths['/v1/search']).toBeUndefined();
    const noIndex = new Lexembed({ apiKey: null, baseURL: 'http://in-process/v1', fetch: async (input, init) => plain.request(String(input).replace('http://in-process', ''), init), maxRetries: 0 });
    await expect(noIndex.search.create({ query: 'rent' })).rejects.toBeInstanceOf(NotFoundError);
  }, 60_000);
});
