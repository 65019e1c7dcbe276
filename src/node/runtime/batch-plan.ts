// The batch limits of a loaded model, decided in one place for every caller (serve, embed, the
// benchmarks): a number given stands; "auto" is a fixed figure on the CPU and a measurement on
// WebGPU, made once the backend has started, so the reason can say what was chosen and why.
import { measureBatchBudget, PROBE_TOKENS } from '../../backend/batch-budget.ts';
import type { EmbeddingBackend } from '../../embedder/types.ts';
import { DEFAULT_SCHEDULER_LIMITS, type SchedulerLimits } from '../../embedder/scheduler.ts';

/** A batch limit as configured: a positive integer, or auto. */
export type BatchSetting = number | 'auto';

export interface BatchSettings {
  /** Most padded tokens per model call (--max-batch-tokens); absent: the base limits' own. */
  readonly tokens?: BatchSetting;
  /** Most texts per model call (--max-batch-size); absent: the base limits' own. */
  readonly size?: BatchSetting;
}

/**
 * --max-batch-tokens auto on the CPU (WebGPU measures its own at start-up). Measured with
 * `npm run bench:cpu` on the bundled hybrid, 2 cores, quiet: at ~128 tokens 11.8 CPU-ms a text
 * (efficiency 0.97 of raw onnxruntime) against 13.2 (0.85) with 512; ~16 and ~512 tokens within
 * noise of 512. The cost: a short query can wait behind a bigger batch (~4 × 512 tokens).
 */
export const CPU_AUTO_BATCH_TOKENS = 2048;
/** --max-batch-size auto on the CPU: the scheduler's default. */
export const CPU_AUTO_BATCH_SIZE = DEFAULT_SCHEDULER_LIMITS.maxBatchSize;

export interface BatchPlan {
  readonly limits: SchedulerLimits;
  /** What auto chose on WebGPU (appended to the device reason); null when nothing was measured. */
  readonly reason: string | null;
}

/**
 * `base` with the batch settings applied: numbers as given; auto on the CPU as the constants
 * above; auto on WebGPU measured by running probe batches on the backend (batch-budget.ts).
 */
export async function planBatchLimits(settings: BatchSettings, base: SchedulerLimits, backend: Pick<EmbeddingBackend, 'device' | 'run' | 'encode'>): Promise<BatchPlan> {
  const { tokens, size } = settings;
  const fixed: SchedulerLimits = {
    ...base,
    ...(typeof tokens === 'number' ? { maxBatchTokens: tokens } : {}),
    ...(typeof size === 'number' ? { maxBatchSize: size } : {}),
  };
  if (tokens !== 'auto' && size !== 'auto') return { limits: fixed, reason: null };
  const measured = backend.device === 'webgpu' ? await measureBatchBudget((batch) => backend.run(batch), probeSequence(backend.encode)) : null;
  const auto = measured ?? { maxBatchTokens: CPU_AUTO_BATCH_TOKENS, maxBatchSize: CPU_AUTO_BATCH_SIZE };
  const limits = { ...fixed, ...(tokens === 'auto' ? { maxBatchTokens: auto.maxBatchTokens } : {}), ...(size === 'auto' ? { maxBatchSize: auto.maxBatchSize } : {}) };
  return { limits, reason: measured ? `${measured.reason}, max batch size ${limits.maxBatchSize}` : null };
}

/** A legal text's first PROBE_TOKENS token ids: what the batch-budget probes run. */
function probeSequence(encode: (text: string) => number[]): number[] {
  const clause = 'The Lessee shall indemnify and hold harmless the Lessor from every claim arising out of the use of the Premises, save for the Lessor\'s own negligence. ';
  return encode(clause.repeat(8)).slice(0, PROBE_TOKENS);
}
