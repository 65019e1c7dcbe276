// The reranking request and response (POST /v1/rerankings), in the shape the official SDKs of
// the API this service follows send and expect: { model, query, texts, top_n, is_iql,
// scoring_method, chunking_options } → { results: [{ index, score }], usage: { input_tokens } }.
// The spec names the operation without a payload; these rules are lexembed's, with the same
// problem catalogue, titles and detail style as embeddings.
import { z } from 'zod';
import { perModel } from './schema-cache.ts';
import { problem } from './problems.ts';
import { formatIssues } from './request.ts';
import { fieldsOf, integerAtLeast, nonBlankText, oneOf, required } from './rules.ts';
import type { Result } from './result.ts';
import { checkChunking, DEFAULT_OVERLAP_RATIO, type Chunking, type ChunkingNames } from './chunking.ts';

export const DEFAULT_RERANK_MODEL_NAME = 'legal-2-reranker';
/** At most this many texts per request (a first stage's top 100 fits ten times over). */
export const MAX_RERANK_TEXTS = 1000;
/**
 * At most this many chunks per request, over all texts: bounds one request's model work and memory
 * (1,000 texts of ~800 tokens make ~2,000 chunks at the default size; at size 1 they made 800,000).
 */
export const MAX_RERANK_CHUNKS = 4096;

/** The 400 for a request whose texts split into more than MAX_RERANK_CHUNKS chunks. */
export function tooManyChunks(textsRead: number, chunks: number, chunking: Chunking, caps: Pick<RerankCapabilities, 'maxChunkTokens'>) {
  return problem(
    'validation',
    `the texts split into more than ${MAX_RERANK_CHUNKS} chunks, this server's limit per request (texts[0] to texts[${textsRead - 1}] alone make ${chunks} chunks of ${chunking.size} tokens); ` +
      `use a larger chunking_options.size (null: ${caps.maxChunkTokens}), or send fewer or shorter texts`,
  );
}
export const SCORING_METHODS = ['auto', 'chunk_max', 'chunk_avg', 'chunk_min'] as const;

export type ScoringMethod = (typeof SCORING_METHODS)[number];

/** What the served reranker supports; the rules that depend on it read this. */
export interface RerankCapabilities {
  readonly rerankModelName: string;
  /** The most content tokens one chunk may hold (the model's input less its special tokens). */
  readonly maxChunkTokens: number;
  /** The most tokens the query may have (prompt and special tokens included). */
  readonly maxQueryTokens: number;
}

const ChunkingOptionsSchema = z.strictObject(
  {
    size: integerAtLeast(1, 'must be an integer of at least 1 (tokens), or null').nullable().default(null)
      .describe("Tokens of text per chunk, capped to what the model reads at once (special tokens aside); null: that cap."),
    overlap_ratio: z
      .number({ error: 'must be a number from 0 up to (not including) 1, or null' })
      .min(0, { error: 'must be a number from 0 up to (not including) 1, or null' })
      .lt(1, { error: 'must be a number from 0 up to (not including) 1, or null' })
      .nullable()
      .default(null)
      .describe('Share of a chunk repeated at the start of the next one; null: 0.25.'),
    overlap_tokens: integerAtLeast(0, 'must be an integer of at least 0 (tokens), or null').nullable().default(null)
      .describe('Tokens repeated at the start of the next chunk; when given, it takes the place of overlap_ratio.'),
  },
  { error: 'must be an object with size, overlap_ratio and overlap_tokens, or null' },
);

export function createRerankRequestSchema(modelName: string = DEFAULT_RERANK_MODEL_NAME) {
  return z.strictObject(
    {
      model: z.literal(modelName, { error: required(`must be "${modelName}"`) }).describe('The reranking model to use.'),
      query: nonBlankText(required('must be a string'))
        .describe('What the texts are ranked against.'),
      texts: z
        .array(nonBlankText(), {
          error: required(`must be an array of 1 to ${MAX_RERANK_TEXTS} strings`),
        })
        .min(1, { error: 'must hold at least 1 text' })
        .max(MAX_RERANK_TEXTS, { error: `must hold at most ${MAX_RERANK_TEXTS} texts` })
        .describe(`The texts to rank: 1 to ${MAX_RERANK_TEXTS} strings, each with a non-whitespace character; long ones are split into chunks.`),
      top_n: integerAtLeast(1, 'must be an integer of at least 1, or null').nullable().default(null)
        .describe('Return only the n best texts; null: all of them.'),
      is_iql: z
        .literal(false, { error: 'must be false or absent: this deployment does not serve IQL (query language) queries' })
        .default(false)
        .describe('IQL queries are not served: only false.'),
      scoring_method: oneOf(SCORING_METHODS)
        .default('auto')
        .describe("How a text's chunk scores combine: chunk_max (auto), chunk_avg or chunk_min."),
      chunking_options: ChunkingOptionsSchema.nullable().default(null).describe('How long texts are split; null for the defaults.'),
    },
    { error: 'must be a JSON object' },
  );
}

