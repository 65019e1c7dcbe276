// Small batches on a one-thread copy of the model (--small-batch-tokens): a lone query wakes no
// sleeping onnxruntime pool thread. Which session runs a batch is seen by counting each loaded
// model's calls; the copy's vectors are the many-thread session's, to the bit.
import { readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { AutoModel } from '@huggingface/transformers';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { loadsOneThreadCopy, runsOnOneThread } from '../../../src/backend/one-thread-copy.ts';
import { createTransformersBackend } from '../../../src/backend/transformers-backend.ts';
import { parseModelSettings, SETTINGS_FILE } from '../../../src/embedder/settings.ts';
import type { EmbeddingBackend, Embedder } from '../../../src/embedder/types.ts';
import { loadModelFolder, TEST_MODEL_DIR } from '../../../src/node/runtime/load-model.ts';

describe('which batches the one-thread copy runs', () => {
  it('takes a batch whose padded tokens (texts × width) are at most the limit', () => {
    expect(runsOnOneThread([1, 16], 256)).toBe(true);
    expect(runsOnOneThread([4, 64], 256)).toBe(true);
    expect(runsOnOneThread([1, 257], 256)).toBe(false);
    expect(runsOnOneThread([8, 64], 256)).toBe(false);
  });

  it('is loaded only on the CPU provider with more than one thread and a limit above 0', () => {
    expect(loadsOneThreadCopy({ device: 'cpu', intraOpNumThreads: 2, smallBatchTokens: 256 })).toBe(true);
    expect(loadsOneThreadCopy({ intraOpNumThreads: 16, smallBatchTokens: 1 })).toBe(true);
    expect(loadsOneThreadCopy({ device: 'cpu', intraOpNumThreads: 1, smallBatchTokens: 256 })).toBe(false);
    expect(loadsOneThreadCopy({ device: 'cpu', intraOpNumThreads: 2, smallBatchTokens: 0 })).toBe(false);
    expect(loadsOneThreadCopy({ device: 'cpu', smallBatchTokens: 256 })).toBe(false); // onnxruntime's own default
    expect(loadsOneThreadCopy({ device: 'webgpu', intraOpNumThreads: 2, smallBatchTokens: 256 })).toBe(false);
    expect(loadsOneThreadCopy({ device: 'cpu', executionProviders: ['webgpu'], intraOpNumThreads: 2, smallBatchTokens: 256 })).toBe(false);
  });
});

describe('the transformers.js backend with a one-thread copy (test model)', () => {
  const settings = parseModelSettings(JSON.parse(readFileSync(join(TEST_MODEL_DIR, SETTINGS_FILE), 'utf8')), SETTINGS_FILE);
  const options = { modelId: basename(TEST_MODEL_DIR), localModelPath: dirname(TEST_MODEL_DIR) + '/', settings, device: 'cpu', intraOpNumThreads: 2 };
  const backends: EmbeddingBackend[] = [];
  const fromPretrained = AutoModel.from_pretrained.bind(AutoModel);
  afterEach(() => vi.restoreAllMocks());
  afterAll(async () => Promise.all(backends.map((b) => b.dispose())));

  /** Loads a backend, counting each loaded model's calls by its intra-op thread count (one load at a time). */
  async function counted(smallBatchTokens: number): Promise<{ backend: EmbeddingBackend; calls: Map<number, number> }> {
    const calls = new Map<number, number>();
    vi.spyOn(AutoModel, 'from_pretrained').mockImplementation(async (id, loadOptions) => {
      const model = await fromPretrained(id, loadOptions);
      const threads = (loadOptions?.session_options as { intraOpNumThreads?: number } | undefined)?.intraOpNumThreads ?? 0;
      calls.set(threads, 0);
      const call = (model as unknown as { _call: (...args: unknown[]) => unknown })._call.bind(model);
      (model as unknown as { _call: (...args: unknown[]) => unknown })._call = (...args) => (calls.set(threads, calls.get(threads)! + 1), call(...args));
      return model;
    });
    const backend = await createTransformersBackend({ ...options, smallBatchTokens });
    backends.push(backend);
    vi.restoreAllMocks();
    return { backend, calls };
  }
  const ids = (texts: number, width: number) => Array.from({ length: texts }, (_, t) => [101, ...Array.from({ length: width - 2 - (t % 3) }, (_, k) => 1000 + ((t * 37 + k * 11) % 900)), 102]);

  it('runs batches up to the limit on the copy and larger ones on the shared session, with the same vectors as without a copy', async () => {
    const withCopy = await counted(256);
    const without = await counted(0);
    expect([...withCopy.calls.keys()].sort()).toEqual([1, 2]);
    expect([...without.calls.keys()]).toEqual([2]);
    expect(withCopy.backend.name).toBe('transformers.js (cpu; batches of up to 256 tokens on a one-thread copy)');
    expect(without.backend.name).toBe('transformers.js (cpu)');

    const small = [ids(1, 12), ids(4, 64)]; // 12 and exactly 256 padded tokens
    const large = [ids(8, 60), ids(1, 64).concat(ids(4, 64))]; // 480 and 320
    for (const batch of [...small, ...large]) {
      const [a, b] = await Promise.all([withCopy.backend.run(batch), without.backend.run(batch)]);
      expect(a.length).toBe(batch.length);
      for (const [k, v] of a.entries()) expect(Array.from(v)).toEqual(Array.from(b[k]!));
    }
    expect(withCopy.calls.get(1)).toBe(small.length);
    expect(withCopy.calls.get(2)).toBe(large.length);
    expect(without.calls.get(2)).toBe(small.length + large.length);
  }, 60_000);
});

describe('the device line says when the copy is loaded', () => {
  const loaded: Embedder[] = [];
  afterAll(async () => Promise.all(loaded.map((e) => e.dispose())));
  it.each([
    [{ threads: 2 }, 'transformers.js (cpu, worker thread; batches of up to 256 tokens on a one-thread copy)'],
    [{ threads: 2, smallBatchTokens: 64 }, 'transformers.js (cpu, worker thread; batches of up to 64 tokens on a one-thread copy)'],
    [{ threads: 2, smallBatchTokens: 0 }, 'transformers.js (cpu, worker thread)'],
    [{ threads: 1 }, 'transformers.js (cpu, worker thread)'],
    [{ threads: 2, inference: 'main' as const }, 'transformers.js (cpu; batches of up to 256 tokens on a one-thread copy)'],
  ])('%j', async (options, name) => {
    const embedder = await loadModelFolder(TEST_MODEL_DIR, { device: 'cpu', ...options });
    loaded.push(embedder);
    expect(embedder.runtime.backendName).toBe(name);
    const out = await embedder.embed({ texts: ['the lessee shall pay rent', 'notice of termination '.repeat(12)], task: null, overflowStrategy: null, dimensions: null });
    expect(out.ok).toBe(true);
  }, 60_000);
});
