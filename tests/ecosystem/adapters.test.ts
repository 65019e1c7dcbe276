// lexembed/langchain and lexembed/ai-sdk with the real LangChain and AI SDK packages, against the
// real `lexembed serve` process through the HTTP client: tasks kept (vectors equal the spec route's
// with the task), batching to 128, a MemoryVectorStore retrieval, embedMany / embed / rerank, and
// errors as the frameworks expect them.
import { APICallError, NoSuchModelError } from '@ai-sdk/provider';
import { MemoryVectorStore } from '@langchain/classic/vectorstores/memory';
import { embed, embedMany, rerank } from 'ai';
import { beforeAll, describe, expect, it } from 'vitest';
import { cosine, MODEL, STATUTES, useKeyedServer } from './fixtures.ts';
import { createLexembed } from '../../src/adapters/ai-sdk.ts';
import type { EmbeddingsClient, RerankingsClient } from '../../src/adapters/client-shape.ts';
import { LexembedEmbeddings } from '../../src/adapters/langchain.ts';
import { LexembedEmbedding, LexembedRerank } from '../../src/adapters/llamaindex.ts';
import { MetadataMode, TextNode } from '@llamaindex/core/schema';
import { Lexembed } from '../../src/client/index.ts';
import type { LocalClient } from '../../src/local/client.ts';

// The in-browser local client has the shape both adapters take (checked by the type checker).
const localClientFits: (c: LocalClient) => EmbeddingsClient & RerankingsClient = (c) => c;
void localClientFits;

const server = useKeyedServer();
let client: Lexembed;
beforeAll(() => void (client = new Lexembed({ apiKey: server.key, baseURL: `${server.url}/v1` })));

const spec = async (texts: string[], task: 'retrieval/query' | 'retrieval/document' | null) =>
  (await client.embeddings.create({ model: MODEL, texts, task })).embeddings.map((e) => e.embedding);

/** Counts the requests an adapter makes and their sizes, passing them on to the real client. */
function counting(inner: Lexembed) {
  const sizes: number[] = [];
  const counted: EmbeddingsClient = {
    embeddings: { create: (params, options) => (sizes.push(typeof params.texts === 'string' ? 1 : params.texts.length), inner.embeddings.create(params, options)) },
  };
  return { counted, sizes };
}

describe('lexembed/langchain', () => {
  it('embedQuery is retrieval/query and embedDocuments retrieval/document, equal to the spec route', async () => {
    const embeddings = new LexembedEmbeddings({ model: MODEL, client });
    expect(cosine(await embeddings.embedQuery('deposit refund'), (await spec(['deposit refund'], 'retrieval/query'))[0]!)).toBeGreaterThanOrEqual(0.999999);
    const docs = await embeddings.embedDocuments(STATUTES);
    const expected = await spec(STATUTES, 'retrieval/document');
    docs.forEach((d, i) => expect(cosine(d, expected[i]!)).toBeGreaterThanOrEqual(0.999999));
  });

  it('batches to 128 texts a request, in order', async () => {
    const { counted, sizes } = counting(client);
    const texts = Array.from({ length: 300 }, (_, i) => `Section ${i}. ${STATUTES[i % 4]}`);
    const vectors = await new LexembedEmbeddings({ model: MODEL, client: counted, dimensions: 64 }).embedDocuments(texts);
    expect(sizes).toEqual([128, 128, 44]);
    expect(vectors).toHaveLength(300);
    expect(vectors[299]).toHaveLength(64);
    expect(cosine(vectors[299]!, vectors[3]!)).toBeLessThan(0.9999); // different texts, not a repeated batch
    expect(() => new LexembedEmbeddings({ model: MODEL, client, batchSize: 0 })).toThrow(/batchSize must be an integer from 1 to 128/);
  });

  it('a MemoryVectorStore over statutes returns the right one first', async () => {
    const store = await MemoryVectorStore.fromTexts(STATUTES, STATUTES.map((_, id) => ({ id })), new LexembedEmbeddings({ model: MODEL, client }));
    const ask = async (q: string) => (await store.similaritySearch(q, 1))[0]!.metadata.id;
    expect(await ask('When must a landlord give back the deposit?')).toBe(0);
    expect(await ask('drunk driving')).toBe(1);
    expect(await ask('time and a half for extra hours')).toBe(2);
    expect(await ask('witnesses needed to sign a testament')).toBe(3);
  });
});

