// Turns an EmbeddingBackend into the contract's Embedder: prompts, tokenising each text once,
// overflow handling, cross-request batching (BatchScheduler), dimensions and normalisation.
import { problem, truncateAndNormalize, truncateToMaxTokens, type Result } from '../contract/index.ts';
import { BatchScheduler, DEFAULT_SCHEDULER_LIMITS, QueueFullError, type SchedulerHooks, type SchedulerLimits } from './scheduler.ts';
import type { ModelSettings } from './settings.ts';
import type { EmbedInput, EmbedOptions, EmbedOutput, Embedder, EmbeddingBackend } from './types.ts';

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
        if (ids.length <= tokensOfPrompt(prompt)) {
          return {
            ok: false,
            problem: problem(
              'validation',
              `texts[${index}] has no characters the model can read (only ones its tokenizer drops, such as zero-width or control characters); send text with words`,
            ),
          };
        }
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
      let pooled: Float32Array[];
      try {
        pooled = await scheduler.submit(sequences, options.signal);
      } catch (error) {
        if (error instanceof QueueFullError) {
          return { ok: false, problem: problem('unavailable', `the server is at capacity (${error.message}); retry after the Retry-After delay`, { 'retry-after': '1' }) };
        }
        throw error;
      }
      const dimensions = input.dimensions ?? settings.dimensions.default;
      return {
        ok: true,
        value: {
          vectors: pooled.map((v) => truncateAndNormalize(v, dimensions)),
          inputTokens: sequences.reduce((n, s) => n + s.length, 0),
        },
      };
    },
    dispose: () => backend.dispose(),
  };
}
