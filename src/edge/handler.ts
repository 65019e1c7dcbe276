// The edge handler (`lexembed/edge`): the same Hono app on Cloudflare Workers and other
// isolates, embedding with onnxruntime-web's WASM build, model files from a binding or a URL, API
// keys from an injected store. Three work-arounds for workerd live here, each marked.
import { createApp } from '../http/app.ts';
import { createMemoryKeyStore } from '../auth/stores/memory.ts';
import { createStoreAuthenticator } from '../auth/service.ts';
import { AccountSchema, KeyRecordSchema } from '../auth/records.ts';
import { loadModel } from '../embedder/load.ts';
import { ModelLoadFailure } from '../http/model-state.ts';
import { fingerprintingFetch, graphFileOf } from '../embedder/fingerprint.ts';
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

/** The part of a Worker's ExecutionContext the handler uses. */
export interface EdgeContext {
  waitUntil(promise: Promise<unknown>): void;
}

export interface EdgeHandler {
  fetch(request: Request, env: Env, ctx?: EdgeContext): Promise<Response> | Response;
}

/** A load that has not finished by then is given up (and tried again by a later request). */
export const MODEL_LOAD_DEADLINE_MS = 120_000;
/** After a failed load, the next one starts no sooner than this, doubling to RETRY_MAX_MS. */
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 60_000;

const KeysSchema = z.object({ keys: z.array(KeyRecordSchema), accounts: z.array(AccountSchema) });

/**
 * A Worker's default export.
 * @example import wasmModule from 'onnxruntime-web/dist/ort-wasm-simd-threaded.asyncify.wasm';
 *          export default createEdgeHandler({ wasmModule });
 */
export function createEdgeHandler(options: EdgeHandlerOptions): EdgeHandler {
  // The load starts with the first request of any kind (a health probe, a 401) and runs inside it:
  // workerd cancels a request's I/O when its response is done, so that request is kept alive
  // (waitUntil) until the model is in. A failed or overdue load is answered as a 503 that says
  // so, and a request after the back-off starts a new one with a new app.
  let current: { app: ReturnType<typeof createApp>; retryAt: number } | undefined;
  let failures = 0;
  return {
    fetch(request, env, ctx) {
      if (!current || Date.now() >= current.retryAt) {
        const loading = loadWithDeadline(loadEdgeEmbedder(env, options.wasmModule), failures);
        const entry = { app: createEdgeApp(env, loading), retryAt: Infinity };
        current = entry;
        ctx?.waitUntil(loading.catch(() => {}));
        loading.then(
          () => void (failures = 0),
          (error: ModelLoadFailure) => {
            failures++;
            entry.retryAt = Date.now() + (error.retryAfterSeconds ?? 1) * 1000;
            console.error(`lexembed edge: ${error.message}`, error.cause ?? '');
          },
        );
      }
      return current.app.fetch(request);
    },
  };
}

/** The load, or after MODEL_LOAD_DEADLINE_MS a ModelLoadFailure; any failure says what happened and when the next try starts. */
function loadWithDeadline(load: Promise<Embedder>, failuresBefore: number): Promise<Embedder> {
  const backoffMs = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** failuresBefore);
  const next = `the next request tries again${backoffMs > RETRY_FIRST_MS ? ` after ${backoffMs / 1000} s` : ''}`;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ModelLoadFailure(`the model failed to load (not done within ${MODEL_LOAD_DEADLINE_MS / 1000} s); ${next}`, backoffMs / 1000)), MODEL_LOAD_DEADLINE_MS);
  });
  const failed = load.catch((error: unknown) => {
    const why = error instanceof Error ? error.message : String(error);
    throw new ModelLoadFailure(`the model failed to load (${why}); ${next}`, backoffMs / 1000, { cause: error });
  });
  return Promise.race([failed, deadline]).finally(() => clearTimeout(timer));
}