describe('lexembed/ai-sdk', () => {
  const provider = () => createLexembed({ client });

  it('embedMany with the task as a provider option, and embed for a query, equal the spec route', async () => {
    const { embeddings, usage } = await embedMany({ model: provider().embeddingModel(MODEL), values: STATUTES, providerOptions: { lexembed: { task: 'retrieval/document' } } });
    const expected = await spec(STATUTES, 'retrieval/document');
    embeddings.forEach((e, i) => expect(cosine(e, expected[i]!)).toBeGreaterThanOrEqual(0.999999));
    expect(usage.tokens).toBeGreaterThan(40);
    const { embedding } = await embed({ model: provider()(MODEL), value: 'deposit refund', providerOptions: { lexembed: { task: 'retrieval/query', dimensions: 32 } } });
    expect(embedding).toHaveLength(32);
  });

  it('embedMany splits 300 values into calls of 128', async () => {
    const { counted, sizes } = counting(client);
    const { embeddings } = await embedMany({ model: createLexembed({ client: counted }).embeddingModel(MODEL), values: Array.from({ length: 300 }, (_, i) => `clause ${i}`) });
    expect(embeddings).toHaveLength(300);
    expect([...sizes].sort((a, b) => b - a)).toEqual([128, 128, 44]);
  });

  it('rerank through POST /v1/rerankings puts the right statute first', async () => {
    const { ranking, rerankedDocuments } = await rerank({ model: provider().rerankingModel(), query: 'return of a rental deposit', documents: STATUTES, topN: 2 });
    expect(ranking).toHaveLength(2);
    expect(ranking[0]!.originalIndex).toBe(0);
    expect(rerankedDocuments[0]).toBe(STATUTES[0]);
    expect(ranking[0]!.score).toBeGreaterThan(ranking[1]!.score);
  });

  it('errors are the AI SDK’s: APICallError with the status for a refused call, InvalidArgumentError for a bad option, NoSuchModelError for a chat model', async () => {
    const refused = await embedMany({ model: provider().embeddingModel('text-embedding-3-small'), values: ['x'], maxRetries: 0 }).catch((e: unknown) => e);
    expect(APICallError.isInstance(refused)).toBe(true);
    expect(refused).toMatchObject({ statusCode: 400, isRetryable: false, message: expect.stringMatching(/model must be "legal-2-embedder-static"/) });
    await expect(embedMany({ model: provider().embeddingModel(MODEL), values: ['x'], providerOptions: { lexembed: { task: 'search' } } })).rejects.toThrow(/task must be one of "retrieval\/query", "retrieval\/document" or null/);
    expect(() => provider().languageModel('gpt')).toThrow(NoSuchModelError);
  });
});

describe('lexembed/llamaindex (LlamaIndex.TS core)', () => {
  it('LexembedEmbedding: queries as retrieval/query, texts and nodes as retrieval/document, equal to the spec route; 128 a request', async () => {
    const embedding = new LexembedEmbedding({ model: MODEL, client });
    expect(cosine((await embedding.getQueryEmbedding({ type: 'text', text: 'deposit refund' }))!, (await spec(['deposit refund'], 'retrieval/query'))[0]!)).toBeGreaterThanOrEqual(0.999999);
    const expected = await spec(STATUTES, 'retrieval/document');
    expect(cosine(await embedding.getTextEmbedding(STATUTES[0]!), expected[0]!)).toBeGreaterThanOrEqual(0.999999);
    // LlamaIndex's own transform: nodes get their embedding, through getTextEmbeddings.
    const nodes = await embedding(STATUTES.map((text) => new TextNode({ text })));
    nodes.forEach((n, i) => expect(cosine(n.embedding!, expected[i]!)).toBeGreaterThanOrEqual(0.999999));
    const { counted, sizes } = counting(client);
    const many = await new LexembedEmbedding({ model: MODEL, client: counted, dimensions: 64 }).getTextEmbeddings(Array.from({ length: 300 }, (_, i) => `clause ${i}`));
    expect(sizes).toEqual([128, 128, 44]);
    expect(many[299]).toHaveLength(64);
  });

  it('LexembedRerank reorders retrieved nodes by the reranker, scores from /v1/rerankings, topN kept', async () => {
    const nodes = [...STATUTES].reverse().map((text, i) => ({ node: new TextNode({ text }), score: i }));
    const reranked = await new LexembedRerank({ client, topN: 2 }).postprocessNodes(nodes, 'return of a rental deposit');
    expect(reranked).toHaveLength(2);
    expect(reranked[0]!.node.getContent(MetadataMode.NONE)).toBe(STATUTES[0]);
    expect(reranked[0]!.score!).toBeGreaterThan(reranked[1]!.score!);
    await expect(new LexembedRerank({ client }).postprocessNodes(nodes)).rejects.toThrow('needs the query text');
  });
});
