// Batch limits: the rule is part of the inference plan (batchRule, resolved once with the device),
// applied at load (applyBatchRule). WebGPU's measured auto runs for real in webgpu.test.ts; here
// the rules around it.
import { describe, expect, it } from 'vitest';
import { applyBatchRule, batchRule, CPU_AUTO_BATCH_SIZE, CPU_AUTO_BATCH_TOKENS } from '../../../src/node/runtime/batch-plan.ts';
import { DEFAULT_SCHEDULER_LIMITS } from '../../../src/embedder/scheduler.ts';

const backend = {
  encode: (text: string) => Array.from(text, (c) => c.charCodeAt(0)),
  run: async () => {
    throw new Error('a rule without measure must not run probe batches');
  },
};
const base = { ...DEFAULT_SCHEDULER_LIMITS, maxQueueTokens: 1000 };

describe('batchRule', () => {
  it('is empty when no setting is passed, on any device', () => {
    expect(batchRule({}, 'cpu')).toEqual({});
    expect(batchRule({}, 'webgpu')).toEqual({});
  });

  it('keeps numbers on any device', () => {
    expect(batchRule({ tokens: 300, size: 7 }, 'cpu')).toEqual({ tokens: 300, size: 7 });
    expect(batchRule({ tokens: 300, size: 7 }, 'webgpu')).toEqual({ tokens: 300, size: 7 });
  });

  it('resolves auto to the CPU figures on the CPU and to a measurement on WebGPU, each setting on its own', () => {
    expect(batchRule({ tokens: 'auto', size: 'auto' }, 'cpu')).toEqual({ tokens: CPU_AUTO_BATCH_TOKENS, size: CPU_AUTO_BATCH_SIZE });
    expect(batchRule({ tokens: 'auto', size: 9 }, 'cpu')).toEqual({ tokens: CPU_AUTO_BATCH_TOKENS, size: 9 });
    expect(batchRule({ tokens: 100, size: 'auto' }, 'webgpu')).toEqual({ tokens: 100, size: 'measure' });
  });
});

describe('applyBatchRule', () => {
  it('leaves the limits as given for an empty rule, and applies numbers without measuring', async () => {
    expect(await applyBatchRule({}, base, backend)).toEqual({ limits: base, reason: null });
    expect(await applyBatchRule({ tokens: 300, size: 7 }, base, backend)).toEqual({ limits: { ...base, maxBatchTokens: 300, maxBatchSize: 7 }, reason: null });
  });

  it('measures with probe batches of the backend where the rule says so', async () => {
    let probes = 0;
    const gpu = { ...backend, run: async (batch: readonly (readonly number[])[]) => (probes++, batch.map(() => new Float32Array(4))) };
    const plan = await applyBatchRule({ tokens: 'measure', size: 12 }, base, gpu);
    expect(probes).toBeGreaterThan(0);
    expect(plan.reason).toMatch(/^max batch tokens \d+ \(auto, measured at 128 tokens a text: .*\), max batch size 12$/);
    expect(plan.limits.maxBatchSize).toBe(12);
  });
});
