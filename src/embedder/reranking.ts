// Reranking as a composition over the embedder's admission and submission (embedder.ts): the
// query is tokenised and checked, the texts chunked by the one chunk loop (rerank.ts:chunkTexts,
// which the benchmark that fits the weights and the tests run too), everything embedded in one
// submission through the shared batching queue, then scored (rerank.ts).
import { MAX_RERANK_CHUNKS, queryTooLong, tooManyChunks, truncateAndNormalize, type Problem, type RerankCapabilities, type Result } from '../contract/index.ts';
import { estimateTokens, pauser } from './pacing.ts';
import { chunkTexts, dot, scoreTexts, type RerankWeights } from './rerank.ts';
import type { Reservation } from './scheduler.ts';
import type { ModelSettings } from './settings.ts';
import type { EmbedOptions, EmbeddingBackend, RerankInput, RerankOutput } from './types.ts';

/** What reranking needs of the embedder: its model, its tokeniser rules, its queue. */
export interface EmbedderCore {
  readonly settings: ModelSettings;
  readonly backend: EmbeddingBackend;
  readonly maxTokens: number;
  tokensOfPrompt(prompt: string): number;
  unreadable(field: string): Problem;
  /** Runs `work` holding room in the queue for about `tokens` tokens (a 503 when there is none). */
  admitted<T>(tokens: number, work: (reservation: Reservation) => Promise<Result<T>>): Promise<Result<T>>;
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
    const sequences = [query, ...chunked.sequences];
    const inputTokens = sequences.reduce((n, seq) => n + seq.length, 0);
    const refused = await options.charge?.(inputTokens);
    if (refused) return { ok: false, problem: refused };
    const pooled = await core.submit(sequences, options.signal, reservation);
    if (!pooled.ok) return pooled;
    const dimensions = settings.dimensions.default;
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
    return core.admitted(estimateTokens(characters) + input.texts.length * framing, (reservation) => rerankAdmitted(input, reservation, options));
  };
}
