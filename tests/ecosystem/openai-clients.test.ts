// The OpenAI-compatible API with the real packages the ecosystem reaches it through, against the
// real `lexembed serve` process: the `openai` client (its default base64 and floats, its typed
// errors), LangChain's OpenAIEmbeddings in a MemoryVectorStore retrieval, and the AI SDK's
// OpenAI-compatible provider.
import OpenAI from 'openai';
import { OpenAIEmbeddings } from '@langchain/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { embedMany } from 'ai';
import { MemoryVectorStore } from '@langchain/classic/vectorstores/memory';
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { runCli } from '../support/cli.ts';
import { cosine, MODEL, STATUTES, useKeyedServer } from './fixtures.ts';

const server = useKeyedServer();

/** The spec route's vectors for the same texts and task, to compare with. */
async function specVectors(texts: string[], task: string | null = null): Promise<number[][]> {
  const res = await fetch(`${server.url}/v1/embeddings`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${server.key}` },
    body: JSON.stringify({ model: MODEL, texts, task }),
  });
  return ((await res.json()) as { embeddings: { embedding: number[] }[] }).embeddings.map((e) => e.embedding);
}

describe('the openai client', () => {
  const client = () => new OpenAI({ apiKey: server.key, baseURL: `${server.url}/openai/v1`, maxRetries: 0 });

  it('embeddings.create with its default (it asks for base64 and decodes it) gives the spec route vectors', async () => {
    const res = await client().embeddings.create({ model: MODEL, input: STATUTES });
    expect(res.data).toHaveLength(4);
    expect(res.data[0]!.embedding).toHaveLength(1536);
    const expected = await specVectors(STATUTES);
    res.data.forEach((d, i) => expect(cosine(d.embedding, expected[i]!)).toBeGreaterThanOrEqual(0.999999));
    expect(res.usage.prompt_tokens).toBeGreaterThan(40);
  });

  it('floats on request, dimensions, and the query alias equal the spec route with task retrieval/query', async () => {
    const floats = await client().embeddings.create({ model: `${MODEL}:query`, input: 'return of a rental deposit', encoding_format: 'float', dimensions: 128 });
    expect(floats.data[0]!.embedding).toHaveLength(128);
    const full = (await specVectors(['return of a rental deposit'], 'retrieval/query'))[0]!;
    const head = full.slice(0, 128);
    const norm = Math.hypot(...head);
    expect(cosine(floats.data[0]!.embedding, head.map((x) => x / norm))).toBeGreaterThanOrEqual(0.999999);
  });

  it('raises its own typed errors with our code and param', async () => {
    const badModel = await client().embeddings.create({ model: 'text-embedding-3-small', input: 'x' }).catch((e: unknown) => e);
    expect(badModel).toBeInstanceOf(OpenAI.BadRequestError);
    expect(badModel).toMatchObject({ status: 400, code: 'invalid_request', param: 'model', type: 'invalid_request_error' });
    const wrongKey = await new OpenAI({ apiKey: 'lxk_v1_nope', baseURL: `${server.url}/openai/v1`, maxRetries: 0 }).embeddings.create({ model: MODEL, input: 'x' }).catch((e: unknown) => e);
    expect(wrongKey).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((wrongKey as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe('invalid_api_key');
  });

  it('a rate limit is its RateLimitError after the retries it allows (honouring Retry-After); a spent quota is thrown at once, type insufficient_quota', async () => {
    const limited = await runCli(['keys', 'create', '--account', 'openai-limited', '--rpm', '1', '--data-dir', join(server.dir, '.lexembed')]);
    const key = limited.stdout.trim().split('\n').at(-1)!;
    let hits = 0;
    const counting: typeof fetch = (input, init) => (hits++, fetch(input, init));
    const limitedClient = new OpenAI({ apiKey: key, baseURL: `${server.url}/openai/v1`, maxRetries: 0, fetch: counting });
    await limitedClient.embeddings.create({ model: MODEL, input: 'x' });
    const refused = await limitedClient.embeddings.create({ model: MODEL, input: 'x' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    expect(refused).toMatchObject({ status: 429, code: 'rate_limit_exceeded', type: 'requests' });
    expect(Number((refused as InstanceType<typeof OpenAI.RateLimitError>).headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);

    const quota = await runCli(['keys', 'create', '--account', 'openai-quota', '--data-dir', join(server.dir, '.lexembed')]);
    await runCli(['accounts', 'set', 'openai-quota', '--monthly-tokens', '3', '--data-dir', join(server.dir, '.lexembed')]);
    hits = 0;
    // maxRetries 2: a retryable 429 would be sent three times; x-should-retry: false stops it at one.
    const spent = await new OpenAI({ apiKey: quota.stdout.trim().split('\n').at(-1)!, baseURL: `${server.url}/openai/v1`, maxRetries: 2, fetch: counting })
      .embeddings.create({ model: MODEL, input: 'the tenant shall pay rent' })
      .catch((e: unknown) => e);
    expect(spent).toBeInstanceOf(OpenAI.RateLimitError);
    expect(spent).toMatchObject({ status: 429, code: 'insufficient_quota', type: 'insufficient_quota' });
    expect(hits).toBe(1);
  });

  it('models.list lists the model and its aliases', async () => {
    const ids: string[] = [];
    for await (const m of client().models.list()) ids.push(m.id);
    expect(ids).toEqual([MODEL, `${MODEL}:query`, `${MODEL}:document`]);
  });
});

describe("LangChain's OpenAIEmbeddings", () => {
  it('finds the right statute first in a MemoryVectorStore, documents and queries embedded through the aliases', async () => {
    const configuration = { baseURL: `${server.url}/openai/v1` };
    const documents = new OpenAIEmbeddings({ model: `${MODEL}:document`, apiKey: server.key, configuration });
    const queries = new OpenAIEmbeddings({ model: `${MODEL}:query`, apiKey: server.key, configuration });
    const store = await MemoryVectorStore.fromTexts(STATUTES, STATUTES.map((_, id) => ({ id })), documents);
    store.embeddings = queries; // similaritySearch embeds the query with the store's embeddings
    const ask = async (q: string) => (await store.similaritySearch(q, 1))[0]!.metadata.id;
    expect(await ask('When must a landlord give back the deposit?')).toBe(0);
    expect(await ask('drunk driving')).toBe(1);
    expect(await ask('time and a half for extra hours')).toBe(2);
    expect(await ask('witnesses needed to sign a testament')).toBe(3);
    // The vectors are the spec route's, task and all.
    const [viaLangChain] = await documents.embedDocuments([STATUTES[0]!]);
    expect(cosine(viaLangChain!, (await specVectors([STATUTES[0]!], 'retrieval/document'))[0]!)).toBeGreaterThanOrEqual(0.999999);
  });
});

describe("the AI SDK's OpenAI-compatible provider", () => {
  it('embedMany with a base URL and a key gives the spec route vectors, the task from the model alias', async () => {
    const provider = createOpenAICompatible({ name: 'lexembed', baseURL: `${server.url}/openai/v1`, apiKey: server.key });
    const { embeddings, usage } = await embedMany({ model: provider.embeddingModel(`${MODEL}:document`), values: STATUTES });
    const expected = await specVectors(STATUTES, 'retrieval/document');
    embeddings.forEach((e, i) => expect(cosine(e, expected[i]!)).toBeGreaterThanOrEqual(0.999999));
    expect(usage.tokens).toBeGreaterThan(40);
  });
});
