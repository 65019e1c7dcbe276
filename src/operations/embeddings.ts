// POST /v1/embeddings (spec 2.1–2.4): validate for the served model, embed, build the response.
import { buildEmbeddingResponse, textsOf, validateEmbeddingRequest, type EmbeddingResponse } from '../contract/index.ts';
import type { EmbedOptions, Embedder } from '../embedder/types.ts';
import { answer, type Outcome } from './outcome.ts';

export async function createEmbeddings(request: unknown, embedder: Embedder, options: EmbedOptions = {}): Promise<Outcome<EmbeddingResponse>> {
  const parsed = validateEmbeddingRequest(request, embedder);
  if (!parsed.ok) return parsed;
  const { task, overflow_strategy, dimensions, output_dtype } = parsed.value;
  const result = await embedder.embed({ texts: textsOf(parsed.value), task, overflowStrategy: overflow_strategy, dimensions }, options);
  if (!result.ok) return result;
  return answer(buildEmbeddingResponse(result.value.vectors, result.value.inputTokens, output_dtype), result.value.inputTokens);
}
