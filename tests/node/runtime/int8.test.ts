// The int8 graph (onnx/model_quantized.onnx, model/runtime/quantize.py): the rule that decides when
// it is served (one for the server's CPU and the browser's WASM), and the shipped hybrid's int8
// graph run for real on onnxruntime-node against its float32 graph.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { int8Verdict, type ModelSettings } from '../../../src/embedder/settings.ts';
import type { Embedder, EmbedInput } from '../../../src/embedder/types.ts';
import { chooseDtype } from '../../../src/local/client.ts';
import { BUNDLED_MODEL_DIR, loadModelFolder, modelFingerprint } from '../../../src/node/runtime/load-model.ts';
import { decideGpuDtype, type DtypeFacts } from '../../../src/node/runtime/webgpu/decide.ts';

const record = (q8: number, fp32: number): NonNullable<ModelSettings['quantized']> => ({
  file: 'onnx/model_quantized.onnx',
  dtype: 'q8',
  min_cosine: 0.9998,
  'dev_ndcg@10': q8,
  'fp32_dev_ndcg@10': fp32,
  max_dev_loss: 0.005,
});

describe('int8Verdict: the int8 graph keeps quality where it loses at most max_dev_loss nDCG@10', () => {
  it('judges the measured pair', () => {
    expect(int8Verdict(record(0.64, 0.644))).toEqual({ keeps: true, figures: 'dev nDCG@10 0.640 vs fp32 0.644' });
    expect(int8Verdict(record(0.639, 0.644)).keeps).toBe(true); // exactly the bound
    expect(int8Verdict(record(0.63, 0.644))).toMatchObject({ keeps: false, why: 'it loses 0.014 nDCG@10 on the dev set (dev nDCG@10 0.630 vs fp32 0.644), more than 0.005' });
  });
  it('says what is missing', () => {
    expect(int8Verdict(undefined)).toMatchObject({ keeps: false, why: 'lexembed.json lists no int8 graph ("quantized")' });
    expect(int8Verdict({ ...record(0.64, 0.644), 'dev_ndcg@10': undefined })).toMatchObject({ keeps: false, why: expect.stringContaining('no dev-set figures') });
  });
});

