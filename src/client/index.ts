// The lexembed client: `new Lexembed().embeddings.create({...})`, on fetch, with no runtime
// dependencies, for browsers, Node and edge runtimes.
import type { EmbeddingRequestInput, EmbeddingResponse, RerankRequestInput, RerankResponse, SearchRequest, SearchResponse, SparseRequest, SparseResponse, TokenizeRequest, TokenizeResponse } from '../contract/index.ts';
import { Transport, type APIPromise, type ClientOptions, type RequestOptions } from './core.ts';

export * from './errors.ts';
export { DEFAULT_BASE_URL, unwrapPlatformError, type APIPromise, type ClientOptions, type RequestOptions } from './core.ts';

/** The request of spec 2.1 (texts may be a readonly array). */
export type EmbeddingCreateParams = Omit<EmbeddingRequestInput, 'texts'> & { texts: string | readonly string[] };

/** The sparse request (an extension): texts, and optionally task, overflow_strategy and weighting. */
export type SparseEmbeddingCreateParams = Pick<SparseRequest, 'model'> & {
  texts: string | readonly string[];
  task?: SparseRequest['task'];
  overflow_strategy?: SparseRequest['overflow_strategy'];
  weighting?: SparseRequest['weighting'];
};
export type { SparseResponse } from '../contract/index.ts';

export class SparseEmbeddings {
  constructor(private readonly transport: Transport) {}

  /**
   * `POST /embeddings/sparse`: each text's word pieces with BM25 weights (indices, values), for
   * the sparse field of a hybrid store; runs no model. Send queries with `task: 'retrieval/query'`
   * (the model's term neighbours join them) and documents with `task: 'retrieval/document'`.
   * @example const { embeddings } = await client.embeddings.sparse.create({ model: 'legal-2-embedder', texts: ['Notice to quit'], task: 'retrieval/query' })
   */
  create(params: SparseEmbeddingCreateParams, options: RequestOptions = {}): APIPromise<SparseResponse> {
    return this.transport.post<SparseResponse>('/embeddings/sparse', params, options);
  }
}

export class Embeddings {
  /** Sparse vectors: `client.embeddings.sparse.create()`. */
  readonly sparse: SparseEmbeddings;

  constructor(private readonly transport: Transport) {
    this.sparse = new SparseEmbeddings(transport);
  }

  /**
   * `POST /embeddings`.
   * @example const { embeddings } = await client.embeddings.create({ model: 'legal-2-embedder', texts: ['Lease'] })
   */
  create(params: EmbeddingCreateParams, options: RequestOptions = {}): APIPromise<EmbeddingResponse> {
    return this.transport.post<EmbeddingResponse>('/embeddings', params, options);
  }
}

/** The reranking request (texts may be a readonly array). */
export type RerankingCreateParams = Omit<RerankRequestInput, 'texts'> & { texts: readonly string[] };
export type { RerankResponse } from '../contract/index.ts';

export class Rerankings {
  constructor(private readonly transport: Transport) {}

  /**
   * `POST /rerankings`: the texts by relevance to the query, highest score first.
   * @example const { results } = await client.rerankings.create({ model: 'legal-2-reranker', query: 'Notice to quit', texts })
   */
  create(params: RerankingCreateParams, options: RequestOptions = {}): APIPromise<RerankResponse> {
    return this.transport.post<RerankResponse>('/rerankings', params, options);
  }
}

/** The tokenize request (an extension): texts, and optionally task and return_offsets. */
export type TokenizeCreateParams = Pick<TokenizeRequest, 'model'> & { texts: string | readonly string[]; task?: TokenizeRequest['task']; return_offsets?: boolean };
export type { TokenizeResponse } from '../contract/index.ts';

export class Tokenize {
  constructor(private readonly transport: Transport) {}

  /**
   * `POST /tokenize`: token counts as /embeddings would read the texts, and with `return_offsets`
   * each token with its character offsets; runs no model.
   * @example const { results } = await client.tokenize.create({ model: 'legal-2-embedder', texts: [contract] })
   */
  create(params: TokenizeCreateParams, options: RequestOptions = {}): APIPromise<TokenizeResponse> {
    return this.transport.post<TokenizeResponse>('/tokenize', params, options);
  }
}

/** The search request (an extension): the query, and optionally top, offset, mode, file, document, index. */
export type SearchCreateParams = Pick<SearchRequest, 'query'> & Partial<Omit<SearchRequest, 'query'>>;
export type { SearchResponse } from '../contract/index.ts';

export class Search {
  constructor(private readonly transport: Transport) {}

  /**
   * `POST /search`, on a server started with an index (lexembed serve --index): the best
   * passages for the query, hybrid by default, each with its file, page and matching sentences.
   * @example const { hits, next_offset } = await client.search.create({ query: 'governing law', top: 5 })
   */
  create(params: SearchCreateParams, options: RequestOptions = {}): APIPromise<SearchResponse> {
    return this.transport.post<SearchResponse>('/search', params, options);
  }
}

export class Lexembed {
  readonly embeddings: Embeddings;
  readonly rerankings: Rerankings;
  readonly tokenize: Tokenize;
  /** The server's index, where it holds one: `client.search.create({ query })`. */
  readonly search: Search;
  private readonly transport: Transport;

  constructor(options: ClientOptions = {}) {
    this.transport = new Transport(options);
    this.embeddings = new Embeddings(this.transport);
    this.rerankings = new Rerankings(this.transport);
    this.tokenize = new Tokenize(this.transport);
    this.search = new Search(this.transport);
  }

  get baseURL(): string {
    return this.transport.baseURL;
  }
}

export default Lexembed;
