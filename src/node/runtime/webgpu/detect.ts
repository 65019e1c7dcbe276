// Detects WebGPU on Node: loads Dawn (the `webgpu` package), installs the WebGPU globals and a
// navigator.gpu in this thread, and lists the adapters it offers.
//
// Call order matters: openWebGPU() and installOrtWebGPU() (install-runtime.ts) must run in a
// thread before that thread first imports @huggingface/transformers, which picks its runtime
// once, at import. The inference worker does this, so the main thread keeps onnxruntime-node for
// tokenising.
import type { AdapterReport } from '../../../backend/device-rules.ts';
import { messageOf } from '../../../util/message-of.ts';
import { patchWriteBuffer } from './dawn-workarounds.ts';

export type { AdapterReport } from '../../../backend/device-rules.ts';

/**
 * The flags lexembed opens Dawn with (the `webgpu` package's create()): the adapter asked for, and
 * vulkan_enable_f16_on_nvidia. Dawn hides shader-f16 on every NVIDIA GPU under Vulkan unless that
 * toggle is on (crbug.com/42251215: conformance failures), and onnxruntime-node's WebGPU provider
 * turns it on for its own device. Without it here an H200 was read as lacking shader-f16 and ran
 * fp32 on a device that runs the fp16 graph; with it, fp16 vectors there were within cosine 0.99999
 * of the CPU path's (docs/gpu.md).
 */
export function dawnFlags(adapterName = ''): string[] {
  return [...(adapterName ? [`adapter=${adapterName}`] : []), 'enable-dawn-features=vulkan_enable_f16_on_nvidia'];
}

interface GpuAdapterLike {
  readonly info?: { vendor?: string; architecture?: string; device?: string; description?: string; isFallbackAdapter?: boolean };
  readonly isFallbackAdapter?: boolean;
  readonly features?: Iterable<string>;
}
interface GpuLike {
  requestAdapter(options?: Record<string, unknown>): Promise<GpuAdapterLike | null>;
}

export interface WebGPUHandle {
  readonly adapters: AdapterReport[];
  /** Errors met while asking for adapters (e.g. Dawn's list when --gpu-adapter matched none). */
  readonly errors: string[];
  /** Drops every reference to Dawn so the process (or worker) can exit. */
  release(): void;
}

function describeAdapter(adapter: GpuAdapterLike): AdapterReport {
  const info = adapter.info ?? {};
  const name = [info.vendor, info.architecture, info.description || info.device].filter(Boolean).join(' ').trim() || 'unnamed adapter';
  return { name, fallback: info.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false, features: [...(adapter.features ?? [])].sort() };
}

/**
 * Loads Dawn, installs the WebGPU globals and a `navigator.gpu` in this thread, and lists the
 * adapters it offers. `adapterName` selects one by a substring of its name (Dawn's `adapter=`).
 */
export async function openWebGPU(adapterName = ''): Promise<WebGPUHandle> {
  let webgpu: { create(flags: string[]): GpuLike; globals: Record<string, unknown> };
  try {
    webgpu = (await import('webgpu')) as unknown as typeof webgpu;
  } catch (error) {
    return { adapters: [], errors: [`the "webgpu" package could not be loaded (${messageOf(error).split('\n')[0]})`], release() {} };
  }
  // Node 20 has no GPUBuffer, GPUQueue… globals and no navigator: onnxruntime-web expects both.
  Object.assign(globalThis, webgpu.globals);
  patchWriteBuffer(webgpu.globals);
  const gpu = webgpu.create(dawnFlags(adapterName));
  const scope = globalThis as { navigator?: { gpu?: GpuLike } };
  const ownNavigator = scope.navigator === undefined;
  if (ownNavigator) Object.defineProperty(globalThis, 'navigator', { value: { gpu }, configurable: true, writable: true });
  else scope.navigator!.gpu = gpu;

  const adapters: AdapterReport[] = [];
  const errors: string[] = [];
  for (const options of [{ powerPreference: 'high-performance' }, { powerPreference: 'low-power' }, { forceFallbackAdapter: true }]) {
    try {
      const adapter = await gpu.requestAdapter(options);
      if (!adapter) continue;
      const report = describeAdapter(adapter);
      if (!adapters.some((a) => a.name === report.name)) adapters.push(report);
    } catch (error) {
      const message = messageOf(error).trim().replace(/\s*\n\s*/g, ' ');
      if (!errors.includes(message)) errors.push(message);
    }
  }
  return {
    adapters,
    errors,
    release() {
      // Node keeps running while anything references navigator.gpu (crbug 387965810).
      if (ownNavigator) delete (globalThis as { navigator?: unknown }).navigator;
      else delete scope.navigator!.gpu;
    },
  };
}
