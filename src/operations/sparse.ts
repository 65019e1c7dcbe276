// POST /v1/embeddings/sparse (an extension): validate, weigh each text's word pieces, answer.
import { finiteNumbersOf, problem, validateSparseRequest, type Problem, type SparseResponse } from '../contract/index.ts';
import type { EmbedOptions, Embedder } from '../embedder/types.ts';
import { answer, type Outcome } from './outcome.ts';

export async function createSparseEmbeddings(request: unknown, embedder: Embedder, options: EmbedOptions = {}): Promise<Outcome<SparseResponse>> {
  const sparse = embedder.sparse;
  if (!sparse) return { ok: false, problem: sparseNotServed(embedder) };
  const parsed = validateSparseRequest(request, embedder);
  if (!parsed.ok) return parsed;
  const { texts, task, overflow_strategy, weighting } = parsed.value;
  const result = await sparse.embed({ texts, task, overflowStrategy: overflow_strategy, weighting }, options);
  if (!result.ok) return result;
  const tokens = result.value.inputTokens;
  return answer(
    {
      // values are float32 (Math.fround): written as the shortest decimals that read back to them
      embeddings: result.value.vectors.map((v, index) => ({ index, indices: v.indices, values: finiteNumbersOf(v.values) })),
      vocabulary_size: sparse.vocabularySize,
      weighting,
      usage: { input_tokens: tokens },
    },
    tokens,
  );
}

/** The 404 for a model folder without the lexical table. */
export function sparseNotServed(embedder: Pick<Embedder, 'modelName'>): Problem {
  return problem(
    'notFound',
    `POST /v1/embeddings/sparse is part of this server's API, but the model "${embedder.modelName}" served here carries no lexical table (its lexembed.json has no "sparse" entry; model/graph/lexical.py writes it)`,
  );
}
