// An embedder answered in this process with the HTTP API's operations (src/operations/): the same
// request bodies, responses and typed errors as the HTTP client, without a server. The browser's
// local client and the Node commands that run the model themselves (lexembed search, lexembed mcp)
// both stand on it, so every way in runs one pipeline.
import { toProblemDocument, type EmbeddingResponse, type OpenAIEmbeddingRequestInput, type OpenAIEmbeddingResponse, type Problem, type RerankResponse, type TokenizeResponse } from '../contract/index.ts';
import type { TextChunk } from '../embedder/chunk.ts';
import { makeAPIError } from '../client/errors.ts';
import type { EmbeddingCreateParams, RerankingCreateParams, TokenizeCreateParams } from '../client/index.ts';
import { createEmbeddings, createOpenAIEmbeddings, createRerankings, createTokenization, type Outcome } from '../operations/index.ts';
import type { Embedder } from '../embedder/types.ts';

export interface InProcessClient {
  readonly embeddings: { create(params: EmbeddingCreateParams): Promise<EmbeddingResponse> };
  /** Reranking with the model folder's fit (a 404 APIError where its lexembed.json has none). */
  readonly rerankings: { create(params: RerankingCreateParams): Promise<RerankResponse> };
  /**
   * The OpenAI-compatible embeddings of the server's POST /openai/v1/embeddings (input, model or
   * its :query/:document alias, input_type, encoding_format, dimensions), for code written
   * against OpenAI's shape; problems are thrown as this client's typed errors.
   */
  readonly openai: { readonly embeddings: { create(params: OpenAIEmbeddingRequestInput): Promise<OpenAIEmbeddingResponse> } };
  /** Token counts (and offsets) as the server's POST /v1/tokenize answers them. */
  readonly tokenize: { create(params: TokenizeCreateParams): Promise<TokenizeResponse> };
  /**
   * Splits a long text into chunks of at most `size` tokens of this model (default: what one
   * document embedding reads) with `overlap` tokens repeated, with offsets into the text.
   */
  chunkText(text: string, options?: { size?: number; overlap?: number }): Promise<TextChunk[]>;
}

/**
 * The client of `embedder` (awaited on each call, so a client can exist before its model has
 * loaded); problems are thrown as the HTTP client's APIErrors, with `docsUrl` as the base of their type.
 */
export function inProcessClient(embedder: () => Promise<Embedder>, docsUrl = '/docs'): InProcessClient {
  const run = async <T>(operation: (body: unknown, embedder: Embedder) => Promise<Outcome<T>>, params: unknown): Promise<T> => {
    const outcome = await operation(params, await embedder());
    if (!outcome.ok) throw problemError(outcome.problem, docsUrl);
    return outcome.value.body;
  };
  return {
    embeddings: { create: (params) => run(createEmbeddings, params) },
    rerankings: { create: (params) => run(createRerankings, params) },
    tokenize: { create: (params) => run(createTokenization, params) },
    openai: { embeddings: { create: (params) => run(createOpenAIEmbeddings, params) } },
    async chunkText(text, chunkOptions) {
      const chunks = (await embedder()).chunkText(text, chunkOptions);
      if (!chunks.ok) throw problemError(chunks.problem, docsUrl);
      return chunks.value;
    },
  };
}

/** A problem as the HTTP client's typed error (its status, problem document and headers). */
export function problemError(problem: Problem, docsUrl: string) {
  const doc = toProblemDocument(problem, docsUrl);
  return makeAPIError(doc.status, doc, new Headers({ 'content-type': 'application/problem+json', ...problem.headers }));
}
