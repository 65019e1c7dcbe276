// The edge handler (`lexembed/edge`): the same Hono app on Cloudflare Workers and other
// isolates, embedding with onnxruntime-web's WASM build, model files from a binding or a URL, API
// keys from an injected store. Three work-arounds for workerd live here, each marked.
import { createApp } from '../http/app.ts';
import { createMemoryKeyStore } from '../auth/stores/memory.ts';
import { createStoreAuthenticator } from '../auth/service.ts';
import { AccountSchema, KeyRecordSchema } from '../auth/records.ts';
import { createEmbedder } from '../embedder/embedder.ts';
import { parseModelSettings } from '../embedder/settings.ts';
import type { Embedder } from '../embedder/types.ts';
import { z } from 'zod';

export interface Env {
  /** A service or assets binding that serves the model folder's files (e.g. /config.json). */
  MODEL?: { fetch(request: Request): Promise<Response> };
  /** Or a base URL the model files are fetched from, e.g. https://models.example.com/legal-2-embedder/. */
  MODEL_URL?: string;
  /** JSON {keys: KeyRecord[], accounts: Account[]} (hashes only), e.g. a secret or KV-loaded text. */
  LEXEMBED_KEYS?: string;
  /** "true" serves without API keys (local experiments). */
  LEXEMBED_NO_AUTH?: string;
  LEXEMBED_DOCS_URL?: string;
}

export interface EdgeHandlerOptions {
  /**
   * onnxruntime-web's `ort-wasm-simd-threaded.asyncify.wasm`, compiled at deploy time.
   * Work-around 1: workerd forbids compiling WebAssembly at run time, so bundle the file as a
   * compiled module (wrangler/esbuild rule "CompiledWasm") and pass it here.
   */
  readonly wasmModule: WebAssembly.Module;
}

export interface EdgeHandler {
  fetch(request: Request, env: Env): Promise<Response> | Response;
}

const KeysSchema = z.object({ keys: z.array(KeyRecordSchema), accounts: z.array(AccountSchema) });

/**
 * A Worker's default export.
 * @example import wasmModule from 'onnxruntime-web/dist/ort-wasm-simd-threaded.asyncify.wasm';
 *          export default createEdgeHandler({ wasmModule });
 */
export function createEdgeHandler(options: EdgeHandlerOptions): EdgeHandler {
  let app: ReturnType<typeof createApp> | undefined;
  let embedder: Promise<Embedder> | undefined;
  return {
    fetch(request, env) {
      app ??= createEdgeApp(env, () => (embedder ??= loadEdgeEmbedder(env, options.wasmModule)));
      return app.fetch(request);
    },
  };
}

function createEdgeApp(env: Env, loadEmbedder: () => Promise<Embedder>) {
  const keys = env.LEXEMBED_KEYS ? KeysSchema.parse(JSON.parse(env.LEXEMBED_KEYS)) : { keys: [], accounts: [] };
  const store = createMemoryKeyStore(keys);
  return createApp({
    embedder: loadEmbedder(),
    authenticate: env.LEXEMBED_NO_AUTH === 'true' ? undefined : createStoreAuthenticator(store),
    docsUrl: env.LEXEMBED_DOCS_URL,
  });
}

async function loadEdgeEmbedder(env: Env, wasmModule: WebAssembly.Module): Promise<Embedder> {
  // Work-around 2: transformers.js calls crypto.getRandomValues when it is imported, which
  // workerd allows only inside a request: import it lazily, on first use.
  const fetchModelFile = modelFetcher(env);
  const { env: tf } = await import('@huggingface/transformers');
  const { createTransformersBackend } = await import('../backend/transformers-backend.ts');
  tf.allowRemoteModels = false;
  tf.useBrowserCache = false;
  // Work-around 3: model files come through the binding or URL, not the local file system.
  tf.fetch = ((input: string | URL | Request) => fetchModelFile(String(input instanceof Request ? input.url : input))) as typeof fetch;
  const onnx = tf.backends.onnx as { wasm: { numThreads?: number; wasmBinary?: ArrayBufferLike; proxy?: boolean; wasmPaths?: unknown } };
  onnx.wasm.numThreads = 1; // no threads in an isolate
  onnx.wasm.proxy = false;
  onnx.wasm.wasmPaths = undefined;
  onnx.wasm.wasmBinary = new ArrayBuffer(8); // a placeholder: the compiled module is used instead (below)
  useCompiledModuleForInstantiate(wasmModule);
  const settings = parseModelSettings(await (await fetchModelFile('/models/model/lexembed.json')).json(), 'lexembed.json');
  const backend = await createTransformersBackend({ modelId: 'model', localModelPath: '/models/', settings, device: 'wasm' });
  return createEmbedder(settings, backend);
}

/** Maps transformers.js file paths (/models/model/<file>) to the MODEL binding or MODEL_URL. */
function modelFetcher(env: Env): (path: string) => Promise<Response> {
  return async (path) => {
    const file = path.replace(/^.*\/models\/model\//, '');
    if (env.MODEL) return env.MODEL.fetch(new Request(`https://model.internal/${file}`));
    if (env.MODEL_URL) return fetch(new URL(file, env.MODEL_URL.endsWith('/') ? env.MODEL_URL : `${env.MODEL_URL}/`));
    throw new Error('no model configured: bind MODEL (a service or assets binding serving the model folder) or set MODEL_URL');
  };
}

/**
 * onnxruntime-web instantiates its runtime from bytes; with a placeholder for the bytes, hand it
 * the module compiled at deploy time instead (instantiating a compiled module is allowed).
 */
function useCompiledModuleForInstantiate(module: WebAssembly.Module) {
  const original = WebAssembly.instantiate.bind(WebAssembly) as (source: unknown, imports?: WebAssembly.Imports) => Promise<unknown>;
  (WebAssembly as { instantiate: unknown }).instantiate = async (source: unknown, imports?: WebAssembly.Imports) => {
    if (source instanceof WebAssembly.Module) return original(source, imports);
    const instance = await original(module, imports);
    return { instance, module };
  };
}
