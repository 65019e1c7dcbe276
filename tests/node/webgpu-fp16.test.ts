// fp16 on WebGPU for real: model/runtime/fp16.py converts the model folders (numpy + onnx), and
// onnxruntime-node's WebGPU provider runs the result on Mesa's lavapipe, which offers shader-f16.
// --dtype auto takes fp16 there; vectors stay within cosine 0.999 of the CPU path's fp32.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Embedder, EmbedInput } from '../../src/embedder/types.ts';
import { BUNDLED_MODEL_DIR, loadModelFolder, TEST_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { decideGpuDtype, type DtypeFacts } from '../../src/node/runtime/webgpu/decide.ts';
import { describeEmbedderConformance } from '../embedder/conformance.ts';
import { pythonWithOnnx } from '../support/python.ts';
import { expectSameEmbeddings, GPU_TEXTS } from './gpu-fixtures.ts';

const python = pythonWithOnnx();
const work = mkdtempSync(join(tmpdir(), 'lexembed-fp16-'));
const folders: Record<string, string> = {};
for (const dir of [TEST_MODEL_DIR, BUNDLED_MODEL_DIR]) {
  const copy = join(work, basename(dir));
  cpSync(dir, copy, { recursive: true });
  execFileSync(python, ['-m', 'model.runtime.fp16', copy]);
  folders[basename(dir)] = copy;
}
afterAll(() => rmSync(work, { recursive: true, force: true }));

const input = (texts: string[]): EmbedInput => ({ texts, task: 'retrieval/document', overflowStrategy: 'drop_end', dimensions: null });

describe('model/runtime/fp16.py', () => {
  const inspect = (file: string) =>
    JSON.parse(
      execFileSync(python, [
        '-c',
        `import json, onnx; m = onnx.load(${JSON.stringify(file)}); g = m.graph
print(json.dumps({"initializers": sorted({onnx.TensorProto.DataType.Name(t.data_type) for t in g.initializer}),
  "inputs": [onnx.TensorProto.DataType.Name(i.type.tensor_type.elem_type) for i in g.input],
  "outputs": [(o.name, onnx.TensorProto.DataType.Name(o.type.tensor_type.elem_type)) for o in g.output]}))`,
      ]).toString(),
    );

  it('turns every float weight into float16 and keeps the float32 interface', () => {
    const before = inspect(join(BUNDLED_MODEL_DIR, 'onnx', 'model.onnx'));
    const after = inspect(join(folders['legal-2-embedder']!, 'onnx', 'model_fp16.onnx'));
    expect(before.initializers).toContain('FLOAT');
    expect(after.initializers).not.toContain('FLOAT');
    expect(after.initializers).toContain('FLOAT16');
    expect(after.inputs).toEqual(before.inputs);
    expect(after.outputs).toEqual([['last_hidden_state', 'FLOAT']]);
  });

  it('refuses a graph float16 does not suit, and a folder that is not a model folder, saying why', () => {
    const bad = join(work, 'bad');
    execFileSync(python, [
      '-c',
      `import os, onnx; from onnx import helper, TensorProto as T
os.makedirs(${JSON.stringify(join(bad, 'onnx'))})
g = helper.make_graph([helper.make_node('Range', ['a', 'b', 'c'], ['y'])], 'g',
  [helper.make_tensor_value_info(n, T.FLOAT, []) for n in 'abc'], [helper.make_tensor_value_info('y', T.FLOAT, [None])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 14)]), ${JSON.stringify(join(bad, 'onnx', 'model.onnx'))})`,
    ]);
    const refused = spawnSync(python, ['-m', 'model.runtime.fp16', bad], { encoding: 'utf8' });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/Range.*takes float inputs, which float16 does not suit; not converted/);
    const notFolder = spawnSync(python, ['-m', 'model.runtime.fp16', work], { encoding: 'utf8' });
    expect(notFolder.status).toBe(2);
    expect(notFolder.stderr).toContain('onnx/model.onnx does not exist: MODEL_DIR must be a model folder');
  });
});

