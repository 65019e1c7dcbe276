// The lexembed settings file (`lexembed.json`) every model folder carries, as a schema.
import { z } from 'zod';
import { DEFAULT_MODEL_NAME, TASKS } from '../contract/request.ts';
import { DEFAULT_RERANK_MODEL_NAME } from '../contract/rerank.ts';

export const SETTINGS_FILE = 'lexembed.json';

export const ModelSettingsSchema = z
  .object({
    name: z.string().min(1).default(DEFAULT_MODEL_NAME),
    /**
     * Which weights these are, for clients (/health, /openai/v1/models, response headers): the two
     * bundled models share the API's model name but not their vectors. Default: the folder's name.
     */
    id: z.string().min(1).optional(),
    /** A short hash of the served files (weights, tokenizer, settings), set by the loader, never read from the file. */
    fingerprint: z.string().optional(),
    description: z.string().optional(),
    max_input_tokens: z.number().int().min(2),
    pooling: z.enum(['mean', 'cls']).default('mean'),
    dimensions: z
      .object({ default: z.number().int().min(1), max: z.number().int().min(1), matryoshka: z.array(z.number().int().min(1)).optional() })
      .refine((d) => d.default <= d.max, { error: 'default must not exceed max' }),
    prompts: z
      .object({ 'retrieval/query': z.string().nullable().default(null), 'retrieval/document': z.string().nullable().default(null) })
      .default({ 'retrieval/query': null, 'retrieval/document': null }),
    tasks: z.array(z.enum(TASKS)).default([...TASKS]),
    dtype: z.enum(['fp32', 'fp16', 'q8']).default('fp32'),
    /** The reranker this model serves (POST /v1/rerankings), fitted by bench/rerank.ts; absent: none. */
    reranking: z
      .object({
        name: z.string().min(1).default(DEFAULT_RERANK_MODEL_NAME),
        weights: z.object({ intercept: z.number(), cosine: z.number(), lexical: z.number() }),
        fitted: z.record(z.string(), z.unknown()).optional(),
      })
      .optional(),
    /** The lexical part's table and rule (model/add_lexical.py): served as sparse vectors (POST /v1/embeddings/sparse); absent: none. */
    sparse: z
      .object({ recipe: z.string().min(1), k1: z.number().positive(), b: z.number().min(0).max(1), avg_len: z.number().positive(), idf: z.string().min(4) })
      .optional(),
  })
  .loose();

export type ModelSettings = z.output<typeof ModelSettingsSchema>;

/** Parses a settings object, or says in one sentence which field is wrong. */
export function parseModelSettings(raw: unknown, where: string): ModelSettings {
  const parsed = ModelSettingsSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const why = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  throw new Error(`invalid model settings in ${where}: ${why}`);
}
