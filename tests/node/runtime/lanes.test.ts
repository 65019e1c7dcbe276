// Inference lanes (--lanes): several worker threads, each with a session of its own, fed by one
// scheduler. The vectors do not depend on the lane a text ran on, and a lone batch takes lane 0.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModelFolder, TEST_MODEL_DIR } from '../../../src/node/runtime/load-model.ts';
import { pickLane } from '../../../src/node/runtime/worker-backend.ts';
import type { Embedder } from '../../../src/embedder/types.ts';

const input = (texts: string[]) => ({ texts, task: null, overflowStrategy: null, dimensions: null });

describe('pickLane', () => {
  it('sends a batch to the lane with the fewest batches waiting, the first among equals', () => {
    expect(pickLane([0])).toBe(0);
    expect(pickLane([0, 0])).toBe(0);
    expect(pickLane([1, 0])).toBe(1);
    expect(pickLane([1, 1, 0])).toBe(2);
    expect(pickLane([2, 1, 1])).toBe(1);
  });

  it('passes over a lane whose worker ended (counted as infinitely busy) while another runs', () => {
    expect(pickLane([Number.POSITIVE_INFINITY, 3])).toBe(1);
    expect(pickLane([Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY])).toBe(0);
  });
});

describe('inference lanes on the test model', () => {
  let one: Embedder;
  let two: Embedder;
  beforeAll(async () => void ([one, two] = await Promise.all([loadModelFolder(TEST_MODEL_DIR, { device: 'cpu', lanes: 1, threads: 2, smallBatchTokens: 0 }), loadModelFolder(TEST_MODEL_DIR, { device: 'cpu', lanes: 2, threads: 1 })])), 120_000);
  afterAll(async () => void (await Promise.all([one?.dispose(), two?.dispose()])));

  it('says how many lanes run, and with how many threads', () => {
    expect(two.runtime.backendName).toBe('transformers.js (cpu, 2 inference lanes of 1 thread)');
    expect(one.runtime.backendName).toBe('transformers.js (cpu, worker thread)');
  });

  it('gives every text the same vector, to the bit, as one lane does, under more concurrent batches than one lane holds', async () => {
    // Eight concurrent requests of different lengths: more batches than one lane holds at once.
    const requests = Array.from({ length: 8 }, (_, r) => Array.from({ length: 6 }, (_, k) => `clause ${r}.${k} ${'the lessee shall indemnify the lessor '.repeat(1 + ((r + k) % 5))}`));
    const [a, b] = await Promise.all([one, two].map((e) => Promise.all(requests.map((texts) => e.embed(input(texts))))));
    for (const [r, out] of a!.entries()) {
      const other = b![r]!;
      expect(other.ok && out.ok).toBe(true);
      if (!other.ok || !out.ok) continue;
      expect(other.value.inputTokens).toBe(out.value.inputTokens);
      for (const [k, v] of out.value.vectors.entries()) expect(Array.from(other.value.vectors[k]!)).toEqual(Array.from(v));
    }
  });

  it('refuses more than one lane on the main thread, saying what to change', async () => {
    await expect(loadModelFolder(TEST_MODEL_DIR, { inference: 'main', lanes: 2 })).rejects.toThrow('--lanes 2 runs the model in 2 worker threads; use --inference worker (the default) with it, or --lanes 1');
  });
});