describe('decideGpuDtype on the CPU', () => {
  const facts: DtypeFacts = { device: 'cpu', runtime: 'native', modelDtype: 'fp32', hasFp16File: false, quantized: { hasFile: true, record: record(0.642, 0.644) }, folder: 'models/m' };
  it('auto serves q8 where the folder has the file and the figures allow, and says why not otherwise', () => {
    expect(decideGpuDtype('auto', facts).dtype).toBe('q8');
    expect(decideGpuDtype('auto', { ...facts, quantized: { hasFile: false, record: record(0.642, 0.644) } }).reason).toMatch(/^dtype fp32 \(auto: not q8 because the model folder has no onnx\/model_quantized.onnx \(make it with: python3 -m model\.runtime\.quantize --model models\/m/);
    expect(decideGpuDtype('auto', { ...facts, quantized: { hasFile: true, record: record(0.6, 0.644) } }).reason).toMatch(/^dtype fp32 \(auto: not q8 because it loses 0.044 nDCG@10/);
    expect(decideGpuDtype('auto', { ...facts, modelDtype: 'q8' }).reason).toContain('not q8 because the model is q8');
  });
  it('an explicit q8 that cannot be had stops with the reason; fp32 is always had', () => {
    expect(decideGpuDtype('q8', { ...facts, quantized: { hasFile: true, record: record(0.6, 0.644) } }).dtype).toBe('q8'); // asked for: served, figures shown
    expect(() => decideGpuDtype('q8', { ...facts, quantized: undefined })).toThrow(/^--dtype q8: the model folder has no onnx\/model_quantized.onnx/);
    expect(() => decideGpuDtype('q8', { ...facts, device: 'webgpu' })).toThrow(/^--dtype q8: int8 \(q8\) runs on the CPU/);
    expect(() => decideGpuDtype('fp16', facts)).toThrow(/^--dtype fp16: the model runs on cpu/);
    expect(decideGpuDtype('fp32', facts)).toEqual({ dtype: 'fp32', reason: 'dtype fp32 was requested' });
  });
});

describe('chooseDtype in the browser', () => {
  const settings = { dtype: 'fp32', quantized: record(0.642, 0.644) } as ModelSettings;
  it('takes int8 on WASM where it keeps quality, the float32 graph on WebGPU', () => {
    expect(chooseDtype('auto', 'wasm', settings)).toEqual({ dtype: 'q8', reason: 'dtype q8 (auto: the int8 graph keeps quality: dev nDCG@10 0.642 vs fp32 0.644)' });
    expect(chooseDtype('auto', 'webgpu', settings).dtype).toBe('fp32');
    expect(chooseDtype('auto', 'wasm', { ...settings, quantized: record(0.6, 0.644) }).dtype).toBe('fp32');
    expect(chooseDtype('auto', 'wasm', { ...settings, quantized: undefined }).reason).toBe('dtype fp32 (auto: not q8 because lexembed.json lists no int8 graph ("quantized"))');
    expect(chooseDtype('fp32', 'wasm', settings).dtype).toBe('fp32');
    expect(() => chooseDtype('q8', 'webgpu', settings)).toThrow(/runs on WASM/);
  });
});

describe('the bundled hybrid\'s int8 graph on onnxruntime-node', () => {
  let fp32: Embedder;
  let q8: Embedder;
  let auto: Embedder;
  const work = mkdtempSync(join(tmpdir(), 'lexembed-int8-'));
  beforeAll(async () => {
    [fp32, q8, auto] = await Promise.all([
      loadModelFolder(BUNDLED_MODEL_DIR, { device: 'cpu', gpuDtype: 'fp32', threads: 1 }),
      loadModelFolder(BUNDLED_MODEL_DIR, { device: 'cpu', gpuDtype: 'q8', threads: 1 }),
      loadModelFolder(BUNDLED_MODEL_DIR, { device: 'cpu', threads: 1 }),
    ]);
  }, 180_000);
  afterAll(async () => {
    await Promise.all([fp32?.dispose(), q8?.dispose(), auto?.dispose()]);
    rmSync(work, { recursive: true, force: true });
  });
  const input = (texts: string[]): EmbedInput => ({ texts, task: 'retrieval/document', overflowStrategy: 'drop_end', dimensions: null });
  const texts = [
    'Termination for convenience',
    'The Lessee shall indemnify and hold harmless the Lessor from all claims arising out of the use of the premises.',
    'Any dispute arising under this Agreement shall be governed by the laws of the State of New York. '.repeat(12),
  ];

  it('auto serves it on the CPU, and the device line says so with the card\'s figures', () => {
    expect(auto.runtime.deviceReason).toMatch(/; dtype q8 \(auto: the int8 graph onnx\/model_quantized.onnx keeps quality: dev nDCG@10 0\.\d{3} vs fp32 0\.\d{3}, within 0\.005;/);
    expect(fp32.runtime.deviceReason).toContain('dtype fp32 was requested');
  });

  it('gives vectors within cosine 0.999 of the float32 graph, with the same token counts, and a fingerprint of its own', async () => {
    const [ra, rb] = await Promise.all([fp32.embed(input(texts)), q8.embed(input(texts))]);
    if (!ra.ok || !rb.ok) throw new Error('embedding failed');
    const [a, b] = [ra.value, rb.value];
    expect(b.inputTokens).toBe(a.inputTokens);
    for (const [i, v] of a.vectors.entries()) {
      const w = b.vectors[i]!;
      const cosine = v.reduce((s, x, k) => s + x * w[k]!, 0);
      expect(cosine, texts[i]).toBeGreaterThan(0.999);
      expect(cosine, 'not the same graph').toBeLessThan(0.999999);
    }
    expect(q8.settings.fingerprint).toBe(modelFingerprint(BUNDLED_MODEL_DIR, 'q8'));
    expect(fp32.settings.fingerprint).toBe(modelFingerprint(BUNDLED_MODEL_DIR));
    expect(q8.settings.fingerprint).not.toBe(fp32.settings.fingerprint);
  });

  it('an int8 graph made from another float32 graph (the folder rebuilt since) is not served, and says why', async () => {
    const copy = join(work, 'rebuilt');
    cpSync(BUNDLED_MODEL_DIR, copy, { recursive: true });
    const settingsPath = join(copy, 'lexembed.json');
    const settings = JSON.parse(readFileSync(settingsPath, 'utf8'));
    expect(settings.quantized.source_sha256, 'model.runtime.quantize records its source').toMatch(/^[0-9a-f]{64}$/);
    writeFileSync(settingsPath, JSON.stringify({ ...settings, quantized: { ...settings.quantized, source_sha256: '0'.repeat(64) } }));
    const stale = await loadModelFolder(copy, { device: 'cpu', threads: 1 });
    try {
      expect(stale.runtime.deviceReason).toMatch(/dtype fp32 \(auto: not q8 because onnx\/model_quantized.onnx was made from another onnx\/model.onnx \(lexembed.json "quantized" names sha256 000000000000…/);
    } finally {
      await stale.dispose();
    }
    await expect(loadModelFolder(copy, { device: 'cpu', gpuDtype: 'q8' })).rejects.toThrow(/^--dtype q8: onnx\/model_quantized.onnx was made from another onnx\/model.onnx/);
  });

  it('--dtype q8 on a folder without the file stops with how to make it', async () => {
    const copy = join(work, 'no-int8');
    cpSync(BUNDLED_MODEL_DIR, copy, { recursive: true, filter: (p) => !p.endsWith('model_quantized.onnx') });
    await expect(loadModelFolder(copy, { device: 'cpu', gpuDtype: 'q8' })).rejects.toThrow(/--dtype q8: the model folder has no onnx\/model_quantized.onnx \(make it with: python3 -m model\.runtime\.quantize/);
    const fallback = await loadModelFolder(copy, { device: 'cpu', threads: 1 });
    try {
      expect(fallback.runtime.deviceReason).toMatch(/dtype fp32 \(auto: not q8 because the model folder has no onnx\/model_quantized.onnx/);
    } finally {
      await fallback.dispose();
    }
  });
});

// Issue 66 item 9: onnxruntime's DynamicQuantizeLinear takes one activation scale per call, so a
// text's int8 vector moved with its batch companions (up to 1.1e-3 a component in a batch of 458).
describe('a text\'s int8 vector does not depend on what it is batched with', () => {
  let q8: Embedder;
  let shared: Embedder;
  beforeAll(async () => {
    [q8, shared] = await Promise.all([
      loadModelFolder(BUNDLED_MODEL_DIR, { device: 'cpu', gpuDtype: 'q8', threads: 1 }),
      // The int8 graph's texts batched together, as before: the same check must see them move.
      loadModelFolder(BUNDLED_MODEL_DIR, { device: 'cpu', gpuDtype: 'q8', threads: 1, oneTextPerRun: false }),
    ]);
  }, 180_000);
  afterAll(async () => Promise.all([q8?.dispose(), shared?.dispose()]));

  const query = 'Can the landlord end the lease early for convenience?';
  // Companions of about its length (the queue batches texts of like length), louder ones among them.
  const companions = Array.from({ length: 63 }, (_, i) => (i % 2 ? `Must the tenant pay ${1000 * (i + 1)} EUR within ${i + 2} days of notice?` : `WHO INDEMNIFIES THE LANDLORD UNDER CLAUSE ${i}?`));
  /** The largest difference of a component between the query embedded alone and in a batch of 64. */
  async function drift(embedder: Embedder): Promise<number> {
    const ask = (texts: string[]) => embedder.embed({ texts, task: 'retrieval/query', overflowStrategy: 'drop_end', dimensions: null });
    const alone = await ask([query]);
    const batched = await ask([...companions.slice(0, 31), query, ...companions.slice(31)]);
    if (!alone.ok || !batched.ok) throw new Error('embedding failed');
    const [a, b] = [alone.value.vectors[0]!, batched.value.vectors[31]!];
    return a.reduce((m, x, k) => Math.max(m, Math.abs(x - b[k]!)), 0);
  }

  it('the same query alone and in a batch of 64 like-length texts gives the same vector', async () => {
    expect(await drift(q8), 'largest difference of a component').toBeLessThanOrEqual(1e-7);
  }, 120_000);

  it('(batched together, one activation scale per call moved it: the check sees that)', async () => {
    expect(await drift(shared)).toBeGreaterThan(1e-5);
  }, 120_000);
});
