// The embedding response of spec 2.2–2.4.
import { z } from 'zod';
import { quantizeVector, type OutputDtype } from './vectors.ts';

export const EmbeddingSchema = z.object({
  index: z.number().int().min(0).describe('Position of the text in the input.'),
  embedding: z.array(z.number()).describe('The unit-length vector (floats), or its output_dtype integers.'),
});

export const EmbeddingUsageSchema = z.object({
  input_tokens: z.number().int().min(1).describe('Tokens input to the model (prompt and special tokens included, after truncation).'),
});

export const EmbeddingResponseSchema = z.object({
  embeddings: z.array(EmbeddingSchema),
  usage: EmbeddingUsageSchema,
});

export type Embedding = z.infer<typeof EmbeddingSchema>;
export type EmbeddingResponse = z.infer<typeof EmbeddingResponseSchema>;

/** Builds the response: `embeddings[i].index` is the input position of vector i. */
export function buildEmbeddingResponse(vectors: readonly ArrayLike<number>[], inputTokens: number, dtype: OutputDtype = 'float'): EmbeddingResponse {
  return {
    embeddings: vectors.map((v, index) => ({ index, embedding: quantizeVector(v, dtype) })),
    usage: { input_tokens: inputTokens },
  };
}
