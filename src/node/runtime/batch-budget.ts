// The batch budget on a GPU (--max-batch-tokens auto), chosen by measurement on the GPU at hand:
// a GPU's best batch differs by orders of magnitude between cards (and a software adapter is
// slower than the CPU), so no one number suits them all. At start-up the model runs batches of
// 128-token sequences at growing budgets; the budget kept is the largest that still ran within the
// latency target and still paid (≥ 10 % more texts/s than half of it); a GPU too slow for the
// smallest keeps SLOW_GPU_BATCH_TOKENS (batch-defaults.ts: every default batch limit).
import { DEFAULT_SCHEDULER_LIMITS, SLOW_GPU_BATCH_TOKENS } from '../../embedder/batch-defaults.ts';

/** The budgets tried on a GPU, smallest first. */
export const GPU_BUDGET_CANDIDATES = [1024, 2048, 4096, 8192, 16384, 32768] as const;
/** A batch taking longer than this is a request waiting that long behind it. */
export const GPU_BATCH_MS_TARGET = 250;
/** A doubling must bring at least this much more throughput to be worth its latency. */
export const GPU_MIN_GAIN = 1.1;
/** The sequence length the probes use (the benchmark's medium workload). */
export const PROBE_TOKENS = 128;

export interface BudgetProbe {
  /** Padded tokens in the batch. */
  readonly tokens: number;
  readonly rows: number;
  readonly ms: number;
}

export interface BudgetChoice {
  readonly maxBatchTokens: number;
  /** Texts per batch that fit the budget at the probe length (never below the default's 64). */
  readonly maxBatchSize: number;
  readonly probes: readonly BudgetProbe[];
  readonly reason: string;
}

const textsPerSecond = (p: BudgetProbe) => (p.rows * 1000) / p.ms;

/**
 * Picks the budget from probes measured smallest first: the last one within `targetMs` whose
 * throughput beat the previous one's by `minGain`, else SLOW_GPU_BATCH_TOKENS.
 * @example chooseBatchTokens([{ tokens: 1024, rows: 8, ms: 4 }, { tokens: 2048, rows: 16, ms: 7.9 }]).maxBatchTokens // 1024
 */
export function chooseBatchTokens(probes: readonly BudgetProbe[], targetMs = GPU_BATCH_MS_TARGET, minGain = GPU_MIN_GAIN): BudgetChoice {
  let chosen: BudgetProbe | undefined;
  let stop = probes.length ? `the largest budget tried (${probes.at(-1)!.tokens})` : 'nothing was measured';
  for (const probe of probes) {
    if (probe.ms > targetMs) {
      stop = `${probe.tokens} tokens took ${Math.round(probe.ms)} ms, over the ${targetMs} ms target`;
      break;
    }
    if (chosen && textsPerSecond(probe) < textsPerSecond(chosen) * minGain) {
      stop = `${probe.tokens} tokens gave ${textsPerSecond(probe).toFixed(0)} texts/s, less than ${minGain}× the ${textsPerSecond(chosen).toFixed(0)} of ${chosen.tokens}`;
      break;
    }
    chosen = probe;
  }
  const maxBatchTokens = chosen?.tokens ?? SLOW_GPU_BATCH_TOKENS;
  const measured = probes.map((p) => `${p.tokens}: ${Math.round(p.ms)} ms`).join(', ');
  return {
    maxBatchTokens,
    maxBatchSize: Math.max(DEFAULT_SCHEDULER_LIMITS.maxBatchSize, Math.floor(maxBatchTokens / PROBE_TOKENS)),
    probes,
    reason: `max batch tokens ${maxBatchTokens} (auto, measured at ${PROBE_TOKENS} tokens a text: ${measured || 'none'}; stopped at ${stop})`,
  };
}

/**
 * Measures `run` at each candidate budget (a first run compiles that shape, the second is timed)
 * until a batch passes the latency target or stops paying, and chooses with chooseBatchTokens.
 */
export async function measureBatchBudget(
  run: (batch: number[][]) => Promise<unknown>,
  sequence: readonly number[],
  targetMs = GPU_BATCH_MS_TARGET,
  now: () => number = () => performance.now(),
): Promise<BudgetChoice> {
  const probes: BudgetProbe[] = [];
  for (const tokens of GPU_BUDGET_CANDIDATES) {
    const rows = Math.max(1, Math.floor(tokens / sequence.length));
    const batch = Array.from({ length: rows }, () => [...sequence]);
    await run(batch);
    const started = now();
    await run(batch);
    probes.push({ tokens: rows * sequence.length, rows, ms: now() - started });
    const choice = chooseBatchTokens(probes, targetMs);
    if (choice.maxBatchTokens !== probes.at(-1)!.tokens) return choice;
  }
  return chooseBatchTokens(probes, targetMs);
}
