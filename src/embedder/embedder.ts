// Turns an EmbeddingBackend into the contract's Embedder: prompts, tokenising each text once,
// overflow handling, cross-request batching (BatchScheduler), dimensions and normalisation.
import { problem, queryTooLong, truncateAndNormalize, truncateToMaxTokens, type RerankCapabilities, type Result } from '../contract/index.ts';
import { chunkTexts, dot, scoreTexts } from './rerank.ts';
import { BatchScheduler, DEFAULT_SCHEDULER_LIMITS, QueueFullError, type SchedulerHooks, type SchedulerLimits } from './scheduler.ts';
import type { ModelSettings } from './settings.ts';
import type { EmbedInput, EmbedOptions, EmbedOutput, Embedder, EmbeddingBackend, RerankInput, RerankOutput } from './types.ts';

export type EmbedderHooks = SchedulerHooks;

/** Wraps a backend with the contract's embedding rules and one shared batching queue. */
export function createEmbedder(
  settings: ModelSettings,
  backend: EmbeddingBackend,
  limits: SchedulerLimits = DEFAULT_SCHEDULER_LIMITS,
  hooks: EmbedderHooks = {},
): Embedder {
  const maxTokens = settings.max_input_tokens;
  const scheduler = new BatchScheduler(backend, limits, hooks);
  // Tokens of a prompt alone ([CLS] prompt [SEP]): a text adding none has nothing the model can read.
  const promptTokens = new Map<string, number>();
  const tokensOfPrompt = (prompt: string) => promptTokens.get(prompt) ?? promptTokens.set(prompt, backend.encode(prompt).length).get(prompt)!;
  const unreadable = (field: string) =>
    problem('validation', `${field} has no characters the model can read (only ones its tokenizer drops, such as zero-width or control characters); send text with words`);
  const reranking = settings.reranking;
  const reranker: RerankCapabilities | undefined = reranking && {
    rerankModelName: reranking.name,
    maxChunkTokens: maxTokens - tokensOfPrompt(settings.prompts['retrieval/document'] ?? ''),
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
    async collectGarbage() {
      await backend.collectGarbage?.();
      (globalThis as { gc?: () => void }).gc?.();
    },
    async embed(input: EmbedInput, options: EmbedOptions = {}): Promise<Result<EmbedOutput>> {
      const prompt = input.task ? settings.prompts[input.task] ?? '' : '';
      const sequences: number[][] = [];
      for (const [index, text] of input.texts.entries()) {
        const ids = backend.encode(prompt + text);
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
        sequences.push(truncateToMaxTokens(ids, maxTokens));
      }
      const submitted = await submit(sequences, options.signal);
      if (!submitted.ok) return submitted;
      const pooled = submitted.value;
      const dimensions = input.dimensions ?? settings.dimensions.default;
      return {
        ok: true,
        value: {
          vectors: pooled.map((v) => truncateAndNormalize(v, dimensions)),
          inputTokens: sequences.reduce((n, s) => n + s.length, 0),
        },
      };
    },
    reranker,
    rerank: reranking ? rerank : undefined,
    dispose: () => backend.dispose(),
  };

  async function submit(sequences: number[][], signal?: AbortSignal): Promise<Result<Float32Array[]>> {
    try {
      return { ok: true, value: await scheduler.submit(sequences, signal) };
    } catch (error) {
      if (error instanceof QueueFullError) {
        return { ok: false, problem: problem('unavailable', `the server is at capacity (${error.message}); retry after the Retry-After delay`, { 'retry-after': '1' }) };
      }
      throw error;
    }
  }

  async function rerank(input: RerankInput, options: EmbedOptions = {}): Promise<Result<RerankOutput>> {
    const queryPrompt = settings.prompts['retrieval/query'] ?? '';
    const query = backend.encode(queryPrompt + input.query);
    const promptTokens = tokensOfPrompt(queryPrompt);
    if (query.length <= promptTokens) return { ok: false, problem: unreadable('query') };
    if (query.length > maxTokens) return { ok: false, problem: queryTooLong(query.length, reranker!) };
    const chunked = chunkTexts(backend, input.texts, input.chunking, settings.prompts['retrieval/document'] ?? '');
    if ('unreadable' in chunked) return { ok: false, problem: unreadable(`texts[${chunked.unreadable}]`) };
    const sequences = [query, ...chunked.sequences];
    const pooled = await submit(sequences, options.signal);
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
        inputTokens: sequences.reduce((n, seq) => n + seq.length, 0),
      },
    };
  }
}
