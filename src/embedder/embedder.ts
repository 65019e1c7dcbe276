// Turns an EmbeddingBackend into the contract's Embedder: prompts, tokenising each text once,
// overflow handling, cross-request batching (BatchScheduler), dimensions and normalisation.
import { checkChunking, problem, truncateAndNormalize, truncateToMaxTokens, type RerankCapabilities, type Result, type Task, type TokenizeResponse } from '../contract/index.ts';
import { chunkText, tokenOffsets, wordTokenCounter } from './chunk.ts';
import { estimateTokens, pauser } from './pacing.ts';
import { asDocuments } from './document-form.ts';
import { createRerank, type EmbedderCore } from './rerank-run.ts';
import { encodeInSlices, slicesOf } from './slices.ts';
import type { Reservation } from './admission.ts';
import { BatchScheduler, DEFAULT_SCHEDULER_LIMITS, QueueFullError, type SchedulerHooks, type SchedulerLimits } from './scheduler.ts';
import type { ModelSettings } from './settings.ts';
import { sparseTableOf, sparseVector, sparseVocabularySize, type SparseTable } from './sparse.ts';
import type { EmbedInput, EmbedOptions, EmbedOutput, Embedder, EmbeddingBackend, SparseInput, SparseOutput } from './types.ts';

export type EmbedderHooks = SchedulerHooks;

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
  const scheduler = new BatchScheduler(backend, limits, hooks);
  const core = createCore(settings, backend, scheduler);
  const { maxTokens } = core;
  const reranking = settings.reranking;
  const sparseTable = settings.sparse && sparseTableOf(settings.sparse);
  // A chunk, framed as the model reads a document ([CLS] prompt chunk [SEP]), fits in one input.
  const maxChunkTokens = maxTokens - core.tokensOfPrompt(settings.prompts['retrieval/document'] ?? '');
  const reranker: RerankCapabilities | undefined = reranking && {
    rerankModelName: reranking.name,
    maxChunkTokens,
    maxQueryTokens: maxTokens,
  };
  return {
    settings,
    modelName: settings.name,
    maxDimensions: settings.dimensions.max,
    tasks: settings.tasks,
    runtime: {
      backendName: backend.name,
      deviceReason: backend.deviceReason,
      reserve: (tokens) => core.reserve(tokens),
      // Texts are truncated to maxTokens (or refused), so a request of at most maxTexts texts makes at most maxTexts × maxTokens.
      tokensOfBody: (bodyBytes, maxTexts) => (maxTexts === null ? estimateTokens(bodyBytes) : Math.min(estimateTokens(bodyBytes), maxTexts * maxTokens)),
      stats: () => scheduler.stats(),
      async collectGarbage() {
        await backend.collectGarbage?.();
        (globalThis as { gc?: () => void }).gc?.();
      },
    },
    async embed(input: EmbedInput, options: EmbedOptions = {}): Promise<Result<EmbedOutput>> {
      const prompt = promptFor(settings, input.task);
      const estimate = () => input.texts.reduce((n, text) => n + Math.min(maxTokens, estimateTokens(prompt.length + text.length)), 0);
      return core.admitted(options.lease, estimate, (room) => embedAdmitted(core, input, prompt, room, options));
    },
    maxChunkTokens,
    chunkText(text, options = {}) {
      const checked = checkChunking(options.size ?? maxChunkTokens, options.overlap ?? 0, maxChunkTokens);
      return checked.ok ? { ok: true, value: chunkText(text, checked.value, wordTokenCounter((t) => backend.encode(t))) } : checked;
    },
    tokenize: (texts, options) => tokenizeTexts(core, texts, options),
    reranker: reranking && reranker ? { ...reranker, rerank: createRerank(core, reranker, reranking.weights) } : undefined,
    sparse: sparseTable && { vocabularySize: sparseVocabularySize(sparseTable), embed: (input, options = {}) => sparseOf(core, sparseTable, input, options) },
    dispose: () => backend.dispose(),
  };
}

