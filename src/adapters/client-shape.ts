// What the framework adapters need of a lexembed client: the HTTP `Lexembed` client and the
// browser's `createLocalClient()` both have this shape, so each adapter works over either.
import type { EmbeddingCreateParams, RerankingCreateParams } from '../client/index.ts';
import type { EmbeddingResponse, RerankResponse } from '../contract/index.ts';

export interface EmbeddingsClient {
  readonly embeddings: { create(params: EmbeddingCreateParams, options?: { signal?: AbortSignal }): PromiseLike<EmbeddingResponse> };
}

export interface RerankingsClient {
  readonly rerankings: { create(params: RerankingCreateParams, options?: { signal?: AbortSignal }): PromiseLike<RerankResponse> };
}

/** The spec's limit of texts per request: adapters send longer lists in batches of this size. */
export const BATCH_SIZE = 128;

/** `items` in consecutive slices of at most `size`. */
export function batches<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
