// The inference plan (src/node/runtime/inference-plan.ts): device, runtime, precision, pooling and
// batch rule decided together from what was asked and what the machine offered. The plans run for
// real in webgpu.test.ts, webgpu-fp16.test.ts and device-pooling.test.ts (lavapipe); here the
// decisions on reported adapters.
import { describe, expect, it } from 'vitest';
import { describePlan, planInference, withJavaScriptPooling, type InferenceRequest } from '../../../src/node/runtime/inference-plan.ts';
import { CPU_AUTO_BATCH_TOKENS } from '../../../src/node/runtime/batch-plan.ts';

const lavapipe = { name: 'mesa llvmpipe (LLVM 19)', fallback: true, features: ['shader-f16'] };
const nvidia = { name: 'nvidia hopper NVIDIA H100', fallback: false, features: ['shader-f16'] };
const model = { dtype: 'fp32', pooling: 'mean' as const, hasFp16File: true, folder: 'models/m' };
const ask = (request: Partial<InferenceRequest>): InferenceRequest => ({ device: 'auto', dtype: 'auto', batch: { tokens: 'auto', size: 'auto' }, ...request });

describe('planInference', () => {
  it('on a machine without WebGPU: the CPU, onnxruntime-node, the model dtype, JavaScript pooling, the CPU batch figures', () => {
    const plan = planInference(ask({}), { gpu: null, model });
    expect(plan).toMatchObject({ device: 'cpu', runtime: 'onnxruntime-node', dtype: 'fp32', pooling: 'javascript', batch: { tokens: CPU_AUTO_BATCH_TOKENS } });
    expect(describePlan(plan)).toMatch(/^auto: no WebGPU in this runtime \(navigator.gpu is missing\); using cpu; dtype fp32 \(auto: not q8 because the model folder has no onnx\/model_quantized.onnx/);
  });

  it('on the CPU, auto takes the int8 graph where the folder has it and its dev-set loss is within the bound, and the device line says so', () => {
    const record = { file: 'onnx/model_quantized.onnx', dtype: 'q8' as const, min_cosine: 0.9998, 'dev_ndcg@10': 0.641, 'fp32_dev_ndcg@10': 0.644, max_dev_loss: 0.005 };
    const withInt8 = { ...model, quantized: { hasFile: true, record } };
    const plan = planInference(ask({}), { gpu: null, model: withInt8 });
    expect(plan.dtype).toBe('q8');
    expect(describePlan(plan)).toContain('; dtype q8 (auto: the int8 graph onnx/model_quantized.onnx keeps quality: dev nDCG@10 0.641 vs fp32 0.644, within 0.005;');
    expect(planInference(ask({ dtype: 'fp32' }), { gpu: null, model: withInt8 }).dtype).toBe('fp32');
    // WebGPU keeps float graphs, whatever the folder offers.
    expect(planInference(ask({}), { gpu: { adapters: [nvidia], errors: [] }, model: withInt8 }).dtype).toBe('fp16');
  });

  it('auto with a hardware adapter: the native provider, fp16 where the adapter and folder allow, pooled on the GPU, batches measured', () => {
    const plan = planInference(ask({}), { gpu: { adapters: [lavapipe, nvidia], errors: [] }, model });
    expect(plan).toMatchObject({ device: 'webgpu', adapter: nvidia, runtime: 'onnxruntime-node-webgpu', dtype: 'fp16', pooling: 'gpu', batch: { tokens: 'measure', size: 'measure' } });
    expect(describePlan(plan)).toBe(
      "auto: WebGPU adapter nvidia hopper NVIDIA H100 (onnxruntime-node's WebGPU provider); dtype fp16 (auto: the adapter offers shader-f16 and the folder has onnx/model_fp16.onnx); exported graph (auto: not fused because the model folder has no onnx/model_fused.onnx (make it with: python3 -m model.runtime.fuse --model models/m (onnx and onnxruntime's Python package))); mean pooling on the GPU",
    );
    expect(planInference(ask({}), { gpu: { adapters: [nvidia], errors: [] }, model: { ...model, hasFp16File: false } }).dtype).toBe('fp32');
  });

  it('--gpu-adapter naming another adapter than Dawn\'s default takes onnxruntime-web, which pools in JavaScript and keeps fp32', () => {
    const gpu = { adapters: [lavapipe], errors: [] };
    const other = planInference(ask({ device: 'webgpu', gpuAdapter: 'llvmpipe' }), { gpu, defaultAdapter: nvidia.name, model });
    expect(other).toMatchObject({ runtime: 'onnxruntime-web', pooling: 'javascript', dtype: 'fp32' });
    expect(describePlan(other)).toMatch(/^webgpu was requested; adapter: mesa llvmpipe .*\(onnxruntime-web over Dawn\); dtype fp32 \(auto: not fp16 because the web runtime's fp16 is untested/);
    const same = planInference(ask({ device: 'webgpu', gpuAdapter: 'llvmpipe' }), { gpu, defaultAdapter: lavapipe.name, model });
    expect(same).toMatchObject({ runtime: 'onnxruntime-node-webgpu', pooling: 'gpu' });
  });

  it('LEXEMBED_GPU_POOLING=js and a failed set-up both pool in JavaScript and say why', () => {
    const gpu = { adapters: [nvidia], errors: [] };
    expect(describePlan(planInference(ask({ poolInJs: true }), { gpu, model }))).toMatch(/; pooling in JavaScript \(LEXEMBED_GPU_POOLING=js\)$/);
    const failed = withJavaScriptPooling(planInference(ask({}), { gpu, model }), 'no adapter for the pooling session');
    expect(failed.pooling).toBe('javascript');
    expect(describePlan(failed)).toMatch(/; pooling in JavaScript \(pooling on the GPU failed: no adapter for the pooling session\)$/);
  });

  it('refuses what was asked explicitly and cannot be had, with the reason', () => {
    expect(() => planInference(ask({ device: 'webgpu' }), { gpu: { adapters: [], errors: ['no suitable backends found'] }, model })).toThrow(/--device webgpu: no WebGPU adapter is usable/);
    expect(() => planInference(ask({ device: 'cpu', dtype: 'fp16' }), { gpu: null, model })).toThrow('--dtype fp16: the model runs on cpu, where fp16 is slower than fp32');
  });

  it('an explicit cpu ignores any adapter, and batch numbers stand', () => {
    const plan = planInference(ask({ device: 'cpu', batch: { tokens: 512, size: 8 } }), { gpu: { adapters: [nvidia], errors: [] }, model });
    expect(plan).toMatchObject({ device: 'cpu', runtime: 'onnxruntime-node', batch: { tokens: 512, size: 8 } });
    expect(plan.reasons).toEqual({ device: 'cpu was requested (onnxruntime-node)', dtype: expect.stringMatching(/^dtype fp32 \(auto: not q8 because/) });
  });
});
