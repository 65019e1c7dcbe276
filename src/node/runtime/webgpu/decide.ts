// The server's device choice: what --device accepts, and the shared rules of
// src/embedder/device.ts applied to the adapters Dawn offered (cpu = onnxruntime-node).
import { decideDevice, type DeviceDecision as SharedDecision } from '../../../runtime/device-rules.ts';
import type { WebGPUHandle } from './detect.ts';

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
 * of src/embedder/device.ts); throws when `webgpu` was asked for and cannot be had.
 */
export function decideServerDevice(requested: ServerDevice, handle: Pick<WebGPUHandle, 'adapters' | 'errors'> | null, adapterName = ''): DeviceDecision {
  const wanted = adapterName ? ` matching --gpu-adapter "${adapterName}"` : '';
  return decideDevice(requested, { present: handle !== null, adapters: handle?.adapters ?? [], errors: handle?.errors ?? [] }, {
    cpu: 'cpu',
    cpuName: 'onnxruntime-node',
    noAdapterError: (seen, errors) => new Error(`--device webgpu: no WebGPU adapter${wanted} is usable. Adapters seen: ${seen}.${errors} Install: ${WEBGPU_INSTALL_HINT}.`),
  });
}