function createEdgeApp(env: Env, embedder: Promise<Embedder>) {
  const keys = env.LEXEMBED_KEYS ? KeysSchema.parse(JSON.parse(env.LEXEMBED_KEYS)) : { keys: [], accounts: [] };
  const store = createMemoryKeyStore(keys);
  return createApp({
    embedder,
    authenticate: env.LEXEMBED_NO_AUTH === 'true' ? undefined : createStoreAuthenticator(store),
    docsUrl: env.LEXEMBED_DOCS_URL,
  });
}

async function loadEdgeEmbedder(env: Env, wasmModule: WebAssembly.Module): Promise<Embedder> {
  // Work-around 2: transformers.js calls crypto.getRandomValues when it is imported, which
  // workerd allows only inside a request: import it lazily, on first use.
  const fetchFailures: string[] = [];
  const fetchModelFile = modelFetcher(env, fetchFailures);
  try {
    return await loadWithFiles(wasmModule, fetchModelFile);
  } catch (error) {
    throw fetchFailures.length ? new Error(fetchFailures.join('; '), { cause: error }) : error;
  }
}

async function loadWithFiles(wasmModule: WebAssembly.Module, fetchModelFile: (path: string) => Promise<Response>): Promise<Embedder> {
  const { env: tf } = await import('@huggingface/transformers');
  const { createTransformersBackend } = await import('../backend/transformers-backend.ts');
  tf.allowRemoteModels = false;
  tf.useBrowserCache = false;
  // Work-around 3: model files come through the binding or URL, not the local file system; each is
  // hashed as it streams in, for the model's fingerprint (the value a Node server shows).
  const files = fingerprintingFetch(((input: string | URL | Request) => fetchModelFile(String(input instanceof Request ? input.url : input))) as typeof fetch);
  tf.fetch = files.fetch;
  const onnx = tf.backends.onnx as { wasm: { numThreads?: number; wasmBinary?: ArrayBufferLike; proxy?: boolean; wasmPaths?: unknown } };
  onnx.wasm.numThreads = 1; // no threads in an isolate
  onnx.wasm.proxy = false;
  onnx.wasm.wasmPaths = undefined;
  onnx.wasm.wasmBinary = new ArrayBuffer(8); // a placeholder: the compiled module is used instead (below)
  useCompiledModuleForInstantiate(wasmModule);
  return loadModel({
    readSettings: async () => ({ value: await (await files.fetch('/models/model/lexembed.json')).json(), origin: 'lexembed.json' }),
    folderName: null, // the binding or URL serves one folder whose name the isolate never sees
    openBackend: async (settings) => ({
      backend: await createTransformersBackend({ modelId: 'model', localModelPath: '/models/', settings, device: 'wasm' }),
      graphFile: graphFileOf(settings.dtype),
    }),
    fingerprints: (graphFile) => files.fingerprints(graphFile, (file) => fetchModelFile(`/models/model/${file}`)),
  });
}

/** Maps transformers.js file paths (/models/model/<file>) to the MODEL binding or MODEL_URL; `failures` collects what could not be fetched. */
function modelFetcher(env: Env, failures: string[] = []): (path: string) => Promise<Response> {
  return async (path) => {
    const file = path.replace(/^.*\/models\/model\//, '');
    let response: Response;
    if (env.MODEL) response = await env.MODEL.fetch(new Request(`https://model.internal/${file}`));
    else if (env.MODEL_URL) response = await fetch(new URL(file, env.MODEL_URL.endsWith('/') ? env.MODEL_URL : `${env.MODEL_URL}/`));
    else throw new Error('no model configured: bind MODEL (a service or assets binding serving the model folder) or set MODEL_URL');
    // A 404 is an optional file transformers.js probes for; any other failure must not be read as the file.
    if (!response.ok && response.status !== 404) {
      // transformers.js reports any fetch failure as "file was not found": the load's error names this instead
      failures.push(`${file} could not be fetched: ${env.MODEL ? 'the MODEL binding' : 'MODEL_URL'} answered ${response.status}`);
      throw new Error(failures.at(-1));
    }
    return response;
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
