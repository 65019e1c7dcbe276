// Chooses where the in-browser model runs: WebGPU when a real (non-fallback) adapter exists,
// else WASM; says why. Detects from the runtime's navigator only, then applies the rules every
// runtime shares (src/backend/device-rules.ts).
import { decideDevice, type AdapterReport } from '../backend/device-rules.ts';
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
  const gpu = requested === 'wasm' ? undefined : (globalThis as { navigator?: { gpu?: GpuLike } }).navigator?.gpu;
  const adapters: AdapterReport[] = [];
  const errors: string[] = [];
  if (gpu) {
    try {
      const adapter = await gpu.requestAdapter();
      if (adapter) {
        const name = [adapter.info?.vendor, adapter.info?.architecture, adapter.info?.description].filter(Boolean).join(' ') || 'unnamed adapter';
        adapters.push({ name, fallback: adapter.info?.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false });
      } else errors.push('navigator.gpu exists but requestAdapter() found no adapter');
    } catch (error) {
      errors.push(`requestAdapter() failed: ${messageOf(error)}`);
    }
  }
  const { device, reason } = decideDevice(requested, { present: gpu !== undefined || requested === 'wasm', adapters, errors }, {
    cpu: 'wasm',
    cpuName: 'WASM',
    allowFallbackAdapter,
    noAdapterError: (_seen, why) =>
      new Error(
        gpu
          ? `WebGPU was requested but no adapter is available (in Chromium, check chrome://gpu or --enable-unsafe-webgpu).${why}`
          : 'WebGPU was requested but this runtime has no navigator.gpu; use device "wasm" or "auto"',
      ),
  });
  return { device, reason };
}
