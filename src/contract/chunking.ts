// The one rule for chunk sizes and overlaps: a rerank request's chunking_options, the embedder's
// chunkText and `lexembed embed --chunk-tokens` all check theirs here.
import { problem } from './problems.ts';
import type { Result } from './result.ts';

/** How texts are chunked, once the defaults are filled in. */
export interface Chunking {
  readonly size: number;
  readonly overlap: number;
}

/** Chunk overlap when neither overlap field is given. */
export const DEFAULT_OVERLAP_RATIO = 0.25;

/** How chunking options are named in a message: the API's fields, or plain words (CLI, library). */
export interface ChunkingNames {
  readonly size: string;
  readonly overlap: string;
}
const PLAIN_NAMES: ChunkingNames = { size: 'the chunk size', overlap: 'the chunk overlap' };

/**
 * The one rule for chunk sizes and overlaps, wherever they come from (a rerank request, the
 * embedder's chunkText, `lexembed embed --chunk-tokens`): a size of 1 to `maxChunkTokens` tokens
 * and an overlap of 0 to size − 1 tokens, or a validation problem naming the option as `names` do.
 */
export function checkChunking(size: number, overlap: number, maxChunkTokens: number, names: ChunkingNames = PLAIN_NAMES): Result<Chunking> {
  if (!Number.isInteger(size) || size < 1 || size > maxChunkTokens) {
    return { ok: false, problem: problem('validation', `${names.size} must be an integer from 1 to ${maxChunkTokens} tokens (what the model reads of a document at once), got ${size}`) };
  }
  if (!Number.isInteger(overlap) || overlap < 0 || overlap >= size) {
    return {
      ok: false,
      problem: problem('validation', `${names.overlap} must be an integer from 0 to ${size - 1} tokens (less than the chunk size ${size}, or each chunk would repeat the last), got ${overlap}`),
    };
  }
  return { ok: true, value: { size, overlap } };
}
