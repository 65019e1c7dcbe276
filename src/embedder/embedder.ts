// Turns an EmbeddingBackend into the contract's Embedder: prompts, tokenising each text once,
// overflow handling, cross-request batching (BatchScheduler), dimensions and normalisation.
import { MAX_RERANK_CHUNKS, problem, queryTooLong, tooManyChunks, truncateAndNormalize, truncateToMaxTokens, type RerankCapabilities, type Result } from '../contract/index.ts';
import { chunkText, tokenOffsets, wordTokenCounter } from './chunk.ts';
import { chunkOneText, dot, scoreTexts } from './rerank.ts';
import { encodeInSlices, slicesOf } from './slices.ts';
import { BatchScheduler, DEFAULT_SCHEDULER_LIMITS, QueueFullError, type Reservation, type SchedulerHooks, type SchedulerLimits } from './scheduler.ts';
import type { ModelSettings } from './settings.ts';
import type { EmbedInput, EmbedOptions, EmbedOutput, Embedder, EmbeddingBackend, RerankInput, RerankOutput } from './types.ts';

export type EmbedderHooks = SchedulerHooks;

/**
 * Characters per token assumed when admitting a request before tokenising it: English legal text
 * averages 4.5–5 characters per WordPiece token here, so 4 errs towards refusing at saturation.
 */
const CHARS_PER_TOKEN_ESTIMATE = 4;
/** Longest stretch of tokenising between yields to the event loop (other requests, /health). */
const TOKENISE_SLICE_MS = 8;

/** Tokens a text of `characters` characters is assumed to make, special tokens included. */
const estimateTokens = (characters: number) => Math.ceil(characters / CHARS_PER_TOKEN_ESTIMATE) + 2;

/** Returns a function to await between units of work: it yields once TOKENISE_SLICE_MS has passed. */
function pauser(): () => Promise<void> {
  let since = performance.now();
  return async () => {
    if (performance.now() - since < TOKENISE_SLICE_MS) return;
    await new Promise((resolve) => setTimeout(resolve, 0));
    since = performance.now();
  };
}

function atCapacity(error: QueueFullError) {
  return problem('unavailable', `the server is at capacity (${error.message}); retry after the Retry-After delay`, { 'retry-after': '1' });
}

