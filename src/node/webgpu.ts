// The Node GPU path: WebGPU through Dawn (the `webgpu` package) with onnxruntime-web's WebGPU
// build as transformers.js's runtime. Every work-around this stack needs lives here.
//
// Call order matters: openWebGPU() and installOrtWebGPU() must run in a thread before that
// thread first imports @huggingface/transformers, which picks its runtime once, at import. The
// inference worker does this, so the main thread keeps onnxruntime-node for tokenising.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { messageOf } from '../util/message-of.ts';
import { decideDevice as decideDeviceFor, type AdapterReport, type DeviceDecision as SharedDecision } from '../embedder/device.ts';

export const SERVER_DEVICES = ['auto', 'webgpu', 'cpu'] as const;
export type ServerDevice = (typeof SERVER_DEVICES)[number];

export type { AdapterReport } from '../embedder/device.ts';
export type DeviceDecision = SharedDecision<'cpu'>;

/** What to install when WebGPU cannot be had; part of every "no adapter" message. */
export const WEBGPU_INSTALL_HINT =
  'the webgpu path needs the npm package "webgpu" (an optional dependency of lexembed), the Vulkan loader (Debian: libvulkan1) and a Vulkan driver: ' +
  "on NVIDIA the driver's Vulkan ICD (in containers: NVIDIA_DRIVER_CAPABILITIES including graphics); without a GPU, Mesa 25 lavapipe " +
  '(Debian 12: apt-get install -t bookworm-backports mesa-vulkan-drivers)';

interface GpuAdapterLike {
  readonly info?: { vendor?: string; architecture?: string; device?: string; description?: string; isFallbackAdapter?: boolean };
  readonly isFallbackAdapter?: boolean;
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
  return { name, fallback: info.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false };
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
  const gpu = webgpu.create(adapterName ? [`adapter=${adapterName}`] : []);
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

/**
 * Picks the server's device from what was asked and the adapters Dawn offered (the shared rules
 * of src/embedder/device.ts); throws when `webgpu` was asked for and cannot be had.
 */
export function decideDevice(requested: ServerDevice, handle: Pick<WebGPUHandle, 'adapters' | 'errors'> | null, adapterName = ''): DeviceDecision {
  const wanted = adapterName ? ` matching --gpu-adapter "${adapterName}"` : '';
  return decideDeviceFor(requested, { present: handle !== null, adapters: handle?.adapters ?? [], errors: handle?.errors ?? [] }, {
    cpu: 'cpu',
    cpuName: 'onnxruntime-node',
    noAdapterError: (seen, errors) => new Error(`--device webgpu: no WebGPU adapter${wanted} is usable. Adapters seen: ${seen}.${errors} Install: ${WEBGPU_INSTALL_HINT}.`),
  });
}

/**
 * Makes onnxruntime-web's WebGPU build the ONNX runtime transformers.js will use in this thread.
 * Must run after openWebGPU() and before this thread imports @huggingface/transformers.
 */
export async function installOrtWebGPU(): Promise<void> {
  // V8's optimising tier takes ~45 s of CPU (2 cores) on ort's 27 MB wasm and stalls the thread
  // meanwhile; the GPU does the arithmetic, so the baseline compiler is enough. Process-wide flag.
  setFlagsFromString('--liftoff-only');
  const ort = await import('onnxruntime-web/webgpu');
  const require = createRequire(import.meta.url);
  const dist = dirname(require.resolve('onnxruntime-web/ort-wasm-simd-threaded.asyncify.wasm'));
  // Node's fetch() cannot read file: URLs, so hand over the wasm bytes; the glue .mjs loads from disk.
  ort.env.wasm.wasmBinary = readFileSync(`${dist}/ort-wasm-simd-threaded.asyncify.wasm`);
  // A prefix string (not {mjs, wasm}) also stops transformers.js from pointing ort at a CDN.
  ort.env.wasm.wasmPaths = pathToFileURL(`${dist}/`).href;
  // The GPU does the work; extra wasm threads would only add worker start-up in Node.
  ort.env.wasm.numThreads = 1;
  // onnxruntime-web loads models with fetch(); transformers.js passes Node a file path. Read bytes.
  const create = (model: unknown, options: unknown) =>
    ort.InferenceSession.create((typeof model === 'string' ? new Uint8Array(readFileSync(model)) : model) as Uint8Array, options as never);
  const InferenceSession = new Proxy(ort.InferenceSession, { get: (target, key) => (key === 'create' ? create : Reflect.get(target, key)) });
  // transformers.js uses a runtime found under this symbol instead of onnxruntime-node.
  (globalThis as Record<symbol, unknown>)[Symbol.for('onnxruntime')] = { ...ort, InferenceSession };
}

/** The GPUDevice onnxruntime-web created, once a session exists. */
export async function ortWebGPUDevice(): Promise<{ destroy(): void } | undefined> {
  const ort = await import('onnxruntime-web/webgpu');
  // env.webgpu.device is a promise-valued getter once the backend is initialised.
  try {
    return (await (ort.env.webgpu as { device?: Promise<{ destroy(): void }> }).device) ?? undefined;
  } catch {
    return undefined;
  }
}

/**
 * onnxruntime-web writes from views of its SharedArrayBuffer heap, which Dawn's
 * GPUQueue.writeBuffer rejects (unpatched, session.run() kills the process with SIGSEGV).
 */
function patchWriteBuffer(globals: Record<string, unknown>): void {
  const queue = (globals.GPUQueue as { prototype: Record<string | symbol, unknown> } | undefined)?.prototype;
  const marker = Symbol.for('lexembed.writeBufferCopiesShared');
  if (!queue || queue[marker]) return;
  const original = queue.writeBuffer as (this: unknown, ...args: unknown[]) => unknown;
  queue.writeBuffer = function (this: unknown, buffer: unknown, offset: number, data: ArrayBufferView | ArrayBuffer, ...rest: unknown[]) {
    const shared = typeof SharedArrayBuffer !== 'undefined' && (data instanceof SharedArrayBuffer || (ArrayBuffer.isView(data) && data.buffer instanceof SharedArrayBuffer));
    let copy: unknown = data;
    if (shared && data instanceof SharedArrayBuffer) copy = data.slice(0);
    else if (shared && data instanceof DataView) copy = new Uint8Array(data.buffer, data.byteOffset, data.byteLength).slice();
    else if (shared) copy = (data as Uint8Array).slice(); // same element type, so dataOffset and size keep their units
    return original.call(this, buffer, offset, copy, ...rest);
  };
  queue[marker] = true;
}
