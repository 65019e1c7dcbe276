// POST /v1/rerankings on the real `lexembed serve` process (static model: fast), through the
// client library, and in-process in proxy mode and on a model folder without a reranking fit.
import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutoTokenizer, env } from '@huggingface/transformers';
import { BadRequestError, Lexembed, NotFoundError } from '../../src/client/index.ts';
import { createApp } from '../../src/http/app.ts';
import { chunkText, wordTokenCounter } from '../../src/embedder/chunk.ts';
import { loadModelFolder, STATIC_MODEL_DIR, TEST_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import type { Embedder } from '../../src/embedder/types.ts';
import { startServe, type ServerProcess } from '../support/cli.ts';

const MODEL = 'legal-2-reranker';
const TEXTS = [
  'The tenant shall pay a security deposit of one month of rent, which the landlord holds in trust and returns within 30 days of the end of the lease.',
  'Navigable waters: no person shall deposit any substance in navigable waters without a permit.',
  'The Minister may make regulations respecting the marking of aircraft.',
];
let server: ServerProcess;
let tokenizer: Awaited<ReturnType<typeof AutoTokenizer.from_pretrained>>;
const post = (body: unknown) => fetch(`${server.url}/v1/rerankings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const tokens = (text: string) => tokenizer.encode(text).length;

beforeAll(async () => {
  server = await startServe(['--no-auth', '--model', STATIC_MODEL_DIR]);
  env.allowRemoteModels = false;
  env.localModelPath = dirname(STATIC_MODEL_DIR) + '/';
  tokenizer = await AutoTokenizer.from_pretrained('legal-2-embedder-static');
}, 120_000);
afterAll(async () => void (await server?.stop()));

describe('POST /v1/rerankings on lexembed serve', () => {
  it('answers the request the official SDK sends: results by score, indices, scores in [0, 1], exact usage', async () => {
    const query = 'Return of the security deposit at the end of a lease';
    const res = await post({ model: MODEL, query, texts: TEXTS, top_n: null, is_iql: false, scoring_method: 'auto', chunking_options: { size: 512, overlap_ratio: 0.1, overlap_tokens: null } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    const body = (await res.json()) as { results: { index: number; score: number }[]; usage: { input_tokens: number } };
    expect(body.results.map((r) => r.index).sort()).toEqual([0, 1, 2]);
    expect(body.results[0]!.index).toBe(0);
    for (const [i, r] of body.results.entries()) {
      expect(r.score).toBeGreaterThanOrEqual(0);
      expect(r.score).toBeLessThanOrEqual(1);
      if (i > 0) expect(r.score).toBeLessThanOrEqual(body.results[i - 1]!.score);
    }
    // Each text is one chunk here, fed with [CLS] and [SEP] as an embedding would be; plus the query.
    expect(body.usage.input_tokens).toBe(tokens(query) + TEXTS.reduce((n, t) => n + tokens(t), 0));
  });

  it('top_n keeps the best n', async () => {
    const body = (await (await post({ model: MODEL, query: 'security deposit', texts: TEXTS, top_n: 1 })).json()) as { results: unknown[] };
    expect(body.results).toHaveLength(1);
  });

  it('chunk_max, chunk_avg and chunk_min fold a two-chunk text from the scores its chunks get alone', async () => {
    // Text 0 is chunk A followed by chunk B; texts 1 and 2 are A and B alone. In one request, the
    // chunks of text 0 and texts 1 and 2 are the same token windows with the same BM25 statistics.
    const a = 'security deposit returned to the tenant';
    const b = 'aircraft marking regulations by the minister';
    const size = tokens(a) - 2;
    expect(tokens(b) - 2, 'the example needs chunks of equal length').toBe(size);
    const scores = async (method: string) => {
      const body = (await (await post({ model: MODEL, query: 'tenant security deposit', texts: [`${a} ${b}`, a, b], scoring_method: method, chunking_options: { size, overlap_tokens: 0 } })).json()) as {
        results: { index: number; score: number }[];
        usage: { input_tokens: number };
      };
      const byIndex = Object.fromEntries(body.results.map((r) => [r.index, r.score]));
      return { whole: byIndex[0]!, a: byIndex[1]!, b: byIndex[2]!, usage: body.usage.input_tokens };
    };
    const max = await scores('chunk_max');
    expect(max.a).toBeGreaterThan(max.b);
    expect(max.whole).toBeCloseTo(max.a, 5);
    expect((await scores('auto')).whole).toBeCloseTo(max.a, 5);
    expect((await scores('chunk_min')).whole).toBeCloseTo(max.b, 5);
    expect((await scores('chunk_avg')).whole).toBeCloseTo((max.a + max.b) / 2, 5);
    // Two chunks of `size` for text 0, one for each other text, each with [CLS] and [SEP]; and the query.
    expect(max.usage).toBe(tokens('tenant security deposit') + 4 * (size + 2));
  });

  it('a long text is split into overlapping chunks of whole words within the window (the chunker of lexembed embed --chunk-tokens), and usage counts every chunk', async () => {
    const long = Array.from({ length: 300 }, (_, i) => `clause ${i} of the lease about rent`).join('. ');
    const body = (await (await post({ model: MODEL, query: 'rent', texts: [long], chunking_options: { size: 200, overlap_tokens: 50 } })).json()) as { usage: { input_tokens: number } };
    const chunks = chunkText(long, { size: 200, overlap: 50 }, wordTokenCounter((t) => tokenizer.encode(t)));
    expect(chunks.length).toBeGreaterThan(1 + Math.floor((tokens(long) - 2 - 200) / 150)); // at least as many as fixed windows: whole words, sentence ends
    for (const c of chunks) expect(c.tokens).toBeLessThanOrEqual(200);
    expect(body.usage.input_tokens).toBe(tokens('rent') + chunks.reduce((n, c) => n + c.tokens + 2, 0));
  });

  it('bad input gets a 400 problem naming the field; an over-long query names the limit', async () => {
    const res = await post({ model: MODEL, query: 'x', texts: ['a'], is_iql: true });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(await res.json()).toMatchObject({ title: 'Validation error', detail: expect.stringMatching(/^is_iql must be false/) });
    const long = await post({ model: MODEL, query: 'rent '.repeat(600), texts: ['a'] });
    expect(long.status).toBe(400);
    expect((await long.json()).detail).toMatch(/^query is 602 tokens long, over the 512 tokens the model reads/);
    const unread = await post({ model: MODEL, query: 'rent', texts: ['fine', '\u200b'] });
    expect((await unread.json()).detail).toMatch(/^texts\[1\] has no characters the model can read/);
    const wrong = await post({ model: 'legal-2-embedder', query: 'rent', texts: ['a'] });
    expect((await wrong.json()).detail).toBe('model must be "legal-2-reranker"');
  });

  it('client.rerankings.create() returns the response and raises the typed errors', async () => {
    const client = new Lexembed({ baseURL: `${server.url}/v1`, apiKey: null });
    const response = await client.rerankings.create({ model: MODEL, query: 'security deposit', texts: TEXTS, top_n: 2 });
    expect(response.results).toHaveLength(2);
    expect(response.results[0]!.index).toBe(0);
    const error = await client.rerankings.create({ model: MODEL, query: ' ', texts: TEXTS }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).status).toBe(400);
  });

  it('is in the OpenAPI document with its schemas, and on the docs page', async () => {
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, { post?: { operationId: string } }>; components: { schemas: Record<string, unknown> } };
    expect(doc.paths['/v1/rerankings']?.post?.operationId).toBe('createRerankings');
    expect(Object.keys(doc.components.schemas)).toEqual(expect.arrayContaining(['RerankRequest', 'RerankResponse']));
    const page = await (await fetch(`${server.url}/docs`)).text();
    expect(page).toContain('/v1/rerankings');
    expect(page).toContain('scoring_method');
  });
});

describe('rerankings in process', () => {
  let staticModel: Embedder;
  let tiny: Embedder;
  beforeAll(async () => void ([staticModel, tiny] = await Promise.all([loadModelFolder(STATIC_MODEL_DIR, { inference: 'main' }), loadModelFolder(TEST_MODEL_DIR, { inference: 'main' })])), 120_000);
  afterAll(async () => void (await Promise.all([staticModel?.dispose(), tiny?.dispose()])));

  it('proxy mode: /invocations answers exactly what /v1/rerankings answers', async () => {
    const app = createApp({ embedder: staticModel, deployment: 'proxy' });
    const data = { model: MODEL, query: 'security deposit', texts: TEXTS };
    const direct = await app.request('/v1/rerankings', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(data) });
    const proxied = await app.request('/invocations', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ path: '/v1/rerankings', method: 'POST', data }) });
    expect(proxied.status).toBe(200);
    expect(await proxied.json()).toEqual(await direct.json());
  });

  it('a model folder without a reranking fit: 404 saying so, and the client raises NotFoundError', async () => {
    const app = createApp({ embedder: tiny });
    const res = await app.request('/v1/rerankings', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: MODEL, query: 'q', texts: ['t'] }) });
    expect(res.status).toBe(404);
    expect((await res.json()).detail).toMatch(/carries no reranker/);
    const client = new Lexembed({ baseURL: 'http://in-process/v1', apiKey: null, fetch: async (input, init) => app.request(String(input).replace('http://in-process', ''), init) });
    await expect(client.rerankings.create({ model: MODEL, query: 'q', texts: ['t'] })).rejects.toBeInstanceOf(NotFoundError);
    const other = await app.request('/v1/enrichments', { method: 'POST' });
    expect(other.status).toBe(404);
    expect((await other.json()).detail).toMatch(/this deployment does not serve it/);
  });
});
