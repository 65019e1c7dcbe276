// POST /v1/embeddings/sparse on the bundled model: the Python recipe's exact weights, the texts read
// as /v1/embeddings reads them, its problems, OpenAPI, a 404 where the model has no lexical table,
// client.embeddings.sparse.create(), and dense + sparse hybrid search in a real pgvector (PGlite).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BadRequestError, Lexembed } from '../../src/client/index.ts';
import { problem } from '../../src/contract/index.ts';
import { createApp } from '../../src/http/app.ts';
import { BUNDLED_MODEL_DIR, loadModelFolder, TEST_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { startServer, type RunningServer } from '../../src/node/server.ts';
import type { Embedder } from '../../src/embedder/types.ts';

const MODEL = 'legal-2-embedder';
const PIECES = 37_325; // the bundled vocabulary: word-pair slots start here
const parity = JSON.parse(readFileSync(join(import.meta.dirname, '../fixtures/legal-model-parity.json'), 'utf8')) as {
  cases: { text: string; sparse: { indices: number[]; values: number[] }; sparse_relative: number[]; sparse_idf: number[]; sparse_query: { indices: number[]; values: number[] } }[];
};
let embedder: Embedder;
let app: ReturnType<typeof createApp>;
let server: RunningServer;
beforeAll(async () => {
  embedder = await loadModelFolder(BUNDLED_MODEL_DIR, { inference: 'main' });
  app = createApp({ embedder });
  server = await startServer(app, { port: 0, host: '127.0.0.1' });
}, 60_000);
afterAll(async () => {
  await server?.close();
  await embedder?.dispose();
});
const post = (path: string, body: unknown, target = app) =>
  target.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('POST /v1/embeddings/sparse', () => {
  it('answers the weights the Python recipe computes (model/rules/sparse_weights.py), piece by piece and word pair by word pair, in every weighting', async () => {
    const texts = parity.cases.map((c) => c.text);
    for (const weighting of ['tf', 'relative', 'idf'] as const) {
      const res = await post('/v1/embeddings/sparse', { model: MODEL, texts, weighting });
      expect(res.status).toBe(200);
      const body = await res.json();
      expect(body.weighting).toBe(weighting);
      expect(body.vocabulary_size).toBe(embedder.sparse!.vocabularySize);
      parity.cases.forEach((c, i) => {
        const want = weighting === 'tf' ? c.sparse.values : weighting === 'relative' ? c.sparse_relative : c.sparse_idf;
        expect(body.embeddings[i].index).toBe(i);
        expect(body.embeddings[i].indices, c.text).toEqual(c.sparse.indices);
        want.forEach((v, k) => expect(body.embeddings[i].values[k], `${weighting} ${c.text}`).toBeCloseTo(v, 5));
      });
    }
    // the bundled model carries word pairs: indices past the vocabulary, below vocabulary_size
    const pairs = parity.cases.flatMap((c) => c.sparse.indices.filter((x) => x >= PIECES));
    expect(pairs.length).toBeGreaterThan(parity.cases.length);
    expect(Math.max(...pairs)).toBeLessThan(embedder.sparse!.vocabularySize);
  });

  it("adds a query's term neighbours (task retrieval/query, the bundled model's table) as the Python recipe does; documents keep their vectors", async () => {
    const texts = parity.cases.map((c) => c.text);
    const ask = async (task?: string) => (await (await post('/v1/embeddings/sparse', { model: MODEL, texts, ...(task && { task }) })).json()).embeddings;
    const [queries, documents, untasked] = [await ask('retrieval/query'), await ask('retrieval/document'), await ask()];
    let added = 0;
    parity.cases.forEach((c, i) => {
      expect(queries[i].indices, c.text).toEqual(c.sparse_query.indices);
      c.sparse_query.values.forEach((v, k) => expect(queries[i].values[k], c.text).toBeCloseTo(v, 5));
      expect(documents[i].indices).toEqual(c.sparse.indices);
      expect(untasked[i]).toEqual(documents[i]);
      // what the query gained: word pieces the text does not hold, each below its strongest held piece
      const extra = queries[i].indices.filter((x: number) => !c.sparse.indices.includes(x));
      added += extra.length;
      const held = Math.max(...c.sparse.values);
      for (const x of extra) {
        expect(x).toBeLessThan(PIECES);
        expect(queries[i].values[queries[i].indices.indexOf(x)]).toBeLessThan(held);
      }
    });
    expect(added).toBeGreaterThan(parity.cases.length);
  });

  it("gives a phrase's word pair its own index: 'notice period' shares 'notice' and 'period' with 'period of notice' but not the pair", async () => {
    const texts = ['notice period', 'period of notice', 'notice period'];
    const body = await (await post('/v1/embeddings/sparse', { model: MODEL, texts })).json();
    const [phrase, reordered, again] = body.embeddings.map((e: { indices: number[] }) => e.indices);
    const words = phrase.filter((x: number) => x < PIECES);
    expect(words).toHaveLength(2);
    expect(phrase).toHaveLength(3); // the two words and their pair
    expect(phrase[2]).toBeGreaterThanOrEqual(PIECES);
    for (const w of words) expect(reordered).toContain(w);
    expect(reordered).not.toContain(phrase[2]);
    expect(again).toEqual(phrase);
  });

  it("gives a word's inflections one index (the bundled model's stem classes): a query's 'termination' matches a clause's 'terminated'", async () => {
    const texts = ['termination', 'terminated', 'terminates', 'term'];
    const body = await (await post('/v1/embeddings/sparse', { model: MODEL, texts })).json();
    const [termination, terminated, terminates, term] = body.embeddings.map((e: { indices: number[] }) => e.indices);
    expect(termination).toHaveLength(1);
    expect(terminated).toEqual(termination);
    expect(terminates).toEqual(termination);
    expect(term).toHaveLength(1);
    expect(term).not.toEqual(termination); // another stem
    // each is one piece of the tokenizer's own, three different ones
    const tokens = await (await post('/v1/tokenize', { model: MODEL, texts: texts.slice(0, 3), return_offsets: true })).json();
    expect(tokens.results.map((r: { tokens: { token: string }[] }) => r.tokens.map((t) => t.token))).toEqual([['termination'], ['terminated'], ['terminates']]);
  });

  it('reads texts as /v1/embeddings does (same usage, truncation), and idf weighting multiplies by the model idf', async () => {
    const long = 'The Lessee shall pay the rent on the first day of each month. '.repeat(100);
    const texts = ['Notice of termination of the lease', long];
    const sparse = await (await post('/v1/embeddings/sparse', { model: MODEL, texts })).json();
    const dense = await (await post('/v1/embeddings', { model: MODEL, texts })).json();
    expect(sparse.usage.input_tokens).toBe(dense.usage.input_tokens);
    const weighted = await (await post('/v1/embeddings/sparse', { model: MODEL, texts, weighting: 'idf' })).json();
    expect(weighted.weighting).toBe('idf');
    expect(weighted.embeddings[0].indices).toEqual(sparse.embeddings[0].indices);
    const ratios = weighted.embeddings[0].values.map((v: number, k: number) => v / sparse.embeddings[0].values[k]);
    expect(sparse.embeddings[0].indices.some((x: number) => x >= PIECES)).toBe(true); // word pairs are weighted too
    expect(new Set(ratios.map((r: number) => r.toFixed(3))).size).toBeGreaterThan(1); // a per-piece idf, not one factor
    expect(Math.min(...ratios)).toBeGreaterThan(0);
    const refused = await post('/v1/embeddings/sparse', { model: MODEL, texts: [long], overflow_strategy: null });
    expect(refused.status).toBe(400);
    expect((await refused.json()).detail).toMatch(/^texts\[0\] is \d+ tokens long, over the model's maximum of 512 input tokens/);
  });

  it('refuses bad input with a problem that names the field, needs a key where keys are on, and is documented', async () => {
    const detail = async (body: unknown) => (await (await post('/v1/embeddings/sparse', body)).json()).detail;
    expect(await detail({ model: MODEL, texts: [] })).toBe('texts must hold at least 1 text');
    expect(await detail({ model: MODEL, texts: 'x', weighting: 'bm42' })).toBe('weighting must be one of "tf", "idf", "relative"');
    expect(await detail({ model: MODEL, texts: 'x', dimensions: 8 })).toMatch(/unknown field "dimensions"; allowed fields are model, texts, task, overflow_strategy, weighting/);
    expect(await detail({ model: MODEL, texts: ['Lease', '\u200b'] })).toMatch(/^texts\[1\] has no characters the model can read/);
    const guarded = createApp({ embedder, authenticate: async () => problem('incorrectKey', 'no key') });
    expect((await post('/v1/embeddings/sparse', { model: MODEL, texts: 'x' }, guarded)).status).toBe(401);
    const doc = await (await app.request('/openapi.json')).json();
    expect(doc.paths['/v1/embeddings/sparse'].post.requestBody.content['application/json'].schema.$ref).toBe('#/components/schemas/SparseEmbeddingRequest');
    expect(Object.keys(doc.components.schemas.SparseEmbeddingResponse.properties)).toEqual(['embeddings', 'vocabulary_size', 'weighting', 'usage']);
  });

  it('is a 404 that says why where the model folder carries no lexical table', async () => {
    const tiny = await loadModelFolder(TEST_MODEL_DIR, { inference: 'main' });
    try {
      const res = await post('/v1/embeddings/sparse', { model: tiny.modelName, texts: 'x' }, createApp({ embedder: tiny }));
      expect(res.status).toBe(404);
      expect((await res.json()).detail).toMatch(/carries no lexical table \(its lexembed\.json has no "sparse" entry/);
    } finally {
      await tiny.dispose();
    }
  });

  it('client.embeddings.sparse.create() returns the response and raises the typed errors', async () => {
    const client = new Lexembed({ apiKey: null, baseURL: `${server.url}/v1` });
    const { embeddings } = await client.embeddings.sparse.create({ model: MODEL, texts: ['Lease'] });
    expect(embeddings[0]!.indices.length).toBe(1);
    await expect(client.embeddings.sparse.create({ model: MODEL, texts: 'x', weighting: 'nope' } as never)).rejects.toBeInstanceOf(BadRequestError);
  });
});

describe('hybrid search in pgvector (PGlite): a vector column and a sparsevec column, fused by reciprocal rank', () => {
  const passages = [
    'The tenant shall pay the rent on the first day of each month to the landlord at the address given in the lease.',
    'Every employer shall keep records of the wages, hours of work and overtime of each employee for three years.',
    'A creditor shall not discriminate against an applicant on a prohibited basis regarding any aspect of a credit transaction.',
    'Any person who contravenes section 12 is guilty of an offence and liable on summary conviction to a fine.',
    'The Minister may, by order, designate any area of land as a wildlife sanctuary and prohibit hunting in it.',
    'Either party may terminate this Agreement by giving the other party ninety days written notice of termination.',
  ];
  const queries: [string, number][] = [
    ['When is rent due under the lease?', 0],
    ['How long must wage and overtime records be kept?', 1],
    ['Can a lender discriminate against a credit applicant?', 2],
    ['What is the penalty for contravening section 12?', 3],
    ['Who can declare a wildlife sanctuary?', 4],
    ['How much notice is needed to terminate the agreement?', 5],
  ];
  const literal = (v: { indices: number[]; values: number[] }, size: number) => `{${v.indices.map((i, k) => `${i + 1}:${v.values[k]}`).join(',')}}/${size}`;

  it('finds the right passage for each question with dense, sparse and fused rankings', async () => {
    const db = await PGlite.create({ extensions: { vector } });
    try {
      const client = new Lexembed({ apiKey: null, baseURL: `${server.url}/v1` });
      const dims = embedder.settings.dimensions.default;
      const size = embedder.sparse!.vocabularySize;
      await db.exec(`create extension if not exists vector; create table passages (id int primary key, body text, dense vector(${dims}), terms sparsevec(${size}))`);
      const dense = await client.embeddings.create({ model: MODEL, texts: passages, task: 'retrieval/document' });
      // pgvector takes plain dot products: the documents carry the model's idf, the queries their saturated tf
      const sparse = await client.embeddings.sparse.create({ model: MODEL, texts: passages, task: 'retrieval/document', weighting: 'idf' });
      for (const [i, body] of passages.entries()) {
        await db.query('insert into passages values ($1, $2, $3, $4)', [i, body, `[${dense.embeddings[i]!.embedding.join(',')}]`, literal(sparse.embeddings[i]!, size)]);
      }
      const denseQ = await client.embeddings.create({ model: MODEL, texts: queries.map((q) => q[0]), task: 'retrieval/query' });
      const sparseQ = await client.embeddings.sparse.create({ model: MODEL, texts: queries.map((q) => q[0]), task: 'retrieval/query' });
      for (const [i, [question, expected]] of queries.entries()) {
        const params = [`[${denseQ.embeddings[i]!.embedding.join(',')}]`, literal(sparseQ.embeddings[i]!, size)];
        const top = async (sql: string, values = params) => (await db.query<{ id: number }>(sql, values)).rows[0]!.id;
        expect(await top('select id from passages order by dense <#> $1 limit 1', [params[0]!]), `dense: ${question}`).toBe(expected);
        expect(await top('select id from passages order by terms <#> $1 limit 1', [params[1]!]), `sparse: ${question}`).toBe(expected);
        const fused = `with d as (select id, row_number() over (order by dense <#> $1) as r from passages),
          s as (select id, row_number() over (order by terms <#> $2) as r from passages)
          select d.id from d join s using (id) order by 1.0 / (60 + d.r) + 1.0 / (60 + s.r) desc limit 1`;
        expect(await top(fused), `fused: ${question}`).toBe(expected);
        // score fusion (api.md: min-max over each ranking's top 100, summed), which the dev set prefers to reciprocal rank
        const scored = `with d as (select id, -(dense <#> $1) as s from passages order by dense <#> $1 limit 100),
          t as (select id, -(terms <#> $2) as s from passages order by terms <#> $2 limit 100),
          n as (select id, (s - min(s) over ()) / nullif(max(s) over () - min(s) over (), 0) as n from d
                union all select id, (s - min(s) over ()) / nullif(max(s) over () - min(s) over (), 0) from t)
          select id from n group by id order by sum(coalesce(n, 0)) desc limit 1`;
        expect(await top(scored), `score fusion: ${question}`).toBe(expected);
      }
    } finally {
      await db.close();
    }
  }, 120_000);
});
