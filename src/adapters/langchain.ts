// `lexembed/langchain`: a LangChain.js `Embeddings` that keeps lexembed's retrieval tasks:
// embedQuery embeds as `retrieval/query`, embedDocuments as `retrieval/document` (in batches of
// 128), over the HTTP client or the in-browser local client.
import { Embeddings, type EmbeddingsParams } from '@langchain/core/embeddings';
import { Lexembed, type ClientOptions } from '../client/index.ts';
import { DEFAULT_MODEL_NAME } from '../contract/index.ts';
import { BATCH_SIZE, batches, type EmbeddingsClient } from './client-shape.ts';

export interface LexembedEmbeddingsParams extends EmbeddingsParams {
  /** A client to call through: `new Lexembed(...)` or `createLocalClient(...)`. Default: a `Lexembed` from `clientOptions` (LEXEMBED_API_KEY, LEXEMBED_BASE_URL). */
  readonly client?: EmbeddingsClient;
  /** Options of the default client (apiKey, baseURL, …), when no client is given. */
  readonly clientOptions?: ClientOptions;
  /** The model name the server serves (default legal-2-embedder). */
  readonly model?: string;
  /** Keep the first d components (Matryoshka); default: the model's default. */
  readonly dimensions?: number;
  /** Texts per request, at most 128 (the API's limit). */
  readonly batchSize?: number;
}

/**
 * @example
 * const embeddings = new LexembedEmbeddings({ clientOptions: { baseURL: 'http://127.0.0.1:8080/v1' } });
 * const store = await MemoryVectorStore.fromTexts(statutes, metadata, embeddings);
 */
export class LexembedEmbeddings extends Embeddings {
  readonly client: EmbeddingsClient;
  readonly model: string;
  readonly dimensions: number | null;
  readonly batchSize: number;

  constructor(params: LexembedEmbeddingsParams = {}) {
    super(params);
    this.client = params.client ?? new Lexembed(params.clientOptions);
    this.model = params.model ?? DEFAULT_MODEL_NAME;
    this.dimensions = params.dimensions ?? null;
    this.batchSize = Math.min(params.batchSize ?? BATCH_SIZE, BATCH_SIZE);
    if (!Number.isInteger(this.batchSize) || this.batchSize < 1) throw new Error(`batchSize must be an integer from 1 to ${BATCH_SIZE}, got ${params.batchSize}`);
  }

  /** Documents to search, embedded as `retrieval/document`, in input order. */
  async embedDocuments(documents: string[]): Promise<number[][]> {
    const parts = await Promise.all(batches(documents, this.batchSize).map((texts) => this.embed(texts, 'retrieval/document')));
    return parts.flat();
  }

  /** A search query, embedded as `retrieval/query`. */
  async embedQuery(query: string): Promise<number[]> {
    return (await this.embed([query], 'retrieval/query'))[0]!;
  }

  private async embed(texts: string[], task: 'retrieval/query' | 'retrieval/document'): Promise<number[][]> {
    const response = await this.caller.call(async () => this.client.embeddings.create({ model: this.model, texts, task, dimensions: this.dimensions }));
    return response.embeddings.map((e) => e.embedding);
  }
}
