// Turns an EmbeddingBackend into the contract's Embedder: prompts, tokenising once,
// overflow handling, length-sorted batches, dimensions and normalisation.
import { problem, truncateAndNormalize, truncateToMaxTokens } from '../contract/index.ts';
import type { ModelSettings } from './settings.ts';
import type { EmbedInput, EmbedOutput, Embedder, EmbeddingBackend } from './types.ts';
import type { Result } from '../contract/index.ts';

export interface BatchLimits {
  /** Most sequences in one model call. */
  readonly maxBatchSize: number;
  /** Most padded tokens (batch size × longest sequence) in one model call. */
  readonly maxBatchTokens: number;
}

export const DEFAULT_BATCH_LIMITS: BatchLimits = { maxBatchSize: 32, maxBatchTokens: 16384 };

/** Optional observers (metrics). */
export interface EmbedderHooks {
  onBatch?(size: number, paddedTokens: number): void;
  /** Texts accepted by embed() calls and not yet through the model. */
  onQueueDepth?(texts: number): void;
}

/** Wraps a backend with the contract's embedding rules. */
export function createEmbedder(settings: ModelSettings, backend: EmbeddingBackend, limits: BatchLimits = DEFAULT_BATCH_LIMITS, hooks: EmbedderHooks = {}): Embedder {
  const maxTokens = settings.max_input_tokens;
  let waiting = 0;
  return {
    settings,
    backendName: backend.name,
    modelName: settings.name,
    maxDimensions: settings.dimensions.max,
    tasks: settings.tasks,
    async embed(input: EmbedInput): Promise<Result<EmbedOutput>> {
      const prompt = input.task ? settings.prompts[input.task] ?? '' : '';
      const sequences: number[][] = [];
      for (const [index, text] of input.texts.entries()) {
        const ids = backend.encode(prompt + text);
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
      let remaining = sequences.length;
      waiting += remaining;
      hooks.onQueueDepth?.(waiting);
      const observed: EmbeddingBackend = {
        ...backend,
        run: async (batch) => {
          hooks.onBatch?.(batch.length, batch.length * Math.max(...batch.map((s) => s.length)));
          const out = await backend.run(batch);
          remaining -= batch.length;
          waiting -= batch.length;
          hooks.onQueueDepth?.(waiting);
          return out;
        },
      };
      let pooled: Float32Array[];
      try {
        pooled = await runInBatches(observed, sequences, limits);
      } finally {
        waiting -= remaining; // texts of a failed call leave the queue too
        if (remaining) hooks.onQueueDepth?.(waiting);
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

/** Groups sequences by length (less padding) under the batch limits; results in input order. */
export async function runInBatches(backend: EmbeddingBackend, sequences: readonly number[][], limits: BatchLimits): Promise<Float32Array[]> {
  const order = sequences.map((_, i) => i).sort((a, b) => sequences[a].length - sequences[b].length);
  const results = new Array<Float32Array>(sequences.length);
  let start = 0;
  while (start < order.length) {
    let end = start + 1;
    // Sorted ascending, so the last member sets the padded length.
    while (end < order.length && end - start < limits.maxBatchSize && (end - start + 1) * sequences[order[end]].length <= limits.maxBatchTokens) end++;
    const members = order.slice(start, end);
    const vectors = await backend.run(members.map((i) => sequences[i]));
    members.forEach((i, k) => (results[i] = vectors[k]));
    start = end;
  }
  return results;
}
