// The server's device choice: what --device accepts, and the shared rules of
// src/backend/device-rules.ts applied to the adapters Dawn offered (cpu = onnxruntime-node).
import { decideDevice, type AdapterReport, type DeviceDecision as SharedDecision } from '../../../backend/device-rules.ts';
import type { WebGPUHandle } from './detect.ts';
import { int8Verdict, type ModelSettings } from '../../../embedder/settings.ts';

export const SERVER_DEVICES = ['auto', 'webgpu', 'cpu'] as const;
export type ServerDevice = (typeof SERVER_DEVICES)[number];
export type DeviceDecision = SharedDecision<'cpu'>;

/** What to install when WebGPU cannot be had; part of every "no adapter" message. */
export const WEBGPU_INSTALL_HINT =
  'the webgpu path needs the npm package "webgpu" (an optional dependency of lexembed), the Vulkan loader (Debian: libvulkan1) and a Vulkan driver: ' +
  "on NVIDIA the driver's Vulkan ICD (in containers: NVIDIA_DRIVER_CAPABILITIES including graphics); without a GPU, Mesa 25 lavapipe " +
  '(Debian 12: apt-get install -t bookworm-backports mesa-vulkan-drivers)';

/**
 * Picks the server's device from what was asked and the adapters Dawn offered (the shared rules
 * of src/backend/device-rules.ts); throws when `webgpu` was asked for and cannot be had.
 */
export function decideServerDevice(requested: ServerDevice, handle: Pick<WebGPUHandle, 'adapters' | 'errors'> | null, adapterName = ''): DeviceDecision {
  const wanted = adapterName ? ` matching --gpu-adapter "${adapterName}"` : '';
  return decideDevice(requested, { present: handle !== null, adapters: handle?.adapters ?? [], errors: handle?.errors ?? [] }, {
    cpu: 'cpu',
    cpuName: 'onnxruntime-node',
    noAdapterError: (seen, errors) => new Error(`--device webgpu: no WebGPU adapter${wanted} is usable. Adapters seen: ${seen}.${errors} Install: ${WEBGPU_INSTALL_HINT}.`),
  });
}

export const GPU_DTYPES = ['auto', 'fp32', 'fp16', 'q8'] as const;
export type GpuDtype = (typeof GPU_DTYPES)[number];
/** The float16 graph beside onnx/model.onnx (transformers.js's name for dtype fp16). */
export const FP16_MODEL_FILE = 'onnx/model_fp16.onnx';
/** The int8 graph beside onnx/model.onnx (transformers.js's name for dtype q8; model/runtime/quantize.py). */
export const Q8_MODEL_FILE = 'onnx/model_quantized.onnx';

/** The folder's int8 graph: whether the file is there, and lexembed.json's record of it (model/runtime/quantize.py). */
export interface QuantizedFacts {
  readonly hasFile: boolean;
  readonly record: ModelSettings['quantized'];
  /** Set where the record names another onnx/model.onnx than the folder's (rebuilt since): why the int8 graph is stale. */
  readonly stale?: string;
}

/** The folder's fused graph: whether the file is there, and lexembed.json's record of it (model/runtime/fuse.py). */
export interface FusedFacts {
  readonly hasFile: boolean;
  readonly record: ModelSettings['fused'];
  /** Set where the record names another onnx/model.onnx than the folder's (rebuilt since). */
  readonly stale?: string;
}

/** --graph: the exported graph (plain), onnxruntime's fused one (fused), or auto (fused on the native WebGPU provider where the folder has it). */
export const GRAPHS = ['auto', 'plain', 'fused'] as const;
export type GraphChoice = (typeof GRAPHS)[number];
/** The fused graph beside onnx/model.onnx (transformers.js's model_file_name "model_fused"). */
export const FUSED_MODEL_FILE = 'onnx/model_fused.onnx';

/**
 * Which graph runs: onnxruntime's fused one (Attention, SkipLayerNormalization, BiasGelu: kernels
 * its WebGPU provider ships, which an exported graph never reaches) or the exported one. auto takes
 * the fused graph on onnxruntime-node's WebGPU provider in float32 where the folder has a fresh one
 * (measured on lavapipe: ×1.28 at 8 × 16 tokens, ×1.36 at 8 × 128, identical vectors), and the
 * exported graph on the CPU (raw onnxruntime-node there: ×0.88 / ×0.90 / ×1.00 at ~16 / ~128 / ~512 tokens), saying why on WebGPU; an
 * explicit fused that cannot be had stops start-up with the reason.
 */
export function decideGraph(requested: GraphChoice, facts: { device: 'webgpu' | 'cpu'; runtime: 'native' | 'web'; dtype: string; fused?: FusedFacts; folder: string }): { graph: 'plain' | 'fused'; reason?: string } {
  const make = `make it with: python3 -m model.runtime.fuse --model ${facts.folder} (onnx and onnxruntime's Python package)`;
  const missing = !facts.fused?.hasFile
    ? `the model folder has no ${FUSED_MODEL_FILE} (${make})`
    : facts.fused.stale
      ? `${facts.fused.stale} (${make})`
      : facts.dtype !== 'fp32'
        ? `the plan runs ${facts.dtype} and the fused graph is float32 (--dtype fp32 for it)`
        : undefined;
  if (requested === 'fused') {
    if (missing) throw new Error(`--graph fused: ${missing}`);
    return { graph: 'fused', reason: `fused graph ${FUSED_MODEL_FILE} was requested` };
  }
  if (requested === 'plain') return { graph: 'plain', reason: 'exported graph (--graph plain)' };
  if (facts.device !== 'webgpu') return { graph: 'plain' };
  const why = facts.runtime !== 'native' ? "the fused graph runs on onnxruntime-node's WebGPU provider (--webgpu-runtime native)" : missing;
  return why
    ? { graph: 'plain', reason: `exported graph (auto: not fused because ${why})` }
    : { graph: 'fused', reason: `fused graph ${FUSED_MODEL_FILE} (auto: onnxruntime's fused kernels on its WebGPU provider)` };
}

