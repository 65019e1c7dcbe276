// Runs the model in a worker thread: onnxruntime-node's session.run blocks the thread it is
// called on for the whole batch (measured: 757 ms for 32×128 tokens on MiniLM-L6 with no timer
// tick), so on the main thread it would stall HTTP and health checks. The thread also chooses the
// device: on WebGPU it must install onnxruntime-web before it imports transformers.js, which the
// main thread (tokenising on onnxruntime-node's transformers.js) cannot do.
import { parentPort, workerData } from 'node:worker_threads';
import type { InferenceWorkerData } from './worker-backend.ts';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { decideGpuDtype, decideServerDevice, FP16_MODEL_FILE } from './webgpu/decide.ts';
import { openWebGPU, type WebGPUHandle } from './webgpu/detect.ts';
import { probeAdapters } from './webgpu/probe.ts';
import { installOrtWebGPU, ortWebGPUDevice } from './webgpu/install-runtime.ts';
import { messageOf } from '../../util/message-of.ts';

import type { FromInferenceWorker, ToInferenceWorker } from './worker-protocol.ts';

const port = parentPort!;
const send = (message: FromInferenceWorker, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);
const data = workerData as InferenceWorkerData;
let gpu: WebGPUHandle | null = null;
try {
  const requested = data.serverDevice ?? 'cpu';
  // auto asks a child process first: only when a usable adapter exists does this process load Dawn
  // (which would otherwise print its warnings on a CPU machine). webgpu loads it at once.
  const probed = requested === 'auto' ? decideServerDevice('auto', await probeAdapters(data.gpuAdapter), data.gpuAdapter) : null;
  if (requested === 'webgpu' || probed?.device === 'webgpu') gpu = await openWebGPU(data.gpuAdapter);
  const decision = probed?.device === 'cpu' ? probed : decideServerDevice(requested, gpu, data.gpuAdapter);
  // Native: onnxruntime-node's own WebGPU provider (its built-in Dawn) runs the model on the
  // default adapter, so the `webgpu` package only chose the device. Web: onnxruntime-web's WASM
  // build over that Dawn, the one way onto another adapter: --gpu-adapter naming a non-default one
  // implies it.
  let web = decision.device === 'webgpu' && data.webgpuRuntime === 'web';
  if (decision.device === 'webgpu' && !web && data.gpuAdapter) {
    gpu?.release();
    const unflagged = await openWebGPU();
    const defaultAdapter = unflagged.adapters[0]?.name;
    unflagged.release();
    web = decision.adapter?.name !== defaultAdapter;
    gpu = web ? await openWebGPU(data.gpuAdapter) : null;
  }
  const precision = decideGpuDtype(data.gpuDtype ?? 'auto', {
    device: decision.device,
    runtime: web ? 'web' : 'native',
    adapter: decision.adapter,
    modelDtype: data.settings.dtype,
    hasFp16File: existsSync(join(data.localModelPath, data.modelId, FP16_MODEL_FILE)),
    folder: join(data.localModelPath, data.modelId),
  });
  if (web) await installOrtWebGPU();
  else (gpu?.release(), (gpu = null));
  const { createTransformersBackend } = await import('../../backend/transformers-backend.ts');
  const options = { ...data, settings: { ...data.settings, dtype: precision.dtype as typeof data.settings.dtype } };
  const native = decision.device === 'webgpu' && !web;
  // Native: the hidden state stays on the GPU and is pooled there (device-pooling.ts), unless
  // LEXEMBED_GPU_POOLING=js asks for the read-back and JavaScript pooling (for comparison), or
  // setting it up fails (then the model still runs, pooled in JavaScript, and the reason says why).
  let backend: Awaited<ReturnType<typeof createTransformersBackend>> | undefined;
  let pooledWhere = '';
  if (native && process.env.LEXEMBED_GPU_POOLING === 'js') pooledWhere = '; pooling in JavaScript (LEXEMBED_GPU_POOLING=js)';
  else if (native) {
    try {
      const pooling = await import('./device-pooling.ts');
      const devicePooling = await pooling.createDevicePooling(options.settings.pooling);
      try {
        backend = await createTransformersBackend({ ...options, device: 'webgpu', sessionOptions: { ...pooling.KEEP_HIDDEN_ON_GPU }, devicePooling });
      } catch (error) {
        await devicePooling.dispose();
        throw error;
      }
      pooledWhere = `; ${options.settings.pooling} pooling on the GPU`;
    } catch (error) {
      pooledWhere = `; pooling in JavaScript (pooling on the GPU failed: ${messageOf(error).split('\n')[0]})`;
    }
  }
  // Injected execution providers take the place of onnxruntime-node's thread options.
  backend ??= await createTransformersBackend(web ? { ...options, device: 'webgpu', executionProviders: ['webgpu'] } : native ? { ...options, device: 'webgpu' } : options);
  let reason =
    decision.device === 'webgpu'
      ? `${decision.reason} (${web ? 'onnxruntime-web over Dawn' : "onnxruntime-node's WebGPU provider"}); ${precision.reason}${pooledWhere}`
      : decision.reason;
  if (decision.device === 'webgpu' && data.warmupIds?.length) {
    const started = performance.now();
    await backend.run([data.warmupIds]);
    reason += `; pipelines compiled at load (warm-up ${Math.round(performance.now() - started)} ms)`;
  }
  send({ type: 'ready', device: decision.device, reason, adapter: decision.adapter?.name });
  port.on('message', async (message: ToInferenceWorker) => {
    if (message.type === 'gc') {
      (globalThis as { gc?: () => void }).gc?.(); // only with --expose-gc (leak checks)
      send({ type: 'done', id: message.id });
      return;
    }
    if (message.type === 'dispose') {
      await backend.dispose();
      if (gpu) {
        // Destroying the device frees its memory now; releasing navigator.gpu lets the thread end.
        (await ortWebGPUDevice())?.destroy();
        gpu.release();
      }
      send({ type: 'done', id: message.id });
      return;
    }
    try {
      const vectors = await backend.run(message.batch);
      send({ type: 'vectors', id: message.id, vectors }, vectors.map((v) => v.buffer as ArrayBuffer));
    } catch (error) {
      send({ type: 'error', id: message.id, message: messageOf(error) });
    }
  });
} catch (error) {
  gpu?.release();
  send({ type: 'failed', message: messageOf(error) });
}
