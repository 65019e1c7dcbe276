// POST /v1/tokenize on the bundled model: counts equal what /v1/embeddings reports as usage,
// offsets on request, the embeddings route's auth and problems, OpenAPI, and client.tokenize.create().
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BadRequestError, Lexembed } from '../../src/client/index.ts';
import { problem } from '../../src/contract/index.ts';
import { createApp } from '../../src/http/app.ts';
import { BUNDLED_MODEL_DIR, loadModelFolder } from '../../src/node/runtime/load-model.ts';
import { startServer, type RunningServer } from '../../src/node/server.ts';
import type { Embedder } from '../../src/embedder/types.ts';

const MODEL = 'legal-2-embedder';
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
const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  app.request(path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

describe('POST /v1/tokenize', () => {
  it('counts each text as /v1/embeddings would (task prompt and special tokens included, before truncation)', async () => {
    const long = 'The Lessee shall pay the rent. '.repeat(200);
    const texts = ['Notice of termination', long];
    const res = await post('/v1/tokenize', { model: MODEL, texts, task: 'retrieval/query' });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.max_input_tokens).toBe(512);
    const usage = (await (await post('/v1/embeddings', { model: MODEL, texts: texts[0], task: 'retrieval/query' })).json()).usage.input_tokens;
    expect(body.results[0]).toEqual({ index: 0, input_tokens: usage });
    expect(body.results[1].input_tokens).toBeGreaterThan(1000); // not truncated: the client can plan chunks
    expect(body.results[1].tokens).toBeUndefined();
  });

  it('return_offsets gives each token of the text with offsets into it', async () => {
    const text = 'Subleasing is void. § 4';
    const body = await (await post('/v1/tokenize', { model: MODEL, texts: text, return_offsets: true })).json();
    const tokens = body.results[0].tokens as { token: string; start: number; end: number }[];
    expect(tokens.map((t) => t.token)).toEqual(['sub', '##lea', '##sing', 'is', 'void', '.', '§', '4']);
    expect(tokens.map((t) => text.slice(t.start, t.end))).toEqual(['Sub', 'lea', 'sing', 'is', 'void', '.', '§', '4']);
    expect(body.results[0].input_tokens).toBe(tokens.length + 2);
  });

  it('refuses bad input with the embeddings route\'s problems, and needs a key where keys are on', async () => {
    const detail = async (body: unknown) => (await (await post('/v1/tokenize', body)).json()).detail;
    expect(await detail({ model: MODEL, texts: [] })).toBe('texts must hold at least 1 text');
    expect(await detail({ model: MODEL, texts: 'x', return_offsets: 'yes' })).toBe('return_offsets must be true or false');
    expect(await detail({ model: MODEL, texts: 'x', offsets: true })).toMatch(/unknown field "offsets"; allowed fields are model, texts, task, return_offsets/);
    const guarded = createApp({ embedder, authenticate: async () => problem('incorrectKey', 'no key') });
    expect((await guarded.request('/v1/tokenize', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(401);
    const doc = await (await app.request('/openapi.json')).json();
    expect(doc.paths['/v1/tokenize'].post.requestBody.content['application/json'].schema.$ref).toBe('#/components/schemas/TokenizeRequest');
    expect(Object.keys(doc.components.schemas.TokenizeResponse.properties)).toEqual(['results', 'max_input_tokens']);
  });

  it('client.tokenize.create() returns the response and raises the typed errors', async () => {
    const client = new Lexembed({ apiKey: null, baseURL: `${server.url}/v1` });
    const { results } = await client.tokenize.create({ model: MODEL, texts: ['Lease'], return_offsets: true });
    expect(results[0]!.tokens![0]).toEqual({ token: 'lease', start: 0, end: 5 });
    await expect(client.tokenize.create({ model: 'other', texts: 'x' } as never)).rejects.toBeInstanceOf(BadRequestError);
  });
});
