// The one device decision both runtimes use (src/backend/device-rules.ts), as a table: what was asked
// and what the runtime saw → where the model runs, on the server (cpu) and in a browser (wasm).
import { describe, expect, it } from 'vitest';
import { decideDevice, type DeviceRuntime, type WebGPUReport } from '../../src/backend/device-rules.ts';

const server: DeviceRuntime<'cpu'> = { cpu: 'cpu', cpuName: 'onnxruntime-node', noAdapterError: (seen, errors) => new Error(`no adapter; seen ${seen}.${errors}`) };
const browser: DeviceRuntime<'wasm'> = { cpu: 'wasm', cpuName: 'WASM', noAdapterError: () => new Error('no adapter in this browser') };
const lavapipe = { name: 'mesa llvmpipe', fallback: true };
const nvidia = { name: 'NVIDIA H100', fallback: false };
const saw = (adapters: WebGPUReport['adapters'], errors: string[] = [], present = true): WebGPUReport => ({ present, adapters, errors });

describe('decideDevice', () => {
  it.each([
    ['cpu', saw([nvidia]), 'cpu', /^cpu was requested \(onnxruntime-node\)$/],
    ['auto', saw([lavapipe, nvidia]), 'webgpu', /^auto: WebGPU adapter NVIDIA H100$/],
    ['auto', saw([lavapipe]), 'cpu', /^auto: the only WebGPU adapters are software fallbacks \(mesa llvmpipe \(software fallback\)\), slower than onnxruntime-node; using cpu$/],
    ['auto', saw([], ['Vulkan: no ICD']), 'cpu', /^auto: no WebGPU adapter \(Vulkan: no ICD\); using cpu$/],
    ['webgpu', saw([lavapipe]), 'webgpu', /^webgpu was requested; adapter: mesa llvmpipe \(a software fallback adapter: correct but slow\)$/],
    ['webgpu', saw([lavapipe, nvidia]), 'webgpu', /adapter: NVIDIA H100$/],
  ] as const)('server: %s with %j → %s', (requested, report, device, reason) => {
    const d = decideDevice(requested, report, server);
    expect(d.device).toBe(device);
    expect(d.reason).toMatch(reason);
  });

  it('server: webgpu with no adapter throws the runtime\'s error, listing what was seen', () => {
    expect(() => decideDevice('webgpu', saw([], ['no suitable backends found']), server)).toThrow('no adapter; seen none. Errors: no suitable backends found.');
  });

  it.each([
    ['wasm', saw([nvidia]), 'wasm', /^wasm was requested \(WASM\)$/],
    ['auto', saw([], [], false), 'wasm', /^auto: no WebGPU in this runtime \(navigator\.gpu is missing\); using wasm$/],
    ['auto', saw([lavapipe]), 'wasm', /software fallbacks .* slower than WASM; using wasm$/],
    ['auto', saw([nvidia]), 'webgpu', /^auto: WebGPU adapter NVIDIA H100$/],
  ] as const)('browser: %s with %j → %s', (requested, report, device, reason) => {
    const d = decideDevice(requested, report, browser);
    expect(d.device).toBe(device);
    expect(d.reason).toMatch(reason);
  });

  it('browser: a caller may allow a software fallback adapter under auto', () => {
    expect(decideDevice('auto', saw([lavapipe]), { ...browser, allowFallbackAdapter: true })).toMatchObject({ device: 'webgpu', adapter: lavapipe });
    expect(() => decideDevice('webgpu', saw([], [], false), browser)).toThrow('no adapter in this browser');
  });
});