/** The embedder's model, tokeniser rules and queue, as its operations (and rerank-run.ts) use them. */
function createCore(settings: ModelSettings, backend: EmbeddingBackend, scheduler: BatchScheduler): EmbedderCore {
  // Tokens of a prompt alone ([CLS] prompt [SEP]): a text adding none has nothing the model can read.
  const promptTokens = new Map<string, number>();
  const reserve = (tokens: number): Result<Reservation> => {
    try {
      return { ok: true, value: scheduler.reserve(tokens) };
    } catch (error) {
      if (error instanceof QueueFullError) return { ok: false, problem: atCapacity(error) };
      throw error;
    }
  };
  return {
    settings,
    backend,
    maxTokens: settings.max_input_tokens,
    tokensOfPrompt: (prompt) => promptTokens.get(prompt) ?? promptTokens.set(prompt, backend.encode(prompt).length).get(prompt)!,
    unreadable: (field) =>
      problem('validation', `${field} has no characters the model can read (only ones its tokenizer drops, such as zero-width or control characters); send text with words`),
    reserve,
    /**
     * Runs `work` holding the lease's room in the queue, or room for the request's `estimate` of
     * tokens while it is tokenised (a 503 at once when there is none); the room is given back when
     * the work ends (the queue took it over if the texts were submitted).
     */
    async admitted(lease, estimate, work) {
      let room = lease?.room ?? null;
      if (!room) {
        const reserved = reserve(estimate());
        if (!reserved.ok) return reserved;
        room = reserved.value;
      }
      try {
        return await work(room);
      } finally {
        room.release();
      }
    },
    async submit(sequences, signal, reservation) {
      try {
        return { ok: true, value: await scheduler.submit(sequences, signal, reservation) };
      } catch (error) {
        if (error instanceof QueueFullError) return { ok: false, problem: atCapacity(error) };
        throw error;
      }
    },
  };
}

/** The text put before a text of this task (none without a task or a prompt). */
function promptFor(settings: ModelSettings, task: Task | null): string {
  return task ? settings.prompts[task] ?? '' : '';
}

/** Tokenises, checks and truncates the texts, commits their tokens, and embeds them. */
async function embedAdmitted(core: EmbedderCore, input: EmbedInput, prompt: string, room: Reservation, options: EmbedOptions): Promise<Result<EmbedOutput>> {
  const encoded = await encodeForModel(core, input, prompt, options);
  if (!encoded.ok) return encoded;
  const { sequences, inputTokens, truncatedTexts } = encoded.value;
  const dimensions = input.dimensions ?? core.settings.dimensions.default;
  const asked = input.task === 'retrieval/document' ? asDocuments(core.settings, sequences, dimensions) : sequences;
  const submitted = await core.submit(asked, options.signal, room);
  if (!submitted.ok) return submitted;
  return { ok: true, value: { vectors: submitted.value.map((v) => truncateAndNormalize(v, dimensions)), inputTokens, truncatedTexts } };
}

/** Sparse vectors: the texts read as embed reads them, committed alike, weighed without the model. */
async function sparseOf(core: EmbedderCore, table: SparseTable, input: SparseInput, options: EmbedOptions): Promise<Result<SparseOutput>> {
  const prompt = promptFor(core.settings, input.task);
  const encoded = await encodeForModel(core, input, prompt, options);
  if (!encoded.ok) return encoded;
  const { sequences, inputTokens, truncatedTexts } = encoded.value;
  return { ok: true, value: { vectors: sequences.map((ids) => sparseVector(ids, table, input.weighting, input.task === 'retrieval/query')), inputTokens, truncatedTexts } };
}

/**
 * The texts as the model reads them (yielding to the event loop as it goes): the prompt before
 * each, over-long ones cut (drop_end) or refused, texts without readable characters refused; then
 * their exact tokens committed to the request's lease (a problem refuses the request there).
 */
async function encodeForModel(
  core: EmbedderCore,
  input: Pick<EmbedInput, 'texts' | 'overflowStrategy'>,
  prompt: string,
  options: EmbedOptions,
): Promise<Result<{ sequences: number[][]; inputTokens: number; truncatedTexts: number }>> {
  const { backend, maxTokens } = core;
  const encode = (text: string) => backend.encode(text);
  const sequences: number[][] = [];
  let truncatedTexts = 0;
  const pause = pauser();
  for (const [index, text] of input.texts.entries()) {
    await pause();
    if (options.signal?.aborted) throw options.signal.reason;
    // drop_end reads no further than the model does; a refusal names the exact length.
    const ids = await encodeInSlices(encode, prompt + text, pause, input.overflowStrategy === 'drop_end' ? maxTokens : Infinity);
    if (ids.length <= core.tokensOfPrompt(prompt)) return { ok: false, problem: core.unreadable(`texts[${index}]`) };
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
  const refused = await options.lease?.commit(inputTokens);
  if (refused) return { ok: false, problem: refused };
  return { ok: true, value: { sequences, inputTokens, truncatedTexts } };
}

/** Token counts (and offsets) slice by slice, yielding between slices: a long text must not stall the event loop. */
async function tokenizeTexts(core: EmbedderCore, texts: readonly string[], { task, offsets }: { task: Task | null; offsets: boolean }): Promise<TokenizeResponse['results']> {
  const { backend, settings } = core;
  const prompt = promptFor(settings, task);
  const encode = (text: string) => backend.encode(text);
  const tokenize = backend.tokenize ? (t: string) => backend.tokenize!(t) : (t: string) => backend.encode(t).slice(1, -1).map(String);
  const pause = pauser();
  const results: TokenizeResponse['results'] = [];
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
}
