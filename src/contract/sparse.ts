// POST /v1/embeddings/sparse, an extension: each text as a sparse vector over the model's word-piece
// vocabulary (the exact, unhashed weights of the dense vector's lexical part), for the sparse
// fields of hybrid stores: Qdrant's sparse vectors (with `modifier: "idf"`), pgvector's
// `sparsevec`, Elasticsearch/OpenSearch `sparse_vector`/`rank_features` (the indices as keys),
// Milvus SPARSE_FLOAT_VECTOR.
import { z } from 'zod';
import { perModel } from './schema-cache.ts';
import { problem } from './problems.ts';
import { formatIssues, MAX_TEXTS_PER_REQUEST, OVERFLOW_STRATEGIES, TASKS, type ModelCapabilities } from './request.ts';
import { fieldsOf, nonBlankText, oneOf, required, taskProblem } from './rules.ts';
import type { Result } from './result.ts';

/**
 * tf: the BM25-saturated term frequency alone (queries, in every store); idf: times the model's
 * term weight (idf from its training texts, refined on its training pairs where the folder has
 * learned weights), for documents in a store that only takes dot products (pgvector,
 * Elasticsearch, Milvus); relative: times that weight ÷ idf, for documents in a store that applies
 * the corpus's own idf (Qdrant `modifier: "idf"`), where it scores best (the model card).
 */
export const SPARSE_WEIGHTINGS = ['tf', 'idf', 'relative'] as const;
export type SparseWeighting = (typeof SPARSE_WEIGHTINGS)[number];

const text = nonBlankText(required('must be a string'));

export function createSparseRequestSchema(modelName: string) {
  return z.strictObject(
    {
      model: z.literal(modelName, { error: required(`must be "${modelName}"`) }).describe('The embedding model whose vocabulary and weights to use.'),
      texts: z
        .union([text, z.array(text).min(1, { error: 'must hold at least 1 text' }).max(MAX_TEXTS_PER_REQUEST, { error: `must hold at most ${MAX_TEXTS_PER_REQUEST} texts` })], {
          error: required(`must be a string or an array of 1 to ${MAX_TEXTS_PER_REQUEST} strings`),
        })
        .describe(`A text or 1 to ${MAX_TEXTS_PER_REQUEST} texts, read exactly as /v1/embeddings reads them.`),
      task: oneOf(TASKS, ' or null').nullable().default(null).describe(
          "As /v1/embeddings: the task's prompt is read with the text, as the dense vector reads it. retrieval/query also adds, where the model has them, the query's term neighbours (words the model places beside the query's own, at a fraction of their weight): send queries with it; documents are never expanded.",
        ),
      overflow_strategy: z
        .enum(OVERFLOW_STRATEGIES, { error: 'must be "drop_end" or null' })
        .nullable()
        .default('drop_end')
        .describe('As /v1/embeddings: drop_end weighs only what the model reads; null makes an over-long text an error.'),
      weighting: oneOf(SPARSE_WEIGHTINGS)
        .default('tf')
        .describe(
          "tf (default): BM25's saturated term frequency, for queries (and for documents where the model has no learned term weights); idf: times the model's term weight, for documents in a store that takes plain dot products (pgvector sparsevec, Elasticsearch, Milvus); relative: times that weight divided by idf, for documents in a store that applies the corpus's idf itself (Qdrant modifier idf).",
        ),
    },
    { error: 'must be a JSON object' },
  );
}
export type SparseRequest = z.output<ReturnType<typeof createSparseRequestSchema>>;

export const SparseEmbeddingSchema = z.object({
  index: z.number().int().min(0).describe('Position of the text in the request.'),
  indices: z
    .array(z.number().int().min(0))
    .describe(
      'Ascending, each once: word-piece ids (with the bundled model a stem class of whole words, such as terminate/terminated/termination, is one index: its smallest piece), then, where the model has word pairs, their slots (from the vocabulary size of 37,325 pieces up).',
    ),
  values: z.array(z.number()).describe('The weight of each index, > 0.'),
});
export type SparseEmbedding = z.infer<typeof SparseEmbeddingSchema>;

export const SparseResponseSchema = z.object({
  embeddings: z.array(SparseEmbeddingSchema),
  vocabulary_size: z.number().int().describe('Indices lie below this (the dimension of a pgvector sparsevec column): the word pieces, plus the word-pair slots where the model has them.'),
  weighting: z.enum(SPARSE_WEIGHTINGS),
  usage: z.object({ input_tokens: z.number().int() }),
});
export type SparseResponse = z.infer<typeof SparseResponseSchema>;

const schemaFor = perModel(createSparseRequestSchema);
export const SPARSE_FIELDS = fieldsOf(createSparseRequestSchema('any'));

export function validateSparseRequest(body: unknown, caps: ModelCapabilities): Result<SparseRequest & { texts: string[] }> {
  const parsed = schemaFor(caps.modelName).safeParse(body);
  if (!parsed.success) return { ok: false, problem: problem('validation', formatIssues(parsed.error.issues, { fields: { '': SPARSE_FIELDS } })) };
  const request = parsed.data;
  const refusal = taskProblem(request.task, caps);
  if (refusal) return { ok: false, problem: refusal };
  return { ok: true, value: { ...request, texts: typeof request.texts === 'string' ? [request.texts] : request.texts } };
}
