// The inference plan of a loaded model: where it runs (device, adapter), on which runtime, at
// which precision, where its vectors are pooled and how batches are sized, each with its reason,
// decided in one place by one pure function from what was asked and what the machine offered.
// The sub-rules stay where they are tested: the device (webgpu/decide.ts over the shared
// device-rules.ts), the precision (decideGpuDtype), the batch limits (batch-plan.ts). The caller
// gathers the facts (the inference worker asks Dawn for adapters) and carries the plan out.
import type { AdapterReport } from '../../backend/device-rules.ts';
import { batchRule, type BatchRule, type BatchSettings } from './batch-plan.ts';
import { decideGpuDtype, decideGraph, decideServerDevice, type FusedFacts, type GpuDtype, type GraphChoice, type QuantizedFacts, type ServerDevice } from './webgpu/decide.ts';
import type { WebGPUHandle } from './webgpu/detect.ts';

/** What was asked: serve's and embed's options. */
export interface InferenceRequest {
  /** --device: cpu (onnxruntime-node), webgpu or auto. */
  readonly device: ServerDevice;
  /** --gpu-adapter: a substring of the adapter's name. */
  readonly gpuAdapter?: string;
  /** --webgpu-runtime: native (onnxruntime-node's own WebGPU provider, the default) or web (onnxruntime-web over Dawn). */
  readonly webgpuRuntime?: 'native' | 'web';
  /** --dtype: auto, fp32, fp16 (WebGPU) or q8 (CPU). */
  readonly dtype: GpuDtype;
  /** --graph: auto (default), plain or fused (decideGraph). */
  readonly graph?: GraphChoice;
  /** Set when the fp16 graph was loaded and its vectors refused at load (load-model.ts): auto then plans fp32 and says why. */
  readonly fp16Refused?: string;
  /** LEXEMBED_GPU_POOLING=js: read the hidden state back and pool in JavaScript even where the GPU could (for comparison). */
  readonly poolInJs?: boolean;
  /** --max-batch-tokens / --max-batch-size. */
  readonly batch: BatchSettings;
}

/** What the machine and the model folder offer. */
export interface InferenceFacts {
  /** The adapters Dawn offered; null where WebGPU was not opened (--device cpu, or none to open). */
  readonly gpu: Pick<WebGPUHandle, 'adapters' | 'errors'> | null;
  /** Dawn's default adapter, the one onnxruntime-node's own provider runs on (asked when --gpu-adapter names one). */
  readonly defaultAdapter?: string;
  readonly model: {
    /** lexembed.json's dtype. */
    readonly dtype: string;
    readonly pooling: 'mean' | 'cls';
    /** Whether the folder has onnx/model_fp16.onnx. */
    readonly hasFp16File: boolean;
    /** Its int8 graph (onnx/model_quantized.onnx) and lexembed.json's figures for it. */
    readonly quantized?: QuantizedFacts;
    /** Its fused graph (onnx/model_fused.onnx). */
    readonly fused?: FusedFacts;
    readonly folder: string;
  };
}

export interface InferencePlan {
  readonly device: 'cpu' | 'webgpu';
  readonly adapter?: AdapterReport;
  readonly runtime: 'onnxruntime-node' | 'onnxruntime-node-webgpu' | 'onnxruntime-web';
  /** The precision the session loads (transformers.js's dtype). */
  readonly dtype: string;
  /** The exported graph, or onnxruntime's fused one (onnx/model_fused.onnx). */
  readonly graph: 'plain' | 'fused';
  /** gpu: the hidden state stays on the device and a second session pools it (device-pooling.ts). */
  readonly pooling: 'gpu' | 'javascript';
  readonly batch: BatchRule;
  /** Why, per decision, in the words the start-up log shows (describePlan). */
  readonly reasons: { readonly device: string; readonly runtime?: string; readonly dtype?: string; readonly graph?: string; readonly pooling?: string };
}

/**
 * The plan for `request` on a machine with `facts`; throws, with the reason, where an explicit
 * request cannot be had (--device webgpu without an adapter, --dtype fp16 on the CPU, …).
 * @example planInference({ device: 'auto', dtype: 'auto', batch: { tokens: 'auto' } }, { gpu: null, model })
 *          // { device: 'cpu', runtime: 'onnxruntime-node', dtype: 'fp32', pooling: 'javascript', batch: { tokens: 2048 }, … }
 */
export function planInference(request: InferenceRequest, facts: InferenceFacts): InferencePlan {
  const decision = decideServerDevice(request.device, facts.gpu, request.gpuAdapter);
  const webgpu = decision.device === 'webgpu';
  // onnxruntime-node's own provider runs on Dawn's default adapter; onnxruntime-web over the
  // `webgpu` package's Dawn is the one way onto another, so --gpu-adapter naming one implies it.
  const web = webgpu && (request.webgpuRuntime === 'web' || (!!request.gpuAdapter && decision.adapter?.name !== facts.defaultAdapter));
  const native = webgpu && !web;
  const precision = decideGpuDtype(request.dtype, {
    device: decision.device,
    runtime: web ? 'web' : 'native',
    adapter: decision.adapter,
    modelDtype: facts.model.dtype,
    hasFp16File: facts.model.hasFp16File,
    quantized: facts.model.quantized,
    folder: facts.model.folder,
    fp16Refused: request.fp16Refused,
  });
  const graph = decideGraph(request.graph ?? 'auto', { device: decision.device, runtime: web ? 'web' : 'native', dtype: precision.dtype, fused: facts.model.fused, folder: facts.model.folder });
  const pooling = native && !request.poolInJs ? 'gpu' : 'javascript';
  return {
    device: decision.device,
    ...(decision.adapter ? { adapter: decision.adapter } : {}),
    runtime: native ? 'onnxruntime-node-webgpu' : web ? 'onnxruntime-web' : 'onnxruntime-node',
    dtype: precision.dtype,
    graph: graph.graph,
    pooling,
    batch: batchRule(request.batch, decision.device),
    reasons: {
      device: decision.reason,
      dtype: precision.reason,
      ...(graph.reason ? { graph: graph.reason } : {}),
      ...(webgpu ? { runtime: web ? 'onnxruntime-web over Dawn' : "onnxruntime-node's WebGPU provider" } : {}),
      ...(native ? { pooling: pooling === 'gpu' ? `${facts.model.pooling} pooling on the GPU` : 'pooling in JavaScript (LEXEMBED_GPU_POOLING=js)' } : {}),
    },
  };
}

/** The plan after pooling on the GPU could not be set up: the model still runs, pooled in JavaScript, and the reason says why. */
export function withJavaScriptPooling(plan: InferencePlan, why: string): InferencePlan {
  return { ...plan, pooling: 'javascript', reasons: { ...plan.reasons, pooling: `pooling in JavaScript (pooling on the GPU failed: ${why})` } };
}

/**
 * The plan's reasons in one line, as the start-up log and /health show them.
 * @example describePlan(plan) // "webgpu was requested; adapter: … (onnxruntime-node's WebGPU provider); dtype fp32 (…); mean pooling on the GPU"
 */
export function describePlan(plan: InferencePlan): string {
  const r = plan.reasons;
  const graph = r.graph ? `; ${r.graph}` : '';
  return plan.device === 'webgpu' ? `${r.device} (${r.runtime}); ${r.dtype}${graph}${r.pooling ? `; ${r.pooling}` : ''}` : `${r.device}; ${r.dtype}${graph}`;
}
