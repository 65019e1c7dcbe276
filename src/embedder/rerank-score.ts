// Reranking's scores, as pure functions: BM25 over the request's own chunks, the calibrated
// combination with the embedding similarity, and chunk scores folded per text. Running a reranking
// (chunking, embedding, then these) is rerank-run.ts; model/fit_reranker.ts runs these same
// functions over cached vectors to fit and evaluate the weights.
import type { ScoringMethod } from '../contract/rerank.ts';

/**
 * The logistic fit a model folder carries (`lexembed.json` "reranking"): a chunk's score is
 * σ(intercept + cosine·cos(query, chunk) + lexical·bm25(query, chunk) / bm25 ceiling).
 */
export interface RerankWeights {
  readonly intercept: number;
  readonly cosine: number;
  readonly lexical: number;
}

/** BM25 parameters (the ones model/evaluate/held_out.py scores the first stage with). */
export const BM25_K1 = 0.9;
export const BM25_B = 0.4;

const WORD = /[\p{L}\p{N}]+/gu;

/** Lower-cased words (letters and digits) of a text: BM25's terms. */
export function terms(text: string): string[] {
  return text.toLowerCase().match(WORD) ?? [];
}

/**
 * BM25 of the query against each document, with document frequencies and lengths from these
 * documents alone (the request's chunks), divided by the query's ceiling Σ idf·(k1+1): in [0, 1).
 */
export function bm25Normalized(query: readonly string[], documents: readonly (readonly string[])[]): number[] {
  return bm25NormalizedCounts(query, documents.map(termCounts));
}

/** A document's term frequencies and length, for bm25NormalizedCounts. */
export interface TermCounts {
  readonly tf: ReadonlyMap<string, number>;
  readonly length: number;
}

export function termCounts(doc: readonly string[]): TermCounts {
  const tf = new Map<string, number>();
  for (const t of doc) tf.set(t, (tf.get(t) ?? 0) + 1);
  return { tf, length: doc.length };
}

/** bm25Normalized over documents already counted (the benchmark reuses counts across queries). */
export function bm25NormalizedCounts(query: readonly string[], documents: readonly TermCounts[]): number[] {
  const n = documents.length;
  const average = documents.reduce((sum, doc) => sum + doc.length, 0) / Math.max(n, 1) || 1;
  const distinct = [...new Set(query)];
  const idf = distinct.map((t) => {
    const df = documents.reduce((sum, doc) => sum + (doc.tf.has(t) ? 1 : 0), 0);
    return Math.log(1 + (n - df + 0.5) / (df + 0.5));
  });
  const ceiling = idf.reduce((sum, w) => sum + w * (BM25_K1 + 1), 0);
  if (ceiling === 0) return documents.map(() => 0);
  return documents.map((doc) => {
    const norm = BM25_K1 * (1 - BM25_B + (BM25_B * doc.length) / average);
    let score = 0;
    distinct.forEach((t, i) => {
      const f = doc.tf.get(t);
      if (f) score += (idf[i]! * f * (BM25_K1 + 1)) / (f + norm);
    });
    return score / ceiling;
  });
}


/** The calibrated chunk score in [0, 1]: monotonic in both the similarity and the BM25 share. */
export function chunkScore(weights: RerankWeights, similarity: number, lexical: number): number {
  return 1 / (1 + Math.exp(-(weights.intercept + weights.cosine * similarity + weights.lexical * lexical)));
}

/** A text's score from its chunks' scores (`auto` is `chunk_max`). */
export function combineChunkScores(method: ScoringMethod, scores: readonly number[]): number {
  switch (method) {
    case 'auto':
    case 'chunk_max':
      return Math.max(...scores);
    case 'chunk_min':
      return Math.min(...scores);
    case 'chunk_avg':
      return scores.reduce((a, b) => a + b, 0) / scores.length;
  }
}

/**
 * Scores each text: `chunkTexts[i]` are text i's chunks (as text, for BM25), `chunkSimilarity[i]`
 * their cosine to the query. BM25 statistics come from all chunks of the request.
 */
export function scoreTexts(
  weights: RerankWeights,
  method: ScoringMethod,
  queryText: string,
  chunkTexts: readonly (readonly string[])[],
  chunkSimilarity: readonly (readonly number[])[],
): number[] {
  return scoreCountedTexts(weights, method, terms(queryText), chunkTexts.map((chunks) => chunks.map((t) => termCounts(terms(t)))), chunkSimilarity);
}

/** scoreTexts over chunks already counted (the benchmark counts each corpus chunk once). */
export function scoreCountedTexts(
  weights: RerankWeights,
  method: ScoringMethod,
  queryTerms: readonly string[],
  chunkCounts: readonly (readonly TermCounts[])[],
  chunkSimilarity: readonly (readonly number[])[],
): number[] {
  const lexical = bm25NormalizedCounts(queryTerms, chunkCounts.flat());
  let k = 0;
  return chunkCounts.map((chunks, i) => combineChunkScores(method, chunks.map((_, j) => chunkScore(weights, chunkSimilarity[i]![j]!, lexical[k++]!))));
}
