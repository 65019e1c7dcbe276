// Batch limits are decided in one place (src/node/runtime/batch-plan.ts) for serve, embed and the
// benchmarks. WebGPU's measured auto runs for real in webgpu.test.ts; here the rules around it.
import { describe, expect, it } from 'vitest';
import { CPU_AUTO_BATCH_SIZE, CPU_AUTO_BATCH_TOKENS, planBatchLimits } from '../../../src/node/runtime/batch-plan.ts';
import { DEFAULT_SCHEDULER_LIMITS } from '../../../src/embedder/scheduler.ts';

const cpu = {
  device: 'cpu',
  encode: (text: string) => Array.from(text, (c) => c.charCodeAt(0)),
  run: async () => {
    throw new Error('the CPU plan must not run probe batches');
  },
};
const base = { ...DEFAULT_SCHEDULER_LIMITS, maxQueueTokens: 1000 };

describe('planBatchLimits', () => {
  it('leaves the limits as given when no setting is passed', async () => {
    expect(await planBatchLimits({}, base, cpu)).toEqual({ limits: base, reason: null });
  });

  it('applies numbers as given, on any device, without measuring', async () => {
    const gpu = { ...cpu, device: 'webgpu' };
    for (const backend of [cpu, gpu]) {
      const plan = await planBatchLimits({ tokens: 300, size: 7 }, base, backend);
      expect(plan).toEqual({ limits: { ...base, maxBatchTokens: 300, maxBatchSize: 7 }, reason: null });
    }
  });

  it('resolves auto on the CPU to its fixed figures, each setting on its own', async () => {
    expect((await planBatchLimits({ tokens: 'auto', size: 'auto' }, base, cpu)).limits).toEqual({ ...base, maxBatchTokens: CPU_AUTO_BATCH_TOKENS, maxBatchSize: CPU_AUTO_BATCH_SIZE });
    expect((await planBatchLimits({ tokens: 'auto', size: 9 }, base, cpu)).limits).toMatchObject({ maxBatchTokens: CPU_AUTO_BATCH_TOKENS, maxBatchSize: 9, maxQueueTokens: 1000 });
    expect((await planBatchLimits({ tokens: 100, size: 'auto' }, base, cpu)).limits).toMatchObject({ maxBatchTokens: 100, maxBatchSize: CPU_AUTO_BATCH_SIZE });
  });

  it('measures auto on WebGPU with probe batches of the backend', async () => {
    let probes = 0;
    const gpu = { ...cpu, device: 'webgpu', run: async (batch: readonly (readonly number[])[]) => (probes++, batch.map(() => new Float32Array(4))) };
    const plan = await planBatchLimits({ tokens: 'auto', size: 12 }, base, gpu);
    expect(probes).toBeGreaterThan(0);
    expect(plan.reason).toMatch(/^max batch tokens \d+ \(auto, measured at 128 tokens a text: .*\), max batch size 12$/);
    expect(plan.limits.maxBatchSize).toBe(12);
  });
});
