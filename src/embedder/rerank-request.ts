// One reranking request from a decoded body to the response, for every place that serves it (the
// HTTP app on Node and at the edge, and the browser's local client): the same rules, the same
// problems.
import { problem, rankResults, validateRerankRequest, type Problem, type RerankResponse, type Result } from '../contract/index.ts';
import type { EmbedOptions, Embedder } from './types.ts';

export async function answerRerankRequest(embedder: Embedder, body: unknown, options: EmbedOptions = {}): Promise<Result<RerankResponse>> {
  if (!embedder.reranker || !embedder.rerank) return { ok: false, problem: rerankNotServed(embedder) };
  const request = validateRerankRequest(body, embedder.reranker);
  if (!request.ok) return request;
  const { query, texts, scoring_method, chunking, top_n } = request.value;
  const result = await embedder.rerank({ query, texts, chunking, method: scoring_method }, options);
  if (!result.ok) return result;
  return { ok: true, value: { results: rankResults(result.value.scores, top_n), usage: { input_tokens: result.value.inputTokens } } };
}

/** The 404 for a model folder without a reranking fit. */
export function rerankNotServed(embedder: Pick<Embedder, 'modelName'>): Problem {
  return problem(
    'notFound',
    `POST /v1/rerankings is part of the API, but the model "${embedder.modelName}" served here carries no reranker (its lexembed.json has no "reranking" fit; see bench/rerank.ts)`,
  );
}
