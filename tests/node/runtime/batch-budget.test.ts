// --max-batch-tokens auto: the choice from measured probes (pure), and the measuring loop on a
// deterministic fake GPU whose batch time is a fixed cost plus a per-token cost (a fake clock, so
// no timing here depends on this machine's load). The real measurement runs on lavapipe in
// tests/node/webgpu.test.ts (serve --device webgpu logs what it chose).
import { describe, expect, it } from 'vitest';
import { chooseBatchTokens, measureBatchBudget } from '../../../src/node/runtime/batch-budget.ts';

describe('chooseBatchTokens', () => {
  it('keeps doubling while a batch stays within the latency target and pays ≥ 10 % more texts/s', () => {
    const probes = [
      { tokens: 1024, rows: 8, ms: 4 },
      { tokens: 2048, rows: 16, ms: 5 },
      { tokens: 4096, rows: 32, ms: 8 },
      { tokens: 8192, rows: 64, ms: 15.5 }, // 4129 texts/s vs 4000: +3 %, not worth it
    ];
    const choice = chooseBatchTokens(probes);
    expect(choice.maxBatchTokens).toBe(4096);
    expect(choice.maxBatchSize).toBe(64);
    expect(choice.reason).toBe('max batch tokens 4096 (auto, measured at 128 tokens a text: 1024: 4 ms, 2048: 5 ms, 4096: 8 ms, 8192: 16 ms; stopped at 8192 tokens gave 4129 texts/s, less than 1.1× the 4000 of 4096)');
  });

  it('stops at the latency target; a GPU too slow for 1024 tokens gets 512', () => {
    expect(chooseBatchTokens([{ tokens: 1024, rows: 8, ms: 100 }, { tokens: 2048, rows: 16, ms: 300 }]).maxBatchTokens).toBe(1024);
    const slow = chooseBatchTokens([{ tokens: 1024, rows: 8, ms: 1417 }]);
    expect(slow.maxBatchTokens).toBe(512);
    expect(slow.reason).toContain('stopped at 1024 tokens took 1417 ms, over the 250 ms target');
  });

  it('raises the batch size with a budget past 64 texts of 128 tokens', () => {
    const probes = [1024, 2048, 4096, 8192, 16384, 32768].map((tokens, i) => ({ tokens, rows: tokens / 128, ms: 2 + i }));
    expect(chooseBatchTokens(probes)).toMatchObject({ maxBatchTokens: 32768, maxBatchSize: 256 });
  });
});

describe('measureBatchBudget on a fake GPU', () => {
  /** A GPU whose batch costs `fixed` ms plus `perToken` ms a padded token, on a fake clock. */
  function fakeGpu(fixed: number, perToken: number) {
    let clock = 0;
    const calls: number[] = [];
    return {
      now: () => clock,
      calls,
      run: async (batch: number[][]) => {
        calls.push(batch.length);
        clock += fixed + perToken * batch.length * batch[0]!.length;
        return [];
      },
    };
  }
  const sequence = Array.from({ length: 128 }, (_, i) => 100 + i);

  it('a big GPU (5 ms a call, 0.1 µs a token) goes to 32768', async () => {
    const gpu = fakeGpu(5, 0.0001);
    const choice = await measureBatchBudget(gpu.run, sequence, 250, gpu.now);
    expect(choice.maxBatchTokens).toBe(32768);
    expect(choice.probes.map((p) => p.tokens)).toEqual([1024, 2048, 4096, 8192, 16384, 32768]);
    expect(gpu.calls).toEqual([8, 8, 16, 16, 32, 32, 64, 64, 128, 128, 256, 256]); // each shape compiled, then timed
  });

  it('a small GPU stops where doubling stops paying, without running larger batches', async () => {
    const gpu = fakeGpu(2, 0.05); // 1024: 53 ms, 2048: 104 ms (+4 %): keep 1024
    const choice = await measureBatchBudget(gpu.run, sequence, 250, gpu.now);
    expect(choice.maxBatchTokens).toBe(1024);
    expect(gpu.calls).toEqual([8, 8, 16, 16]);
  });

  it('a software adapter slower than the target at 1024 tokens keeps the CPU default', async () => {
    const gpu = fakeGpu(10, 1);
    expect((await measureBatchBudget(gpu.run, sequence, 250, gpu.now)).maxBatchTokens).toBe(512);
    expect(gpu.calls).toEqual([8, 8]);
  });
});
