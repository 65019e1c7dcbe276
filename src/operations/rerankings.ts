// POST /v1/rerankings: validate against the served reranker, score every text, rank.
import { problem, rankResults, validateRerankRequest, type Problem, type RerankResponse } from '../contract/index.ts';
import type { EmbedOptions, Embedder } from '../embedder/types.ts';
import { answer, type Outcome } from './outcome.ts';

export async function createRerankings(request: unknown, embedder: Embedder, options: EmbedOptions = {}): Promise<Outcome<RerankResponse>> {
  const { reranker } = embedder;
  if (!reranker) return { ok: false, problem: rerankNotServed(embedder) };
  const parsed = validateRerankRequest(request, reranker);
  if (!parsed.ok) return parsed;
  const { query, texts, scoring_method, chunking, top_n } = parsed.value;
  const result = await reranker.rerank({ query, texts, chunking, method: scoring_method }, options);
  if (!result.ok) return result;
  const tokens = result.value.inputTokens;
  return answer({ results: rankResults(result.value.scores, top_n), usage: { input_tokens: tokens } }, tokens);
}

/** The 404 for a model folder without a reranking fit. */
export function rerankNotServed(embedder: Pick<Embedder, 'modelName'>): Problem {
  return problem(
    'notFound',
    `POST /v1/rerankings is part of the API, but the model "${embedder.modelName}" served here carries no reranker (its lexembed.json has no "reranking" fit; see model/fit_reranker.ts)`,
  );
}
