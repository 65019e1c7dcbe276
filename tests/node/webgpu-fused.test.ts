// onnxruntime's fused graph (model/runtime/fuse.py: Attention, SkipLayerNormalization, BiasGelu) on
// onnxruntime-node's own WebGPU provider, for real on lavapipe in CI: models/test-tiny-bert (the
// shipped transformer's architecture, exported and fused as the hybrid's is) carries both graphs.
// --graph auto runs the fused one on WebGPU and the exported one on the CPU, each with the CPU
// path's vectors; a stale or missing fused graph is said, never served.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Embedder, EmbedInput } from '../../src/embedder/types.ts';
import { loadModelFolder, modelFingerprint, PROJECT_ROOT } from '../../src/node/runtime/load-model.ts';
import { decideGraph } from '../../src/node/runtime/webgpu/decide.ts';
import { expectSameEmbeddings, GPU_TEXTS } from './gpu-fixtures.ts';

const TINY_BERT = join(PROJECT_ROOT, 'models', 'test-tiny-bert');
const input = (texts: string[]): EmbedInput => ({ texts, task: 'retrieval/document', overflowStrategy: 'drop_end', dimensions: null });
const work = mkdtempSync(join(tmpdir(), 'lexembed-fused-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('decideGraph', () => {
  const fused = { hasFile: true, record: { file: 'onnx/model_fused.onnx', min_cosine: 1 } };
  const facts = { device: 'webgpu' as const, runtime: 'native' as const, dtype: 'fp32', fused, folder: 'models/m' };
  it('auto: fused on the native WebGPU provider in float32 where the folder has it; else the exported graph, saying why on WebGPU', () => {
    expect(decideGraph('auto', facts)).toEqual({ graph: 'fused', reason: "fused graph onnx/model_fused.onnx (auto: onnxruntime's fused kernels on its WebGPU provider)" });
    expect(decideGraph('auto', { ...facts, device: 'cpu' })).toEqual({ graph: 'plain' });
    expect(decideGraph('auto', { ...facts, runtime: 'web' }).reason).toMatch(/not fused because the fused graph runs on onnxruntime-node's WebGPU provider/);
    expect(decideGraph('auto', { ...facts, dtype: 'fp16' }).reason).toMatch(/not fused because the plan runs fp16 and the fused graph is float32/);
    expect(decideGraph('auto', { ...facts, fused: undefined }).reason).toMatch(/not fused because the model folder has no onnx\/model_fused.onnx \(make it with: python3 -m model\.runtime\.fuse --model models\/m/);
    expect(decideGraph('plain', facts)).toEqual({ graph: 'plain', reason: 'exported graph (--graph plain)' });
  });
  it('an explicit fused that cannot be had stops with the reason; on the CPU it runs', () => {
    expect(() => decideGraph('fused', { ...facts, fused: { ...fused, hasFile: false } })).toThrow(/^--graph fused: the model folder has no onnx\/model_fused.onnx/);
    expect(decideGraph('fused', { ...facts, device: 'cpu' }).graph).toBe('fused');
  });
});

describe('the fused graph on onnxruntime-node (lavapipe WebGPU, and the CPU)', () => {
  let cpu: Embedder;
  let gpu: Embedder;
  beforeAll(async () => {
    [cpu, gpu] = await Promise.all([loadModelFolder(TINY_BERT, { device: 'cpu', threads: 1 }), loadModelFolder(TINY_BERT, { device: 'webgpu' })]);
  }, 120_000);
  afterAll(async () => Promise.all([cpu?.dispose(), gpu?.dispose()]));

  it('auto runs it on WebGPU and says so; the CPU keeps the exported graph', () => {
    expect(gpu.runtime.deviceReason).toContain("; fused graph onnx/model_fused.onnx (auto: onnxruntime's fused kernels on its WebGPU provider)");
    expect(cpu.runtime.deviceReason ?? '').not.toContain('fused graph');
    expect(gpu.settings.fingerprint).toBe(modelFingerprint(TINY_BERT, 'fp32', 'fused'));
    expect(cpu.settings.fingerprint).toBe(modelFingerprint(TINY_BERT));
  });

  it('gives the exported graph\'s vectors on the CPU (min cosine 0.9999), with the same token counts', async () => {
    const [a, b] = await expectSameEmbeddings(cpu, gpu, input(GPU_TEXTS), 0.9999);
    expect(b.inputTokens).toBe(a.inputTokens);
  });

  it('--graph fused on the CPU gives the exported graph\'s vectors too', async () => {
    const fusedCpu = await loadModelFolder(TINY_BERT, { device: 'cpu', graph: 'fused', threads: 1 });
    try {
      expect(fusedCpu.runtime.deviceReason).toContain('fused graph onnx/model_fused.onnx was requested');
      await expectSameEmbeddings(cpu, fusedCpu, input(GPU_TEXTS), 0.99999);
    } finally {
      await fusedCpu.dispose();
    }
  });

  it('a fused graph made from another model.onnx (the folder rebuilt since) is not run, and the start-up line says why', async () => {
    const copy = join(work, 'rebuilt');
    cpSync(TINY_BERT, copy, { recursive: true });
    const settings = JSON.parse(readFileSync(join(copy, 'lexembed.json'), 'utf8'));
    expect(settings.fused.source_sha256, 'model.runtime.fuse records its source').toMatch(/^[0-9a-f]{64}$/);
    writeFileSync(join(copy, 'lexembed.json'), JSON.stringify({ ...settings, fused: { ...settings.fused, source_sha256: 'f'.repeat(64) } }));
    const stale = await loadModelFolder(copy, { device: 'webgpu' });
    try {
      expect(stale.runtime.deviceReason).toMatch(/exported graph \(auto: not fused because onnx\/model_fused.onnx was made from another onnx\/model.onnx/);
    } finally {
      await stale.dispose();
    }
    await expect(loadModelFolder(copy, { device: 'cpu', graph: 'fused' })).rejects.toThrow(/^--graph fused: onnx\/model_fused.onnx was made from another/);
  }, 120_000);
});
