// Running a reranking, over the embedder's admission and submission (embedder.ts): the query is
// tokenised and checked, the texts chunked by the one chunk loop (chunkTexts below, which the fit
// of the weights, model/fit_reranker.ts, and the tests run too), everything embedded in one
// submission through the shared batching queue, then scored (rerank-score.ts).
import { dot, MAX_RERANK_CHUNKS, queryTooLong, tooManyChunks, truncateAndNormalize, type Chunking, type Problem, type RerankCapabilities, type Result } from '../contract/index.ts';
import { chunkText, wordTokenCounter } from './chunk.ts';
import { asDocuments } from './document-form.ts';
import { estimateTokens, pauser } from './pacing.ts';
import { scoreTexts, type RerankWeights } from './rerank-score.ts';
import type { Lease, Reservation } from './admission.ts';
import type { ModelSettings } from './settings.ts';
import type { EmbedOptions, EmbeddingBackend, RerankInput, RerankOutput } from './types.ts';

/** What reranking needs of the embedder: its model, its tokeniser rules, its queue. */
export interface EmbedderCore {
  readonly settings: ModelSettings;
  readonly backend: EmbeddingBackend;
  readonly maxTokens: number;
  tokensOfPrompt(prompt: string): number;
  unreadable(field: string): Problem;
  /** Room in the queue for about `tokens` tokens, or a 503 problem. */
  reserve(tokens: number): Result<Reservation>;
  /** Runs `work` holding the lease's room in the queue, or room for `estimate()` tokens (a 503 when there is none). */
  admitted<T>(lease: Lease | undefined, estimate: () => number, work: (room: Reservation) => Promise<Result<T>>): Promise<Result<T>>;
  submit(sequences: number[][], signal?: AbortSignal, reservation?: Reservation): Promise<Result<Float32Array[]>>;
}

export function createRerank(core: EmbedderCore, reranker: RerankCapabilities, weights: RerankWeights) {
  const { settings, backend } = core;
  const documentPrompt = settings.prompts['retrieval/document'] ?? '';
  const queryPrompt = settings.prompts['retrieval/query'] ?? '';

  async function rerankAdmitted(input: RerankInput, reservation: Reservation, options: EmbedOptions): Promise<Result<RerankOutput>> {
    const query = backend.encode(queryPrompt + input.query);
    const promptTokens = core.tokensOfPrompt(queryPrompt);
    if (query.length <= promptTokens) return { ok: false, problem: core.unreadable('query') };
    if (query.length > core.maxTokens) return { ok: false, problem: queryTooLong(query.length, reranker) };
    // Text by text, yielding to the event loop, stopping as soon as the chunks pass the cap.
    const chunked = await chunkTexts(backend, input.texts, input.chunking, documentPrompt, { pause: pauser(), signal: options.signal, maxChunks: MAX_RERANK_CHUNKS });
    if ('unreadable' in chunked) return { ok: false, problem: core.unreadable(`texts[${chunked.unreadable}]`) };
    if ('tooMany' in chunked) return { ok: false, problem: tooManyChunks(chunked.tooMany.texts, chunked.tooMany.chunks, input.chunking, reranker) };
    const dimensions = settings.dimensions.default;
    // the chunks are read as documents (the folder's document form, where it has one)
    const sequences = [query, ...asDocuments(settings, chunked.sequences, dimensions)];
    const inputTokens = sequences.reduce((n, seq) => n + seq.length, 0);
    const refused = await options.lease?.commit(inputTokens);
    if (refused) return { ok: false, problem: refused };
    const pooled = await core.submit(sequences, options.signal, reservation);
    if (!pooled.ok) return pooled;
    const [queryVector, ...chunkVectors] = pooled.value.map((v) => truncateAndNormalize(v, dimensions));
    let k = 0;
    const similarity = chunked.chunkTexts.map((chunks) => chunks.map(() => dot(queryVector!, chunkVectors[k++]!)));
    // BM25 reads the query's own words: its ids after [CLS] and the prompt's pieces, as text.
    const queryText = backend.decode ? backend.decode(query.slice(promptTokens - 1)) : input.query;
    return { ok: true, value: { scores: scoreTexts(weights, input.method, queryText, chunked.chunkTexts, similarity), inputTokens } };
  }

  return async function rerank(input: RerankInput, options: EmbedOptions = {}): Promise<Result<RerankOutput>> {
    const framing = core.tokensOfPrompt(documentPrompt);
    const characters = input.texts.reduce((n, text) => n + text.length, input.query.length);
    return core.admitted(options.lease, () => estimateTokens(characters) + input.texts.length * framing, (room) => rerankAdmitted(input, room, options));
  };
}

