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
    /** What a document's stored vectors depend on (fingerprint.ts VectorsFingerprint), set by the loader, never read from the file. */
    vectors: z.object({ graph: z.string(), tokenizer: z.string(), document: z.string(), sparse: z.string().nullable() }).optional(),
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
    /** The reranker this model serves (POST /v1/rerankings), fitted by model/fit_reranker.ts; absent: none. */
    reranking: z
      .object({
        name: z.string().min(1).default(DEFAULT_RERANK_MODEL_NAME),
        weights: z.object({ intercept: z.number(), cosine: z.number(), lexical: z.number() }),
        fitted: z.record(z.string(), z.unknown()).optional(),
      })
      .optional(),
    /** The lexical part's table and rule (model/graph/lexical.py): served as sparse vectors (POST /v1/embeddings/sparse); absent: none. */
    sparse: z
      .object({
        recipe: z.string().min(1),
        k1: z.number().positive(),
        b: z.number().min(0).max(1),
        avg_len: z.number().positive(),
        idf: z.string().min(4),
        weight: z.string().min(4).optional(),
        canonical: z.string().min(4).optional(),
        /** Word pairs (model/sparse/word_pairs.py, v4.5): the rule, their weight beside the pieces, the slots after the vocabulary, which pieces continue a word; sparseTableOf checks the values, naming the fix. */
        bigrams: z.object({ rule: z.string(), weight: z.number(), slots: z.number(), continuations: z.string() }).optional(),
        /** Query neighbours (model/sparse/query_neighbours.py, v4.6): the rule, α, the table; sparseTableOf checks the values, naming the fix. */
        expansion: z
          .object({
            rule: z.string(),
            weight: z.number(),
            sources: z.string(),
            targets: z.string(),
            similarities: z.string(),
            neighbours: z.number().optional(),
            threshold: z.number().optional(),
            max_idf: z.number().optional(),
          })
          .optional(),
      })
      .optional(),
    /**
     * The folder's document form (model/graph/document_form.py): `task: retrieval/document` at full width
     * sends `marker` in place of the first id (`replaces`, [CLS]), and the graph answers a vector
     * whose lexical part keeps its length (a query · document product then weighs term matches as
     * BM25 does); absent: documents get the same vector as queries.
     */
    document_form: z
      .object({ marker: z.number().int().min(0), replaces: z.number().int().min(0), full_width_only: z.boolean().default(true) })
      .optional(),
    /** The folder's int8 graph and what it costs in quality (model/runtime/quantize.py): `--dtype auto` reads it on a CPU; absent: none. */
    quantized: z
      .object({
        file: z.string().min(1),
        dtype: z.literal('q8'),
        min_cosine: z.number().min(-1).max(1),
        'dev_ndcg@10': z.number().min(0).max(1).optional(),
        'fp32_dev_ndcg@10': z.number().min(0).max(1).optional(),
        max_dev_loss: z.number().min(0).default(0.005),
        /** SHA-256 of the onnx/model.onnx it was made from (a folder rebuilt since has another). */
        source_sha256: z.string().optional(),
      })
      .loose()
      .optional(),
    /** The folder's fused graph (model/runtime/fuse.py): --graph auto runs it on onnxruntime-node's WebGPU provider; absent: none. */
    fused: z
      .object({
        file: z.string().min(1),
        min_cosine: z.number().min(-1).max(1),
        /** SHA-256 of the onnx/model.onnx it was made from (a folder rebuilt since has another). */
        source_sha256: z.string().optional(),
      })
      .loose()
      .optional(),
  })
  .loose();

export type ModelSettings = z.output<typeof ModelSettingsSchema>;

/**
 * Whether a folder's int8 graph keeps quality: its dev-set nDCG@10 at most `max_dev_loss` below
 * float32's (both measured in one run by model/runtime/quantize.py). One rule for the server's CPU
 * (`--dtype auto`) and the browser's WASM path; `why` says what is missing or lost, `figures`
 * the measured pair.
 * @example int8Verdict(settings.quantized) // { keeps: true, figures: 'dev nDCG@10 0.642 vs fp32 0.644' }
 */
export function int8Verdict(quantized: ModelSettings['quantized']): { keeps: boolean; figures: string; why?: string } {
  if (!quantized) return { keeps: false, figures: '', why: 'lexembed.json lists no int8 graph ("quantized")' };
  const q8 = quantized['dev_ndcg@10'];
  const fp32 = quantized['fp32_dev_ndcg@10'];
  if (q8 === undefined || fp32 === undefined) return { keeps: false, figures: '', why: `lexembed.json has no dev-set figures for ${quantized.file}` };
  const figures = `dev nDCG@10 ${q8.toFixed(3)} vs fp32 ${fp32.toFixed(3)}`;
  const loss = fp32 - q8;
  return loss <= quantized.max_dev_loss + 1e-9
    ? { keeps: true, figures }
    : { keeps: false, figures, why: `it loses ${loss.toFixed(3)} nDCG@10 on the dev set (${figures}), more than ${quantized.max_dev_loss}` };
}

/** Parses a settings object, or says in one sentence which field is wrong. */
export function parseModelSettings(raw: unknown, where: string): ModelSettings {
  const parsed = ModelSettingsSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const why = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  throw new Error(`invalid model settings in ${where}: ${why}`);
}
