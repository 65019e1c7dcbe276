// The OpenAI-compatible operations (/openai/v1): embeddings in OpenAI's shape, and the model list.
import { buildOpenAIEmbeddingResponse, openAIModelIds, validateOpenAIEmbeddingRequest, type OpenAIEmbeddingResponse } from '../contract/index.ts';
import type { EmbedOptions, Embedder } from '../embedder/types.ts';
import { answer, type Outcome } from './outcome.ts';

export async function createOpenAIEmbeddings(request: unknown, embedder: Embedder, options: EmbedOptions = {}): Promise<Outcome<OpenAIEmbeddingResponse>> {
  const call = validateOpenAIEmbeddingRequest(request, embedder);
  if (!call.ok) return call;
  const { texts, task, dimensions } = call.value;
  const result = await embedder.embed({ texts, task, overflowStrategy: 'drop_end', dimensions }, options);
  if (!result.ok) return result;
  return answer(buildOpenAIEmbeddingResponse(result.value.vectors, result.value.inputTokens, call.value), result.value.inputTokens);
}

export function listOpenAIModels(embedder: Pick<Embedder, 'modelName' | 'settings'>) {
  const { id: modelId, fingerprint } = embedder.settings;
  // OpenAI's model objects allow more fields: which weights serve the name, to check an index against.
  const identity = { ...(modelId ? { lexembed_model_id: modelId } : {}), ...(fingerprint ? { fingerprint } : {}) };
  return answer({ object: 'list' as const, data: openAIModelIds(embedder.modelName).map((id) => ({ id, object: 'model' as const, created: 0, owned_by: 'lexembed', ...identity })) });
}
