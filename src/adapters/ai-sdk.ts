// `lexembed/ai-sdk`: an AI SDK provider. Its embedding model takes lexembed's task as a provider
// option (`providerOptions: { lexembed: { task: 'retrieval/query' } }`), and its reranking model
// calls POST /v1/rerankings; both over the HTTP client or the in-browser local client.
import {
  APICallError,
  InvalidArgumentError,
  NoSuchModelError,
  type EmbeddingModelV3,
  type ProviderV3,
  type RerankingModelV3,
  type SharedV3ProviderOptions,
} from '@ai-sdk/provider';
import { z } from 'zod';
import { APIError, Lexembed, type ClientOptions } from '../client/index.ts';
import { DEFAULT_MODEL_NAME, DEFAULT_RERANK_MODEL_NAME, TASKS, type Task } from '../contract/index.ts';
import { BATCH_SIZE, type EmbeddingsClient, type RerankingsClient } from './client-shape.ts';

export interface LexembedProviderSettings {
  /** A client to call through: `new Lexembed(...)` or `createLocalClient(...)`. Default: a `Lexembed` from `clientOptions`. */
  readonly client?: EmbeddingsClient & Partial<RerankingsClient>;
  /** Options of the default client (apiKey, baseURL, …), when no client is given. */
  readonly clientOptions?: ClientOptions;
  /**
   * The AI SDK provider specification the models implement: `v3` (default) works with AI SDK 6
   * and 7 (7 wraps v3 models; lexembed honours its call-level `dimensions` either way); `v4` is
   * AI SDK 7's own (AI SDK 6 refuses it).
   */
  readonly specificationVersion?: 'v3' | 'v4';
}

/** `providerOptions.lexembed` of an embedding call. */
export interface LexembedEmbeddingOptions {
  /** `retrieval/query` for search queries, `retrieval/document` for what is searched; absent or null: none. */
  readonly task?: Task | null;
  /** Keep the first d components (Matryoshka). */
  readonly dimensions?: number | null;
}

export interface LexembedProvider extends ProviderV3 {
  (modelId?: string): EmbeddingModelV3;
  embeddingModel(modelId?: string): EmbeddingModelV3;
  textEmbeddingModel(modelId?: string): EmbeddingModelV3;
  rerankingModel(modelId?: string): RerankingModelV3;
}

/**
 * @example
 * const lexembed = createLexembed({ clientOptions: { baseURL: 'http://127.0.0.1:8080/v1' } });
 * const { embeddings } = await embedMany({ model: lexembed.embeddingModel(), values: statutes,
 *   providerOptions: { lexembed: { task: 'retrieval/document' } } });
 * const { ranking } = await rerank({ model: lexembed.rerankingModel(), query, documents: statutes });
 */
export function createLexembed(settings: LexembedProviderSettings = {}): LexembedProvider {
  let client = settings.client;
  const theClient = () => (client ??= new Lexembed(settings.clientOptions));
  // The v4 objects have the v3 shape (v4 adds the call's `dimensions`, read below either way).
  const spec = (settings.specificationVersion ?? 'v3') as 'v3';
  if (spec !== 'v3' && spec !== ('v4' as string)) throw new InvalidArgumentError({ argument: 'specificationVersion', message: `specificationVersion must be "v3" or "v4", got ${JSON.stringify(spec)}` });

  const embeddingModel = (modelId: string = DEFAULT_MODEL_NAME): EmbeddingModelV3 => ({
    specificationVersion: spec,
    provider: 'lexembed',
    modelId,
    maxEmbeddingsPerCall: BATCH_SIZE,
    supportsParallelCalls: true,
    async doEmbed(options) {
      const { values, abortSignal, providerOptions } = options;
      const { task, dimensions } = embeddingOptions(providerOptions, (options as { dimensions?: unknown }).dimensions);
      const response = await call(theClient(), () => theClient().embeddings.create({ model: modelId, texts: values, task, dimensions }, { signal: abortSignal }), { values });
      return { embeddings: response.embeddings.map((e) => e.embedding), usage: { tokens: response.usage.input_tokens }, warnings: [] };
    },
  });

  const rerankingModel = (modelId: string = DEFAULT_RERANK_MODEL_NAME): RerankingModelV3 => ({
    specificationVersion: spec,
    provider: 'lexembed',
    modelId,
    async doRerank({ documents, query, topN, abortSignal }) {
      const reranker = theClient();
      if (!reranker.rerankings) throw new InvalidArgumentError({ argument: 'client', message: 'this client has no rerankings.create(); pass a Lexembed client or a local client' });
      // Objects are ranked by their JSON text, as other providers do.
      const texts = documents.type === 'text' ? documents.values : documents.values.map((v) => JSON.stringify(v));
      const response = await call(reranker, () => reranker.rerankings!.create({ model: modelId, query, texts, top_n: topN ?? null }, { signal: abortSignal }), { query, topN });
      return { ranking: response.results.map((r) => ({ index: r.index, relevanceScore: r.score })) };
    },
  });

  const noSuchModel = (modelType: 'languageModel' | 'imageModel') => (modelId: string): never => {
    throw new NoSuchModelError({ modelId, modelType, message: `lexembed serves embedding and reranking models only, not a ${modelType} ("${modelId}")` });
  };
  const provider = Object.assign((modelId?: string) => embeddingModel(modelId), {
    specificationVersion: spec,
    embeddingModel,
    textEmbeddingModel: embeddingModel,
    rerankingModel,
    languageModel: noSuchModel('languageModel'),
    imageModel: noSuchModel('imageModel'),
  });
  return provider;
}