/** Wraps a backend with the contract's embedding rules and one shared batching queue. */
export function createEmbedder(
  settings: ModelSettings,
  backend: EmbeddingBackend,
  limits: SchedulerLimits = DEFAULT_SCHEDULER_LIMITS,
  hooks: EmbedderHooks = {},
): Embedder {
  const maxTokens = settings.max_input_tokens;
  const encode = (text: string) => backend.encode(text);
  const scheduler = new BatchScheduler(backend, limits, hooks);
  // Tokens of a prompt alone ([CLS] prompt [SEP]): a text adding none has nothing the model can read.
  const promptTokens = new Map<string, number>();
  const tokensOfPrompt = (prompt: string) => promptTokens.get(prompt) ?? promptTokens.set(prompt, backend.encode(prompt).length).get(prompt)!;
  const unreadable = (field: string) =>
    problem('validation', `${field} has no characters the model can read (only ones its tokenizer drops, such as zero-width or control characters); send text with words`);
  const reranking = settings.reranking;
  // A chunk, framed as the model reads a document ([CLS] prompt chunk [SEP]), fits in one input.
  const maxChunkTokens = maxTokens - tokensOfPrompt(settings.prompts['retrieval/document'] ?? '');
  const reranker: RerankCapabilities | undefined = reranking && {
    rerankModelName: reranking.name,
    maxChunkTokens,
    maxQueryTokens: maxTokens,
  };
  return {
    settings,
    backendName: backend.name,
    deviceReason: backend.deviceReason,
    modelName: settings.name,
    maxDimensions: settings.dimensions.max,
    tasks: settings.tasks,
    schedulerStats: () => scheduler.stats(),
    refusalBySize(bodyBytes, maxTexts) {
      // Texts are truncated to maxTokens (or refused), so an embedding request makes at most maxTexts × maxTokens.
      const tokens = estimateTokens(bodyBytes);
      const refused = scheduler.refusalOf(maxTexts === null ? tokens : Math.min(tokens, maxTexts * maxTokens));
      return refused && atCapacity(refused);
    },
    async collectGarbage() {
      await backend.collectGarbage?.();
      (globalThis as { gc?: () => void }).gc?.();
    },
    async embed(input: EmbedInput, options: EmbedOptions = {}): Promise<Result<EmbedOutput>> {
      const prompt = input.task ? settings.prompts[input.task] ?? '' : '';
      const estimate = input.texts.reduce((n, text) => n + Math.min(maxTokens, estimateTokens(prompt.length + text.length)), 0);
      return admitted(estimate, (reservation) => embedAdmitted(input, prompt, reservation, options));
    },
    maxChunkTokens,
    chunkText(text, options = {}) {
      const size = options.size ?? maxChunkTokens;
      const overlap = options.overlap ?? 0;
      if (!Number.isInteger(size) || size < 1 || size > maxChunkTokens) {
        return { ok: false, problem: problem('validation', `the chunk size must be an integer from 1 to ${maxChunkTokens} tokens (what model "${settings.name}" reads of a document at once), got ${size}`) };
      }
      if (!Number.isInteger(overlap) || overlap < 0 || overlap >= size) {
        return { ok: false, problem: problem('validation', `the chunk overlap must be an integer from 0 to ${size - 1} tokens (less than the chunk size ${size}), got ${overlap}`) };
      }
      return { ok: true, value: chunkText(text, { size, overlap }, wordTokenCounter((t) => backend.encode(t))) };
    },
    async tokenize(texts, { task, offsets }) {
      const prompt = task ? settings.prompts[task] ?? '' : '';
      const tokenize = backend.tokenize ? (t: string) => backend.tokenize!(t) : (t: string) => backend.encode(t).slice(1, -1).map(String);
      // Slice by slice, yielding between slices: a long text must not stall the event loop.
      const pause = pauser();
      const results: Awaited<ReturnType<Embedder['tokenize']>> = [];
      for (const [index, text] of texts.entries()) {
        const inputTokens = (await encodeInSlices(encode, prompt + text, pause)).length;
        let tokens: ReturnType<typeof tokenOffsets> | undefined;
        if (offsets) {
          tokens = [];
          for (const { offset, piece } of slicesOf(text)) {
            await pause();
            for (const t of tokenOffsets(piece, tokenize)) tokens.push({ token: t.token, start: t.start + offset, end: t.end + offset });
          }
        }
        results.push({ index, input_tokens: inputTokens, ...(tokens ? { tokens } : {}) });
      }
      return results;
    },
    reranker,
    rerank: reranking ? rerank : undefined,
    dispose: () => backend.dispose(),
  };

  async function embedAdmitted(input: EmbedInput, prompt: string, reservation: Reservation, options: EmbedOptions): Promise<Result<EmbedOutput>> {
    const sequences: number[][] = [];
    let truncatedTexts = 0;
    const pause = pauser();
    for (const [index, text] of input.texts.entries()) {
      await pause();
      if (options.signal?.aborted) throw options.signal.reason;
      // drop_end reads no further than the model does; a refusal names the exact length.
      const ids = await encodeInSlices(encode, prompt + text, pause, input.overflowStrategy === 'drop_end' ? maxTokens : Infinity);
      if (ids.length <= tokensOfPrompt(prompt)) return { ok: false, problem: unreadable(`texts[${index}]`) };
      if (ids.length > maxTokens && input.overflowStrategy === null) {
        return {
          ok: false,
          problem: problem(
            'inputTooLarge',
            `texts[${index}] is ${ids.length} tokens long, over the model's maximum of ${maxTokens} input tokens; ` +
              'shorten it, or set overflow_strategy to "drop_end" to truncate it',
          ),
        };
      }
      if (ids.length > maxTokens) truncatedTexts++;
      sequences.push(truncateToMaxTokens(ids, maxTokens));
    }
    const inputTokens = sequences.reduce((n, s) => n + s.length, 0);
    const refused = await options.charge?.(inputTokens);
    if (refused) return { ok: false, problem: refused };
    const submitted = await submit(sequences, options.signal, reservation);
    if (!submitted.ok) return submitted;
    const pooled = submitted.value;
    const dimensions = input.dimensions ?? settings.dimensions.default;
    return {
      ok: true,
      value: {
        vectors: pooled.map((v) => truncateAndNormalize(v, dimensions)),
        inputTokens,
        truncatedTexts,
      },
    };
  }

  /**
   * Runs `work` holding room in the queue for about `tokens` tokens while the request is
   * tokenised (released when it ends); a 503 at once when there is no room.
   */
  async function admitted<T>(tokens: number, work: (reservation: Reservation) => Promise<Result<T>>): Promise<Result<T>> {
    let reservation: Reservation;
    try {
      reservation = scheduler.reserve(tokens);
    } catch (error) {
      if (error instanceof QueueFullError) return { ok: false, problem: atCapacity(error) };
      throw error;
    }
    try {
      return await work(reservation);
    } finally {
      reservation.release();
    }
  }

  async function submit(sequences: number[][], signal?: AbortSignal, reservation?: Reservation): Promise<Result<Float32Array[]>> {
    try {
      return { ok: true, value: await scheduler.submit(sequences, signal, reservation) };
    } catch (error) {
      if (error instanceof QueueFullError) return { ok: false, problem: atCapacity(error) };
      throw error;
    }
  }

  async function rerank(input: RerankInput, options: EmbedOptions = {}): Promise<Result<RerankOutput>> {
    const documentPrompt = settings.prompts['retrieval/document'] ?? '';
    const framing = tokensOfPrompt(documentPrompt);
    const characters = input.texts.reduce((n, text) => n + text.length, input.query.length);
    return admitted(estimateTokens(characters) + input.texts.length * framing, (reservation) => rerankAdmitted(input, documentPrompt, reservation, options));
  }

  async function rerankAdmitted(input: RerankInput, documentPrompt: string, reservation: Reservation, options: EmbedOptions): Promise<Result<RerankOutput>> {
    const queryPrompt = settings.prompts['retrieval/query'] ?? '';
    const query = backend.encode(queryPrompt + input.query);
    const promptTokens = tokensOfPrompt(queryPrompt);
    if (query.length <= promptTokens) return { ok: false, problem: unreadable('query') };
    if (query.length > maxTokens) return { ok: false, problem: queryTooLong(query.length, reranker!) };
    // Chunk text by text, yielding to the event loop, and stop as soon as the chunks pass the cap.
    const pause = pauser();
    const count = wordTokenCounter((t) => backend.encode(t));
    const chunked = { sequences: [] as number[][], chunkTexts: [] as string[][] };
    for (const [index, text] of input.texts.entries()) {
      await pause();
      if (options.signal?.aborted) throw options.signal.reason;
      const one = chunkOneText(backend, text, input.chunking, documentPrompt, count);
      if (one.sequences.length === 0) return { ok: false, problem: unreadable(`texts[${index}]`) };
      chunked.sequences.push(...one.sequences);
      chunked.chunkTexts.push(one.texts);
      if (chunked.sequences.length > MAX_RERANK_CHUNKS) return { ok: false, problem: tooManyChunks(index + 1, chunked.sequences.length, input.chunking, reranker!) };
    }
    const sequences = [query, ...chunked.sequences];
    const inputTokens = sequences.reduce((n, seq) => n + seq.length, 0);
    const refused = await options.charge?.(inputTokens);
    if (refused) return { ok: false, problem: refused };
    const pooled = await submit(sequences, options.signal, reservation);
    if (!pooled.ok) return pooled;
    const dimensions = settings.dimensions.default;
    const [queryVector, ...chunkVectors] = pooled.value.map((v) => truncateAndNormalize(v, dimensions));
    let k = 0;
    const similarity = chunked.chunkTexts.map((chunks) => chunks.map(() => dot(queryVector!, chunkVectors[k++]!)));
    // BM25 reads the query's own words: its ids after [CLS] and the prompt's pieces, as text.
    const queryText = backend.decode ? backend.decode(query.slice(promptTokens - 1)) : input.query;
    return {
      ok: true,
      value: {
        scores: scoreTexts(reranking!.weights, input.method, queryText, chunked.chunkTexts, similarity),
        inputTokens,
      },
    };
  }
}
