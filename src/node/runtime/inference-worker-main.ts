// Runs the model in a worker thread: onnxruntime-node's session.run blocks the thread it is
// called on for the whole batch (measured: 757 ms for 32×128 tokens on MiniLM-L6 with no timer
// tick), so on the main thread it would stall HTTP and health checks. The thread also chooses the
// device: on WebGPU it must install onnxruntime-web before it imports transformers.js, which the
// main thread cannot do for it (the main thread tokenises with @huggingface/tokenizers, the library
// transformers.js wraps, and never loads transformers.js: worker-backend.ts, tokenizer.ts).
import { parentPort, workerData } from 'node:worker_threads';
import type { InferenceWorkerData } from './worker-backend.ts';
import { join } from 'node:path';
import { modelFacts } from './model-files.ts';
import { decideServerDevice } from './webgpu/decide.ts';
import { openWebGPU, type WebGPUHandle } from './webgpu/detect.ts';
import { probeAdapters } from './webgpu/probe.ts';
import { installOrtWebGPU, ortWebGPUDevice } from './webgpu/install-runtime.ts';
import { describePlan, planInference, withJavaScriptPooling } from './inference-plan.ts';
import { messageOf } from '../../util/message-of.ts';

import type { FromInferenceWorker, ToInferenceWorker } from './worker-protocol.ts';

const port = parentPort!;
const send = (message: FromInferenceWorker, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);
const data = workerData as InferenceWorkerData;
let gpu: WebGPUHandle | null = null;
try {
  const request = data.request;
  const folder = join(data.localModelPath, data.modelId);
  // The facts the plan needs, gathered first; then one plan. auto asks a child process for the
  // adapters: only when the device rule would take one does this process load Dawn (which would
  // otherwise print its warnings on a CPU machine).
  const model = modelFacts(folder, data.settings);
  const probed = request.device === 'auto' ? await probeAdapters(request.gpuAdapter) : null;
  const wantsGpu = request.device === 'webgpu' || (probed !== null && decideServerDevice('auto', probed, request.gpuAdapter).device === 'webgpu');
  if (wantsGpu) gpu = await openWebGPU(request.gpuAdapter);
  let defaultAdapter: string | undefined;
  if (gpu && request.gpuAdapter && request.webgpuRuntime !== 'web') {
    gpu.release();
    const unflagged = await openWebGPU();
    defaultAdapter = unflagged.adapters[0]?.name;
    unflagged.release();
    gpu = await openWebGPU(request.gpuAdapter);
  }
  let plan = planInference(request, { gpu: gpu ?? probed, defaultAdapter, model });
  if (plan.runtime === 'onnxruntime-web') await installOrtWebGPU();
  else (gpu?.release(), (gpu = null));
  const { createTransformersBackend } = await import('../../backend/transformers-backend.ts');
  const options = { ...data, settings: { ...data.settings, dtype: plan.dtype as typeof data.settings.dtype }, ...(plan.graph === 'fused' ? { modelFileName: 'model_fused' } : {}) };
  let backend: Awaited<ReturnType<typeof createTransformersBackend>> | undefined;
  if (plan.pooling === 'gpu') {
    // The hidden state stays on the GPU and is pooled there (device-pooling.ts); if setting that
    // up fails, the model still runs, pooled in JavaScript, and the reason says why.
    try {
      const pooling = await import('./device-pooling.ts');
      const devicePooling = await pooling.createDevicePooling(options.settings.pooling);
      try {
        backend = await createTransformersBackend({ ...options, device: 'webgpu', sessionOptions: { ...pooling.KEEP_HIDDEN_ON_GPU }, devicePooling });
      } catch (error) {
        await devicePooling.dispose();
        throw error;
      }
    } catch (error) {
      plan = withJavaScriptPooling(plan, messageOf(error).split('\n')[0]!);
    }
  }
  // Injected execution providers take the place of onnxruntime-node's thread options.
  backend ??= await createTransformersBackend(
    plan.runtime === 'onnxruntime-web' ? { ...options, device: 'webgpu', executionProviders: ['webgpu'] } : plan.runtime === 'onnxruntime-node-webgpu' ? { ...options, device: 'webgpu' } : options,
  );
  let reason = describePlan(plan);
  if (plan.device === 'webgpu' && data.warmupIds?.length) {
    const started = performance.now();
    await backend.run([data.warmupIds]);
    reason += `; pipelines compiled at load (warm-up ${Math.round(performance.now() - started)} ms)`;
  }
  send({ type: 'ready', plan, reason });
  let running: Promise<void> = Promise.resolve();
  port.on('message', async (message: ToInferenceWorker) => {
    if (message.type === 'gc') {
      (globalThis as { gc?: () => void }).gc?.(); // only with --expose-gc (leak checks)
      send({ type: 'done', id: message.id });
      return;
    }
    if (message.type === 'dispose') {
      await running; // the batches already sent finish first
      await backend.dispose();
      if (gpu) {
        // Destroying the device frees its memory now; releasing navigator.gpu lets the thread end.
        (await ortWebGPUDevice())?.destroy();
        gpu.release();
      }
      send({ type: 'done', id: message.id });
      return;
    }
    // One batch at a time, in order: the main thread sends the next while one runs (so it starts
    // at once), and no runtime is asked to run one session twice at the same time (onnxruntime-web
    // cannot).
    running = running.then(async () => {
      try {
        const vectors = await backend.run(message.batch);
        send({ type: 'vectors', id: message.id, vectors }, vectors.map((v) => v.buffer as ArrayBuffer));
      } catch (error) {
        send({ type: 'error', id: message.id, message: messageOf(error) });
      }
    });
  });
} catch (error) {
  gpu?.release();
  send({ type: 'failed', message: messageOf(error) });
}
