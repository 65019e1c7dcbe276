// Pure vector and token-sequence rules of the contract: truncation and dimensions.

/**
 * `drop_end`: keeps the first `maxTokens - 1` ids and the final id (the closing special
 * token), so a truncated sequence still ends the way the model was trained on.
 */
export function truncateToMaxTokens(ids: readonly number[], maxTokens: number): number[] {
  if (ids.length <= maxTokens) return ids.slice();
  if (maxTokens < 2) return ids.slice(0, maxTokens);
  return [...ids.slice(0, maxTokens - 1), ids[ids.length - 1]!];
}

/** Keeps the first `dimensions` components and rescales to unit L2 norm. */
export function truncateAndNormalize(vector: ArrayLike<number>, dimensions: number): Float32Array {
  const out = Float32Array.from({ length: Math.min(dimensions, vector.length) }, (_, i) => vector[i]!);
  let sum = 0;
  for (const x of out) sum += x * x;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < out.length; i++) out[i]! /= norm;
  return out;
}
