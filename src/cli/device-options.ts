// Options that choose where a local model runs (src/node/runtime/webgpu/), shared by serve and embed.
import { z } from 'zod';
import { GPU_DTYPES, GRAPHS, SERVER_DEVICES } from '../node/runtime/webgpu/decide.ts';
import type { OptionSpecs, OptionValues } from './options.ts';

export const DEVICE_OPTIONS = {
  device: { env: 'LEXEMBED_DEVICE', default: 'auto', value: z.enum(SERVER_DEVICES, { error: 'must be "auto", "webgpu" or "cpu"' }), help: 'auto (WebGPU on a hardware adapter, else cpu), webgpu (stops if no adapter) or cpu (onnxruntime-node)' },
  'gpu-adapter': { env: 'LEXEMBED_GPU_ADAPTER', default: '', help: 'use the WebGPU adapter whose name contains this text, e.g. NVIDIA (default: the high-performance one; a non-default one implies --webgpu-runtime web)' },
  'webgpu-runtime': { env: 'LEXEMBED_WEBGPU_RUNTIME', default: 'native', value: z.enum(['native', 'web'], { error: 'must be "native" or "web"' }), help: "native (onnxruntime-node's own WebGPU provider, on the default adapter; 1.9x the web runtime on lavapipe) or web (onnxruntime-web over the webgpu package's Dawn; any adapter)" },
  dtype: {
    env: 'LEXEMBED_DTYPE',
    default: 'auto',
    value: z.enum(GPU_DTYPES, { error: 'must be "auto", "fp32", "fp16" or "q8"' }),
    help:
      "the model's precision: auto (on the cpu, q8 where the model folder has onnx/model_quantized.onnx and lexembed.json says it loses at most 0.005 nDCG@10 on the dev set, else fp32; on WebGPU, fp16 where the adapter has shader-f16 and the folder has onnx/model_fp16.onnx, else fp32), fp32, q8 (cpu: int8 MatMuls, model/runtime/quantize.py) or fp16 (WebGPU: model/runtime/fp16.py); an explicit one that cannot be had stops with the reason. fp16 is checked at load against the cpu path (min cosine 0.999 on 8 texts); below it, auto loads fp32 and fp16 stops",
  },
  graph: {
    env: 'LEXEMBED_GRAPH',
    default: 'auto',
    value: z.enum(GRAPHS, { error: 'must be "auto", "plain" or "fused"' }),
    help: "auto (onnxruntime's fused graph, onnx/model_fused.onnx from model/runtime/fuse.py, on onnxruntime-node's WebGPU provider where the folder has it; else the exported graph), plain (the exported graph) or fused (stops if it cannot be had)",
  },
} satisfies OptionSpecs;

/** The device options' values, as parseOptions gives them. */
export type DeviceConfig = OptionValues<typeof DEVICE_OPTIONS>;

/** The loadModelFolder options the device flags stand for. */
export function deviceOptions(config: DeviceConfig) {
  return { device: config.device, gpuAdapter: config['gpu-adapter'] || undefined, webgpuRuntime: config['webgpu-runtime'], gpuDtype: config.dtype, graph: config.graph };
}