export interface ChunkedTexts {
  /** Token sequences for the model: each chunk read as a document is ([CLS], prompt, chunk, [SEP]). */
  readonly sequences: number[][];
  /** Per text, its chunks as text (what BM25 reads: the tokenizer's normalised reading of the chunk). */
  readonly chunkTexts: string[][];
}

/**
 * One text's chunks (chunk.ts: whole words within `chunking.size` tokens, `chunking.overlap`
 * repeated, line and sentence ends preferred), each framed as the model reads a document, and its
 * text for BM25. Empty when the text has no token the model reads. `count` is a per-request
 * wordTokenCounter, so words repeated across texts are counted once.
 */
export function chunkOneText(
  tokenizer: Pick<EmbeddingBackend, 'encode' | 'decode'>,
  text: string,
  chunking: Chunking,
  documentPrompt: string,
  count: (word: string) => number,
): { sequences: number[][]; texts: string[] } {
  const head = tokenizer.encode(documentPrompt).length - 1; // [CLS] and the prompt's pieces
  const decode = tokenizer.decode ?? ((ids: readonly number[]) => ids.join(' '));
  const sequences: number[][] = [];
  const texts: string[] = [];
  for (const chunk of chunkText(text, chunking, count)) {
    const ids = tokenizer.encode(documentPrompt + chunk.text);
    sequences.push(ids);
    texts.push(decode(ids.slice(head, -1)));
  }
  return { sequences, texts };
}

export interface ChunkLoopOptions {
  /** Awaited between texts (the embedder yields to the event loop there). */
  readonly pause?: () => Promise<void>;
  readonly signal?: AbortSignal;
  /** Stop as soon as the chunks pass this many. */
  readonly maxChunks?: number;
}

export type ChunkLoopResult = ChunkedTexts | { readonly unreadable: number } | { readonly tooMany: { readonly texts: number; readonly chunks: number } };

/**
 * Splits each text into chunks (chunkOneText) and frames each chunk as the model reads a document:
 * the one chunk loop of reranking, run by the embedder, the benchmark that fits the weights and
 * the tests. Returns the index of the first text with no readable token instead, or, past
 * `maxChunks`, how many texts made how many chunks.
 */
export async function chunkTexts(
  tokenizer: Pick<EmbeddingBackend, 'encode' | 'decode'>,
  texts: readonly string[],
  chunking: Chunking,
  documentPrompt: string,
  options: ChunkLoopOptions = {},
): Promise<ChunkLoopResult> {
  const count = wordTokenCounter((t) => tokenizer.encode(t));
  const sequences: number[][] = [];
  const chunked: string[][] = [];
  for (const [index, text] of texts.entries()) {
    await options.pause?.();
    if (options.signal?.aborted) throw options.signal.reason;
    const one = chunkOneText(tokenizer, text, chunking, documentPrompt, count);
    if (one.sequences.length === 0) return { unreadable: index };
    sequences.push(...one.sequences);
    chunked.push(one.texts);
    if (options.maxChunks !== undefined && sequences.length > options.maxChunks) return { tooMany: { texts: index + 1, chunks: sequences.length } };
  }
  return { sequences, chunkTexts: chunked };
}
