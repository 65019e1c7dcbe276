// The batch limits of a loaded model, for every caller (serve, embed, the benchmarks): a number
// given stands; "auto" is a fixed figure on the CPU and a measurement on WebGPU. Which of the two
// is part of the inference plan (inference-plan.ts: `batchRule`, resolved once with the device);
// the measurement runs here once the backend has started, so the reason can say what was chosen.
import { measureBatchBudget, PROBE_TOKENS } from './batch-budget.ts';
import type { EmbeddingBackend } from '../../embedder/types.ts';
import { DEFAULT_SCHEDULER_LIMITS, DEFAULT_SMALL_BATCH_TOKENS, type SchedulerLimits } from '../../embedder/batch-defaults.ts';

export { DEFAULT_SMALL_BATCH_TOKENS };

/** A batch limit as configured: a positive integer, or auto. */
export type BatchSetting = number | 'auto';

export interface BatchSettings {
  /** Most padded tokens per model call (--max-batch-tokens); absent: the base limits' own. */
  readonly tokens?: BatchSetting;
  /** Most texts per model call (--max-batch-size); absent: the base limits' own. */
  readonly size?: BatchSetting;
}

/** Each batch limit as the plan resolved it: a number, `measure` (auto on WebGPU), or absent (the base limits'). */
export interface BatchRule {
  readonly tokens?: number | 'measure';
  readonly size?: number | 'measure';
}

/** --max-batch-tokens auto on the CPU: the default (batch-defaults.ts says what was measured). WebGPU measures its own at start-up. */
export const CPU_AUTO_BATCH_TOKENS = DEFAULT_SCHEDULER_LIMITS.maxBatchTokens;
/** --max-batch-size auto on the CPU: the default. */
export const CPU_AUTO_BATCH_SIZE = DEFAULT_SCHEDULER_LIMITS.maxBatchSize;

/** The settings resolved for a device: numbers stand; auto is the CPU's figure, or measured on WebGPU. */
export function batchRule(settings: BatchSettings, device: string): BatchRule {
  const resolve = (setting: BatchSetting | undefined, cpu: number) => (setting === 'auto' ? (device === 'webgpu' ? 'measure' : cpu) : setting);
  const tokens = resolve(settings.tokens, CPU_AUTO_BATCH_TOKENS);
  const size = resolve(settings.size, CPU_AUTO_BATCH_SIZE);
  return { ...(tokens !== undefined ? { tokens } : {}), ...(size !== undefined ? { size } : {}) };
}

export interface BatchPlan {
  readonly limits: SchedulerLimits;
  /** What was measured on WebGPU (appended to the device reason); null when nothing was measured. */
  readonly reason: string | null;
}

/** `base` with the rule applied: numbers as given; `measure` by running probe batches on the backend (batch-budget.ts). */
export async function applyBatchRule(rule: BatchRule, base: SchedulerLimits, backend: Pick<EmbeddingBackend, 'run' | 'encode'>): Promise<BatchPlan> {
  const fixed: SchedulerLimits = {
    ...base,
    ...(typeof rule.tokens === 'number' ? { maxBatchTokens: rule.tokens } : {}),
    ...(typeof rule.size === 'number' ? { maxBatchSize: rule.size } : {}),
  };
  if (rule.tokens !== 'measure' && rule.size !== 'measure') return { limits: fixed, reason: null };
  const measured = await measureBatchBudget((batch) => backend.run(batch), probeSequence(backend.encode));
  const limits = { ...fixed, ...(rule.tokens === 'measure' ? { maxBatchTokens: measured.maxBatchTokens } : {}), ...(rule.size === 'measure' ? { maxBatchSize: measured.maxBatchSize } : {}) };
  return { limits, reason: `${measured.reason}, max batch size ${limits.maxBatchSize}` };
}

/** A legal text's first PROBE_TOKENS token ids: what the batch-budget probes run. */
function probeSequence(encode: (text: string) => number[]): number[] {
  const clause = 'The Lessee shall indemnify and hold harmless the Lessor from every claim arising out of the use of the Premises, save for the Lessor\'s own negligence. ';
  return encode(clause.repeat(8)).slice(0, PROBE_TOKENS);
}