export interface DtypeFacts {
  /** Where the model runs (the device decision). */
  readonly device: 'webgpu' | 'cpu';
  /** Which WebGPU runtime runs it. */
  readonly runtime: 'native' | 'web';
  readonly adapter?: AdapterReport;
  /** The model folder's own dtype (lexembed.json): only an fp32 model has an fp16 or int8 sibling. */
  readonly modelDtype: string;
  /** Whether the folder has onnx/model_fp16.onnx. */
  readonly hasFp16File: boolean;
  /** The folder's int8 graph, if any. */
  readonly quantized?: QuantizedFacts;
  /** The folder, for the message that says how to make the file. */
  readonly folder: string;
  /** Why the fp16 graph, loaded once, was refused (its vectors checked at load: fp16-check.ts). */
  readonly fp16Refused?: string;
}

/**
 * The model's precision (--dtype). On WebGPU: fp16 runs on onnxruntime-node's WebGPU provider when
 * the adapter has `shader-f16` and the folder has onnx/model_fp16.onnx (model/runtime/fp16.py); auto
 * takes it then and says why not otherwise. A loaded fp16 graph is then checked against the CPU
 * path at load (load-model.ts, fp16-check.ts). On the CPU: q8 runs onnx/model_quantized.onnx
 * (int8 MatMuls, model/runtime/quantize.py); auto takes it where lexembed.json's dev-set figures say
 * it loses at most `maxDevLoss` nDCG@10 against fp32, and says why not otherwise. An explicit
 * dtype that cannot be had stops start-up with the reason.
 */
export function decideGpuDtype(requested: GpuDtype, facts: DtypeFacts): { dtype: string; reason: string } {
  if (facts.device === 'cpu' || requested === 'q8') return decideCpuDtype(requested, facts);
  const make = `make it with: python3 -m model.runtime.fp16 ${facts.folder} (numpy and onnx)`;
  const missing =
    facts.runtime !== 'native'
      ? "the web runtime's fp16 is untested; fp16 runs on onnxruntime-node's WebGPU provider (--webgpu-runtime native)"
      : !facts.adapter?.features?.includes('shader-f16')
        ? `the adapter (${facts.adapter?.name ?? 'unknown'}) does not offer shader-f16`
        : facts.modelDtype !== 'fp32'
          ? `the model is ${facts.modelDtype} (lexembed.json), not fp32`
          : !facts.hasFp16File
            ? `the model folder has no ${FP16_MODEL_FILE} (${make})`
            : facts.fp16Refused;
  if (requested === 'fp16') {
    if (missing) throw new Error(`--dtype fp16: ${missing}`);
    return { dtype: 'fp16', reason: `dtype fp16 (${FP16_MODEL_FILE}) was requested` };
  }
  if (requested === 'fp32') return { dtype: facts.modelDtype, reason: 'dtype fp32 was requested' };
  return missing
    ? { dtype: facts.modelDtype, reason: `dtype ${facts.modelDtype} (auto: not fp16 because ${missing})` }
    : { dtype: 'fp16', reason: `dtype fp16 (auto: the adapter offers shader-f16 and the folder has ${FP16_MODEL_FILE})` };
}

function decideCpuDtype(requested: GpuDtype, facts: DtypeFacts): { dtype: string; reason: string } {
  if (requested === 'fp16') throw new Error('--dtype fp16: the model runs on cpu, where fp16 is slower than fp32; use --dtype auto, fp32 or q8 there');
  const make = `make it with: python3 -m model.runtime.quantize --model ${facts.folder} --dev ../shared/data/legal-eval-dev (onnx and onnxruntime's Python package)`;
  const verdict = int8Verdict(facts.quantized?.record);
  const missing =
    facts.device === 'webgpu'
      ? 'int8 (q8) runs on the CPU (its MatMulInteger kernels are not WebGPU ones); on webgpu use --dtype auto, fp32 or fp16'
      : facts.modelDtype !== 'fp32'
        ? `the model is ${facts.modelDtype} (lexembed.json), not fp32`
        : !facts.quantized?.hasFile
          ? `the model folder has no ${Q8_MODEL_FILE} (${make})`
          : facts.quantized.stale
            ? `${facts.quantized.stale} (${make})`
            : undefined;
  if (requested === 'q8') {
    if (missing) throw new Error(`--dtype q8: ${missing}`);
    return { dtype: 'q8', reason: `dtype q8 (${Q8_MODEL_FILE}${verdict.figures ? `; ${verdict.figures}` : ''}) was requested` };
  }
  if (requested === 'fp32') return { dtype: facts.modelDtype, reason: 'dtype fp32 was requested' };
  const why = missing ?? (verdict.keeps ? undefined : `${verdict.why} (${make})`);
  return why
    ? { dtype: facts.modelDtype, reason: `dtype ${facts.modelDtype} (auto: not q8 because ${why})` }
    : { dtype: 'q8', reason: `dtype q8 (auto: the int8 graph ${Q8_MODEL_FILE} keeps quality: ${verdict.figures}, within ${facts.quantized!.record!.max_dev_loss}; --dtype fp32 serves the float32 graph)` };
}
