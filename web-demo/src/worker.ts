// The demo's model worker: the in-page model (createLocalClient) or a lexembed server (Lexembed
// client) behind one `embeddings.create()`, off the page's main thread.
import { Lexembed, type APIError } from '../../src/client/index.ts';
import { createLocalClient } from '../../src/local/client.ts';
import type { FromWorker, ToWorker } from './protocol.ts';
// onnxruntime-web's builds, emitted by Vite as assets of this app (once: the runtime's own
// reference to the .wasm resolves to the same file): asyncify for WebGPU, the plain one for WASM.
import ortWasmUrl from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.wasm?url';
import ortMjsUrl from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.mjs?url';
import ortPlainWasmUrl from 'onnxruntime-web/ort-wasm-simd-threaded.wasm?url';
import ortPlainMjsUrl from 'onnxruntime-web/ort-wasm-simd-threaded.mjs?url';
import { messageOf } from '../../src/util/message-of.ts';

type Creator = {
  embeddings: { create(params: Parameters<Lexembed['embeddings']['create']>[0]): Promise<Awaited<ReturnType<Lexembed['embeddings']['create']>>> };
  rerankings: { create(params: Parameters<Lexembed['rerankings']['create']>[0]): Promise<Awaited<ReturnType<Lexembed['rerankings']['create']>>> };
};
let client: Creator | undefined;
/** The in-page client, which also chunks (a server is reached for embeddings only). */
let local: ReturnType<typeof createLocalClient> | undefined;
const post = (m: FromWorker) => (self as unknown as Worker).postMessage(m);

self.onmessage = async (event: MessageEvent<ToWorker>) => {
  const message = event.data;
  if (message.type === 'init') {
    try {
      if (message.mode.kind === 'local') {
        local = createLocalClient({
          model: new URL('models/legal-2-embedder/', self.location.origin + import.meta.env.BASE_URL).pathname,
          device: message.mode.device,
          dtype: message.mode.dtype,
          graph: message.mode.graph,
          wasmPaths: { mjs: new URL(ortMjsUrl, self.location.href).href, wasm: new URL(ortWasmUrl, self.location.href).href },
          ...(message.mode.before
            ? { maxBatchTokens: 512 }
            : { wasmOnlyPaths: { mjs: new URL(ortPlainMjsUrl, self.location.href).href, wasm: new URL(ortPlainWasmUrl, self.location.href).href } }),
          onProgress: (fraction, file) => post({ type: 'progress', fraction, file }),
        });
        const ready = await local.ready;
        client = local;
        post({ type: 'ready', backend: ready.device, dtype: ready.dtype, graph: ready.graph, modelId: ready.modelId, fingerprint: ready.fingerprint, reason: ready.reason, loadMs: ready.loadMs });
      } else {
        const started = performance.now();
        local = undefined;
        const remote = new Lexembed({ baseURL: message.mode.baseURL, apiKey: message.mode.apiKey || null, maxRetries: 1 });
        await remote.embeddings.create({ model: 'legal-2-embedder', texts: 'ping' });
        client = remote;
        post({ type: 'ready', backend: 'server', reason: `lexembed server at ${message.mode.baseURL}`, loadMs: performance.now() - started });
      }
    } catch (error) {
      post({ type: 'failed', message: message.mode.kind === 'remote' ? await explainRemoteFailure(error, message.mode.baseURL) : messageOf(error) });
    }
    return;
  }
  if (!client) return post({ type: 'error', id: message.id, message: 'the model is not loaded yet' });
  const started = performance.now();
  try {
    if (message.type === 'chunk') {
      if (!local) throw new Error('chunking uses the in-page model\'s tokenizer: choose "In this page" to search a long document');
      const chunks = await local.chunkText(message.text, { size: message.size, overlap: message.overlap });
      return post({ type: 'chunked', id: message.id, chunks });
    }
    if (message.type === 'openai') {
      if (!local) throw new Error('the OpenAI-shaped call runs on the in-page client');
      return post({ type: 'created', id: message.id, response: await local.openai.embeddings.create(message.params as Parameters<typeof local.openai.embeddings.create>[0]) });
    }
    if (message.type === 'rerank') {
      const response = await client.rerankings.create(message.params as Parameters<Lexembed['rerankings']['create']>[0]);
      return post({ type: 'created', id: message.id, response });
    }
    if (message.type === 'create') {
      const response = await client.embeddings.create(message.params as Parameters<Lexembed['embeddings']['create']>[0]);
      return post({ type: 'created', id: message.id, response });
    }
    const r = await client.embeddings.create({ model: 'legal-2-embedder', texts: message.texts, task: message.task });
    post({ type: 'embedded', id: message.id, vectors: r.embeddings.map((e) => e.embedding), ms: performance.now() - started, inputTokens: r.usage.input_tokens });
  } catch (error) {
    const e = error as APIError;
    post({ type: 'error', id: message.id, message: messageOf(e), name: e.name, status: e.status, title: e.title, detail: e.detail, errorType: e.type });
  }
};

/**
 * A browser reports a refused cross-origin call and an unreachable server alike ("Failed to
 * fetch"). A no-cors probe tells them apart: it gets an (opaque) answer when the server is up,
 * so the call failed on CORS, and that has one fix, on the server.
 */
async function explainRemoteFailure(error: unknown, baseURL: string): Promise<string> {
  if ((error as APIError)?.name !== 'APIConnectionError') return messageOf(error);
  try {
    await fetch(baseURL, { mode: 'no-cors' });
  } catch {
    return `${messageOf(error)}. Nothing answers at ${baseURL}: is the server running, and is the URL right?`;
  }
  return `the server at ${baseURL} answers, but does not allow calls from this page's origin (CORS): start it with --cors-origins ${self.location.origin} (or LEXEMBED_CORS_ORIGINS)`;
}