/** The default provider: a `Lexembed` client from LEXEMBED_API_KEY and LEXEMBED_BASE_URL. */
export const lexembed: LexembedProvider = createLexembed();

const EmbeddingOptionsSchema = z.object({
  task: z.enum(TASKS, { error: (iss) => `task must be one of ${TASKS.map((t) => `"${t}"`).join(', ')} or null, got ${JSON.stringify(iss.input)}` }).nullable().default(null),
  dimensions: z
    .number({ error: (iss) => `dimensions must be an integer of at least 1, got ${JSON.stringify(iss.input)}` })
    .int({ error: (iss) => `dimensions must be an integer of at least 1, got ${JSON.stringify(iss.input)}` })
    .min(1, { error: (iss) => `dimensions must be an integer of at least 1, got ${JSON.stringify(iss.input)}` })
    .nullable()
    .default(null),
});

/**
 * The call's task and dimensions: `providerOptions.lexembed`, and the AI SDK 7 call's own
 * `dimensions` (spec v4; a v3 model gets it too when AI SDK 7 wraps it), which must agree.
 */
function embeddingOptions(providerOptions: SharedV3ProviderOptions | undefined, callDimensions: unknown): { task: Task | null; dimensions: number | null } {
  const parsed = EmbeddingOptionsSchema.safeParse(providerOptions?.lexembed ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InvalidArgumentError({ argument: `providerOptions.lexembed.${String(issue.path[0])}`, message: issue.message });
  }
  const { task, dimensions } = parsed.data;
  if (callDimensions === undefined || callDimensions === null) return { task, dimensions };
  const call = EmbeddingOptionsSchema.shape.dimensions.safeParse(callDimensions);
  if (!call.success || call.data === null) throw new InvalidArgumentError({ argument: 'dimensions', message: call.success ? 'dimensions must be an integer of at least 1' : call.error.issues[0]!.message });
  if (dimensions !== null && dimensions !== call.data) {
    throw new InvalidArgumentError({ argument: 'dimensions', message: `dimensions ${call.data} and providerOptions.lexembed.dimensions ${dimensions} disagree; give one` });
  }
  return { task, dimensions: call.data };
}

/**
 * Runs a client call; an HTTP error answer becomes the AI SDK's APICallError (its status, headers,
 * body and message), not retried again: the lexembed client has already retried what it may.
 */
async function call<T>(client: object, run: () => PromiseLike<T>, requestBodyValues: unknown): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof APIError) || error.status === undefined) throw error;
    throw new APICallError({
      message: error.message,
      url: (client as { baseURL?: string }).baseURL ?? 'lexembed local client',
      requestBodyValues,
      statusCode: error.status,
      responseHeaders: error.headers ? Object.fromEntries(error.headers.entries()) : undefined,
      responseBody: error.body === undefined ? undefined : JSON.stringify(error.body),
      cause: error,
      isRetryable: false,
    });
  }
}
