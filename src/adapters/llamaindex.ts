// `lexembed/llamaindex`: LlamaIndex.TS pieces over a lexembed client (HTTP or in-browser local):
// an embedding (`BaseEmbedding`) that keeps the retrieval tasks (queries as `retrieval/query`,
// nodes and texts as `retrieval/document`, in batches of 128), and a node postprocessor that
// reranks retrieved nodes with POST /v1/rerankings.
import { BaseEmbedding } from '@llamaindex/core/embeddings';
import type { BaseNodePostprocessor } from '@llamaindex/core/postprocessor';
import { MetadataMode, type NodeWithScore } from '@llamaindex/core/schema';
import { Lexembed, type ClientOptions } from '../client/index.ts';
import { DEFAULT_MODEL_NAME, DEFAULT_RERANK_MODEL_NAME } from '../contract/index.ts';
import { BATCH_SIZE, batches, type EmbeddingsClient, type RerankingsClient } from './client-shape.ts';

export interface LexembedEmbeddingOptions {
  /** A client to call through: `new Lexembed(...)` or `createLocalClient(...)`. Default: a `Lexembed` from `clientOptions`. */
  readonly client?: EmbeddingsClient;
  readonly clientOptions?: ClientOptions;
  /** The model name the server serves (default legal-2-embedder). */
  readonly model?: string;
  /** Keep the first d components (Matryoshka); default: the model's default. */
  readonly dimensions?: number;
}

/**
 * @example
 * Settings.embedModel = new LexembedEmbedding({ clientOptions: { baseURL: 'http://127.0.0.1:8080/v1' } });
 * const index = await VectorStoreIndex.fromDocuments(documents);
 */
export class LexembedEmbedding extends BaseEmbedding {
  readonly client: EmbeddingsClient;
  readonly model: string;
  readonly dimensions: number | null;

  constructor(options: LexembedEmbeddingOptions = {}) {
    super();
    this.client = options.client ?? new Lexembed(options.clientOptions);
    this.model = options.model ?? DEFAULT_MODEL_NAME;
    this.dimensions = options.dimensions ?? null;
    this.embedBatchSize = BATCH_SIZE;
    // A property in BaseEmbedding (one request per batch of texts).
    this.getTextEmbeddings = async (texts) => (await Promise.all(batches(texts, BATCH_SIZE).map((t) => this.embed(t, 'retrieval/document')))).flat();
  }

  /** A text to be searched (a node's content), as `retrieval/document`. */
  async getTextEmbedding(text: string): Promise<number[]> {
    return (await this.embed([text], 'retrieval/document'))[0]!;
  }

  /** A search query, as `retrieval/query` (text parts only: lexembed embeds text). */
  override async getQueryEmbedding(query: Parameters<BaseEmbedding['getQueryEmbedding']>[0]): Promise<number[] | null> {
    const text = typeof query === 'string' ? query : query.type === 'text' ? query.text : null;
    return text === null ? null : (await this.embed([text], 'retrieval/query'))[0]!;
  }

  private async embed(texts: string[], task: 'retrieval/query' | 'retrieval/document'): Promise<number[][]> {
    const response = await this.client.embeddings.create({ model: this.model, texts, task, dimensions: this.dimensions });
    return response.embeddings.map((e) => e.embedding);
  }
}

export interface LexembedRerankOptions {
  readonly client?: RerankingsClient;
  readonly clientOptions?: ClientOptions;
  /** Nodes kept, best first (default: all, reordered). */
  readonly topN?: number;
  /** The reranker's name (default legal-2-reranker). */
  readonly model?: string;
}

/**
 * Reorders retrieved nodes by lexembed's reranker; each node's score becomes the reranker's.
 * @example const engine = index.asQueryEngine({ nodePostprocessors: [new LexembedRerank({ topN: 5 })] });
 */
export class LexembedRerank implements BaseNodePostprocessor {
  readonly client: RerankingsClient;
  readonly topN: number | null;
  readonly model: string;

  constructor(options: LexembedRerankOptions = {}) {
    this.client = options.client ?? new Lexembed(options.clientOptions);
    this.topN = options.topN ?? null;
    this.model = options.model ?? DEFAULT_RERANK_MODEL_NAME;
  }

  async postprocessNodes(nodes: NodeWithScore[], query?: Parameters<BaseNodePostprocessor['postprocessNodes']>[1]): Promise<NodeWithScore[]> {
    if (!nodes.length) return nodes;
    const text = typeof query === 'string' ? query : query?.map((part) => (part.type === 'text' ? part.text : '')).join(' ').trim();
    if (!text) throw new Error('LexembedRerank needs the query text to rerank nodes');
    const { results } = await this.client.rerankings.create({
      model: this.model,
      query: text,
      texts: nodes.map((n) => n.node.getContent(MetadataMode.NONE)),
      top_n: this.topN,
    });
    return results.map((r) => ({ ...nodes[r.index]!, score: r.score }));
  }
}
