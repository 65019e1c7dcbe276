// Runs the model in a worker thread: onnxruntime-node's session.run blocks the thread it is
// called on for the whole batch (measured: 757 ms for 32×128 tokens on MiniLM-L6 with no timer
// tick), so on the main thread it would stall HTTP and health checks.
import { parentPort, workerData } from 'node:worker_threads';
import { createTransformersBackend, type TransformersBackendOptions } from '../embedder/transformers-backend.ts';

type Request = { type: 'run'; id: number; batch: number[][] } | { type: 'dispose' };

const port = parentPort!;
try {
  const backend = await createTransformersBackend(workerData as TransformersBackendOptions);
  port.postMessage({ type: 'ready' });
  port.on('message', async (message: Request) => {
    if (message.type === 'dispose') {
      await backend.dispose();
      port.postMessage({ type: 'disposed' });
      return;
    }
    try {
      const vectors = await backend.run(message.batch);
      port.postMessage({ type: 'result', id: message.id, vectors }, vectors.map((v) => v.buffer as ArrayBuffer));
    } catch (error) {
      port.postMessage({ type: 'error', id: message.id, message: (error as Error).message });
    }
  });
} catch (error) {
  port.postMessage({ type: 'failed', message: (error as Error).message });
}
