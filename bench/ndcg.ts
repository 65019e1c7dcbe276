// nDCG@10 as ../shared/tools/evaluate-retrieval.py scores it: binary gains, the ideal DCG over
// min(|relevant|, 10). Shared by the benchmarks that score the dev set (index-quality, index-recall).

/** nDCG@10 of `ranked` ids against the `relevant` ones. */
export function ndcg10(ranked: readonly string[], relevant: ReadonlySet<string>): number {
  let dcg = 0;
  ranked.slice(0, 10).forEach((id, i) => (dcg += relevant.has(id) ? 1 / Math.log2(i + 2) : 0));
  let ideal = 0;
  for (let i = 0; i < Math.min(relevant.size, 10); i++) ideal += 1 / Math.log2(i + 2);
  return dcg / ideal;
}