export const RerankRequestSchema = createRerankRequestSchema();
export const RERANK_FIELDS = fieldsOf(RerankRequestSchema);
export const CHUNKING_FIELDS = fieldsOf(ChunkingOptionsSchema);
export type RerankRequestInput = z.input<typeof RerankRequestSchema>;
export type RerankRequest = z.output<typeof RerankRequestSchema>;

export const RerankResultSchema = z.object({
  index: z.number().int().min(0).describe('Position of the text in the request.'),
  score: z.number().min(0).max(1).describe('Relevance to the query, from 0 to 1 (calibrated: higher is more relevant).'),
});
export const RerankResponseSchema = z.object({
  results: z.array(RerankResultSchema).describe('The texts, most relevant first (ties: lower index first).'),
  usage: z.object({
    input_tokens: z.number().int().min(1).describe('Tokens input to the model: the query and every chunk, special tokens included.'),
  }),
});
export type RerankResult = z.infer<typeof RerankResultSchema>;
export type RerankResponse = z.infer<typeof RerankResponseSchema>;

const REQUEST_NAMES: ChunkingNames = { size: 'chunking_options.size', overlap: 'chunking_options.overlap_tokens' };

/** The chunk size (capped to what the model reads) and overlap a request asks for. */
export function resolveChunking(options: RerankRequest['chunking_options'], caps: Pick<RerankCapabilities, 'maxChunkTokens'>): Result<Chunking> {
  // A chunk cannot hold more than the model reads at once: larger sizes (the SDKs' examples send
  // 512) are capped to that, as null is.
  const size = Math.min(options?.size ?? caps.maxChunkTokens, caps.maxChunkTokens);
  const overlap = options?.overlap_tokens ?? Math.floor(size * (options?.overlap_ratio ?? DEFAULT_OVERLAP_RATIO));
  return checkChunking(size, overlap, caps.maxChunkTokens, REQUEST_NAMES);
}

/**
 * Validates a decoded JSON body for the served reranker. The query's length is checked where
 * the tokenizer is (the model's own count), with the limit in `caps.maxQueryTokens`.
 */
export function validateRerankRequest(body: unknown, caps: RerankCapabilities): Result<RerankRequest & { chunking: Chunking }> {
  const parsed = schemaFor(caps.rerankModelName).safeParse(body);
  if (!parsed.success) {
    return { ok: false, problem: problem('validation', formatIssues(parsed.error.issues, { fields: { '': RERANK_FIELDS, chunking_options: CHUNKING_FIELDS } })) };
  }
  const chunking = resolveChunking(parsed.data.chunking_options, caps);
  if (!chunking.ok) return chunking;
  return { ok: true, value: { ...parsed.data, chunking: chunking.value } };
}

/** The problem for a query longer than the model reads. */
export function queryTooLong(tokens: number, caps: Pick<RerankCapabilities, 'maxQueryTokens'>) {
  return problem('validation', `query is ${tokens} tokens long, over the ${caps.maxQueryTokens} tokens the model reads; shorten it`);
}

const schemaFor = perModel(createRerankRequestSchema);

/**
 * Orders texts by score (highest first; equal scores keep input order) and keeps the top n.
 * @example rankResults([0.2, 0.9, 0.2], 2) // [{ index: 1, score: 0.9 }, { index: 0, score: 0.2 }]
 */
export function rankResults(scores: readonly number[], topN: number | null): RerankResult[] {
  const ranked = scores.map((score, index) => ({ index, score })).sort((a, b) => b.score - a.score || a.index - b.index);
  return topN === null ? ranked : ranked.slice(0, topN);
}