describe('--dtype decision (pure)', () => {
  const nvidia = { name: 'nvidia hopper NVIDIA H100', fallback: false, features: ['shader-f16', 'subgroups'] };
  const facts: DtypeFacts = { device: 'webgpu', runtime: 'native', adapter: nvidia, modelDtype: 'fp32', hasFp16File: true, folder: 'models/m' };

  it('auto takes fp16 only when the adapter, the runtime, the model and the file all allow it, and says what was missing', () => {
    expect(decideGpuDtype('auto', facts)).toEqual({ dtype: 'fp16', reason: 'dtype fp16 (auto: the adapter offers shader-f16 and the folder has onnx/model_fp16.onnx)' });
    expect(decideGpuDtype('auto', { ...facts, adapter: { ...nvidia, features: ['subgroups'] } }).reason).toMatch(/fp32 \(auto: not fp16 because the adapter \(nvidia hopper NVIDIA H100\) does not offer shader-f16\)/);
    expect(decideGpuDtype('auto', { ...facts, hasFp16File: false }).reason).toContain('make it with: python3 -m model.runtime.fp16 models/m');
    expect(decideGpuDtype('auto', { ...facts, runtime: 'web' }).dtype).toBe('fp32');
    expect(decideGpuDtype('auto', { ...facts, modelDtype: 'q8' })).toMatchObject({ dtype: 'q8' });
    expect(decideGpuDtype('auto', { ...facts, device: 'cpu' })).toMatchObject({ dtype: 'fp32', reason: expect.stringMatching(/^dtype fp32 \(auto: not q8 because the model folder has no onnx\/model_quantized.onnx/) });
    expect(decideGpuDtype('fp32', facts).dtype).toBe('fp32');
  });

  it('an explicit fp16 that cannot be had throws the reason', () => {
    expect(() => decideGpuDtype('fp16', { ...facts, device: 'cpu' })).toThrow('--dtype fp16: the model runs on cpu, where fp16 is slower than fp32');
    expect(() => decideGpuDtype('fp16', { ...facts, adapter: undefined })).toThrow(/does not offer shader-f16/);
  });
});

describeEmbedderConformance('webgpu fp16 (onnxruntime-node provider, --dtype fp16), test model', () => loadModelFolder(folders['test-tiny']!, { device: 'webgpu', gpuDtype: 'fp16' }), { exactRepeat: false });

describe('the bundled model in fp16 on WebGPU against fp32 on the CPU', () => {
  let cpu: Embedder;
  let gpu: Embedder;
  beforeAll(async () => {
    [cpu, gpu] = await Promise.all([loadModelFolder(BUNDLED_MODEL_DIR, { device: 'cpu' }), loadModelFolder(folders['legal-2-embedder']!, { device: 'webgpu' })]);
  }, 180_000);
  afterAll(async () => Promise.all([cpu?.dispose(), gpu?.dispose()]));

  it('--dtype auto takes fp16 on lavapipe (shader-f16), checks it against the CPU path at load and says so', () => {
    expect(gpu.runtime.deviceReason).toContain('dtype fp16 (auto: the adapter offers shader-f16 and the folder has onnx/model_fp16.onnx)');
    expect(gpu.runtime.deviceReason).toMatch(/fp16 checked at load against the CPU path's fp32 on 8 texts: min cosine 0\.999\d+/);
  });

  it('gives the CPU path\'s vectors within cosine 0.999, and the same token count', async () => {
    const [a, b] = await expectSameEmbeddings(cpu, gpu, input(GPU_TEXTS), 0.999);
    expect(b.inputTokens).toBeGreaterThan(0);
    expect(b.inputTokens).toBe(a.inputTokens);
  }, 120_000);

  it('--dtype fp16 on a folder without model_fp16.onnx stops start-up, saying how to make it', async () => {
    await expect(loadModelFolder(BUNDLED_MODEL_DIR, { device: 'webgpu', gpuDtype: 'fp16' })).rejects.toThrow(/--dtype fp16: the model folder has no onnx\/model_fp16\.onnx \(make it with: python3 -m model\.runtime\.fp16 .*legal-2-embedder/);
  }, 120_000);
});

describe('an fp16 graph whose vectors are off (a broken fp16 path, as a driver could give)', () => {
  // test-tiny's fp16 graph with its largest float16 weight shuffled: it loads and runs, wrongly.
  const broken = join(work, 'broken-fp16');
  beforeAll(() => {
    cpSync(folders['test-tiny']!, broken, { recursive: true });
    const file = join(broken, 'onnx', 'model_fp16.onnx');
    execFileSync(python, [
      '-c',
      `import numpy as np, onnx; from onnx import numpy_helper as nh
m = onnx.load(${JSON.stringify(file)}); big = max(m.graph.initializer, key=lambda t: np.prod(t.dims) if t.data_type == onnx.TensorProto.FLOAT16 else 0)
a = nh.to_array(big).copy(); np.random.default_rng(0).shuffle(a.reshape(-1)); big.CopyFrom(nh.from_array(a, big.name)); onnx.save(m, ${JSON.stringify(file)})`,
    ]);
  });

  it('--dtype auto loads fp32 instead, saying the fp16 vectors were off, and serves the CPU path\'s vectors', async () => {
    const [gpu, cpu] = [await loadModelFolder(broken, { device: 'webgpu' }), await loadModelFolder(TEST_MODEL_DIR, { device: 'cpu' })];
    try {
      expect(gpu.runtime.deviceReason).toMatch(/dtype fp32 \(auto: not fp16 because fp16 vectors were off at load: min cosine (-?\d\.\d+|NaN) against the CPU path's fp32 on 8 texts \(below 0\.999\)\)/);
      expect(gpu.runtime.deviceReason).not.toContain('dtype fp16');
      await expectSameEmbeddings(cpu, gpu, input(GPU_TEXTS), 0.999);
    } finally {
      await Promise.all([gpu.dispose(), cpu.dispose()]);
    }
  }, 180_000);

  it('--dtype fp16 stops start-up with the figure and what to run instead', async () => {
    await expect(loadModelFolder(broken, { device: 'webgpu', gpuDtype: 'fp16' })).rejects.toThrow(
      /--dtype fp16: fp16 vectors were off at load: min cosine (-?\d\.\d+|NaN) against the CPU path's fp32 on 8 texts \(below 0\.999\) on this adapter; run --dtype fp32 \(or auto, which then keeps fp32\)/,
    );
  }, 180_000);
});
