// lexembed/ai-sdk with AI SDK 7 (the `ai` 7 line, provider specification v4; Node ≥ 22, so
// `npm run test:node-versions` runs it on Node 22 and 24 and the machine's Node 20 skips it): the
// real `ai` 7 package against an in-process server on the bundled static model, through the HTTP
// client. Spec v3 models (the default, for AI SDK 6 and 7) and v4 models both honour AI SDK 7's
// call-level `dimensions`; AI SDK 6 refuses v4 models with its own error.
import { embedMany as embedMany6, UnsupportedModelVersionError } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLexembed } from '../../src/adapters/ai-sdk.ts';
import { Lexembed } from '../../src/client/index.ts';
import { createApp } from '../../src/http/app.ts';
import { loadModelFolder, STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { startServer, type RunningServer } from '../../src/node/server.ts';
import type { Embedder } from '../../src/embedder/types.ts';
import { cosine, MODEL, STATUTES } from './fixtures.ts';

const NODE_MAJOR = Number(process.versions.node.split('.')[0]);
let ai7: typeof import('ai7');
let embedder: Embedder;
let server: RunningServer;
let client: Lexembed;

describe.runIf(NODE_MAJOR >= 22)('lexembed/ai-sdk with AI SDK 7 (Node ≥ 22)', () => {
  beforeAll(async () => {
    ai7 = await import('ai7');
    embedder = await loadModelFolder(STATIC_MODEL_DIR, { inference: 'main' });
    server = await startServer(createApp({ embedder }), { port: 0, host: '127.0.0.1' });
    client = new Lexembed({ apiKey: null, baseURL: `${server.url}/v1` });
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await embedder?.dispose();
  });

  const spec = async (texts: string[], dimensions: number | null) =>
    (await client.embeddings.create({ model: MODEL, texts, task: 'retrieval/document', dimensions })).embeddings.map((e) => e.embedding);

  it.each(['v3', 'v4'] as const)('embedMany and embed with spec %s: call-level dimensions and the task kept, equal to the spec route', async (version) => {
    const provider = createLexembed({ client, specificationVersion: version });
    const model = provider.embeddingModel(MODEL);
    expect(model.specificationVersion).toBe(version);
    const { embeddings, usage } = await ai7.embedMany({ model, values: STATUTES, dimensions: 128, providerOptions: { lexembed: { task: 'retrieval/document' } } });
    const expected = await spec(STATUTES, 128);
    expect(embeddings.map((e) => e.length)).toEqual([128, 128, 128, 128]);
    embeddings.forEach((e, i) => expect(cosine(e, expected[i]!)).toBeGreaterThanOrEqual(0.999999));
    expect(usage.tokens).toBeGreaterThan(40);
    const one = await ai7.embed({ model, value: STATUTES[0]!, dimensions: 64, providerOptions: { lexembed: { task: 'retrieval/document' } } });
    expect(one.embedding).toHaveLength(64);
  });

  it('rerank with AI SDK 7 puts the right statute first; disagreeing dimensions are refused', async () => {
    const provider = createLexembed({ client, specificationVersion: 'v4' });
    const { ranking } = await ai7.rerank({ model: provider.rerankingModel(), query: 'return of a rental deposit', documents: STATUTES, topN: 2 });
    expect(ranking[0]!.originalIndex).toBe(0);
    await expect(ai7.embed({ model: provider.embeddingModel(MODEL), value: 'x', dimensions: 64, providerOptions: { lexembed: { dimensions: 32 } } })).rejects.toThrow(/dimensions 64 and providerOptions\.lexembed\.dimensions 32 disagree/);
  });

  it('AI SDK 6 refuses a v4 model with its own error, and takes the default v3', async () => {
    const error = await embedMany6({ model: createLexembed({ client, specificationVersion: 'v4' }).embeddingModel(MODEL), values: ['x'] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnsupportedModelVersionError);
    expect((await embedMany6({ model: createLexembed({ client }).embeddingModel(MODEL), values: ['x'] })).embeddings[0]).toHaveLength(embedder.settings.dimensions.default);
  });
});

