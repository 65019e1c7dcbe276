// Chooses where the in-browser model runs: WebGPU when a real (non-fallback) adapter exists,
// else WASM; says why. Detected once per call, from the runtime's navigator only.
import { messageOf } from '../util/message-of.ts';

export type LocalDevice = 'auto' | 'webgpu' | 'wasm';
export interface DeviceChoice {
  readonly device: 'webgpu' | 'wasm';
  readonly reason: string;
}

interface GpuLike {
  requestAdapter(options?: unknown): Promise<{ info?: { isFallbackAdapter?: boolean; vendor?: string; architecture?: string; description?: string }; isFallbackAdapter?: boolean } | null>;
}

export async function chooseDevice(requested: LocalDevice, allowFallbackAdapter = false): Promise<DeviceChoice> {
  if (requested === 'wasm') return { device: 'wasm', reason: 'WASM was requested' };
  const gpu = (globalThis as { navigator?: { gpu?: GpuLike } }).navigator?.gpu;
  if (!gpu) {
    if (requested === 'webgpu') throw new Error('WebGPU was requested but this runtime has no navigator.gpu; use device "wasm" or "auto"');
    return { device: 'wasm', reason: 'no WebGPU in this runtime (navigator.gpu is missing)' };
  }
  let adapter: Awaited<ReturnType<GpuLike['requestAdapter']>> = null;
  try {
    adapter = await gpu.requestAdapter();
  } catch (error) {
    if (requested === 'webgpu') throw new Error(`WebGPU was requested but requestAdapter() failed: ${messageOf(error)}`);
    return { device: 'wasm', reason: `WebGPU adapter request failed (${messageOf(error)})` };
  }
  if (!adapter) {
    if (requested === 'webgpu') throw new Error('WebGPU was requested but no adapter is available (in Chromium, check chrome://gpu or --enable-unsafe-webgpu)');
    return { device: 'wasm', reason: 'navigator.gpu exists but no WebGPU adapter is available' };
  }
  const fallback = adapter.info?.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false;
  const name = [adapter.info?.vendor, adapter.info?.architecture, adapter.info?.description].filter(Boolean).join(' ') || 'unnamed adapter';
  if (requested === 'webgpu') return { device: 'webgpu', reason: `WebGPU was requested; adapter: ${name}${fallback ? ' (a software fallback adapter)' : ''}` };
  if (fallback && !allowFallbackAdapter) return { device: 'wasm', reason: `the only WebGPU adapter (${name}) is a software fallback, slower than WASM` };
  return { device: 'webgpu', reason: `WebGPU adapter available: ${name}` };
}
