// The local client: the same `embeddings.create()` as the HTTP client, with the same responses
// and typed errors, computed in this page, worker or edge isolate by transformers.js on
// onnxruntime-web (WebGPU or WASM). Every asset comes from URLs the application serves.
import { env } from '@huggingface/transformers';
import { toProblemDocument, type EmbeddingResponse, type OpenAIEmbeddingRequestInput, type OpenAIEmbeddingResponse, type Problem, type RerankResponse, type TokenizeResponse } from '../contract/index.ts';
import type { TextChunk } from '../embedder/chunk.ts';
import { makeAPIError } from '../client/errors.ts';
import type { EmbeddingCreateParams, RerankingCreateParams, TokenizeCreateParams } from '../client/index.ts';
import { createEmbeddings, createOpenAIEmbeddings, createRerankings, createTokenization, type Outcome } from '../operations/index.ts';
import { createEmbedder } from '../embedder/embedder.ts';
import { parseModelSettings } from '../embedder/settings.ts';
import { createTransformersBackend } from '../backend/transformers-backend.ts';
import type { Embedder } from '../embedder/types.ts';
import { chooseDevice, type DeviceChoice, type LocalDevice } from './device.ts';
import { retryingFetch } from '../util/fetch-retry.ts';

export interface LocalClientOptions {
  /** URL path of the model folder, e.g. '/models/legal-2-embedder/' (served by the application). */
  model: string;
  device?: LocalDevice;
  /** URLs of onnxruntime-web's asyncify build: { mjs, wasm } (default '/ort/ort-wasm-simd-threaded.asyncify.*'). */
  wasmPaths?: { mjs: string; wasm: string };
  /** WASM threads (needs cross-origin isolation; default: what the runtime offers, at most 4). */
  numThreads?: number;
  /** Allow a software-fallback WebGPU adapter under 'auto' (default false: WASM is faster). */
  allowFallbackAdapter?: boolean;
  /** Base of problem `type` URIs (default '/docs', as the server). */
  docsUrl?: string;
  /** Model-file download progress, 0–1. */
  onProgress?: (fraction: number, file: string) => void;
}

export interface LocalClient {
  readonly embeddings: { create(params: EmbeddingCreateParams): Promise<EmbeddingResponse> };
  /** Reranking with the model folder's fit (a 404 APIError where its lexembed.json has none). */
  readonly rerankings: { create(params: RerankingCreateParams): Promise<RerankResponse> };
  /**
   * The OpenAI-compatible embeddings of the server's POST /openai/v1/embeddings (input, model or
   * its :query/:document alias, input_type, encoding_format, dimensions), for code written
   * against OpenAI's shape; problems are thrown as this client's typed errors.
   */
  readonly openai: { readonly embeddings: { create(params: OpenAIEmbeddingRequestInput): Promise<OpenAIEmbeddingResponse> } };
  /** Token counts (and offsets) as the server's POST /v1/tokenize answers them. */
  readonly tokenize: { create(params: TokenizeCreateParams): Promise<TokenizeResponse> };
  /**
   * Splits a long text into chunks of at most `size` tokens of this model (default: what one
   * document embedding reads) with `overlap` tokens repeated, with offsets into the text.
   */
  chunkText(text: string, options?: { size?: number; overlap?: number }): Promise<TextChunk[]>;
  /** Where the model runs and why; resolves once the model is loaded. */
  readonly ready: Promise<DeviceChoice & { loadMs: number }>;
  dispose(): Promise<void>;
}

/**
 * @example const client = createLocalClient({ model: '/models/legal-2-embedder/' });
 *          const { embeddings } = await client.embeddings.create({ model: 'legal-2-embedder', texts: ['Lease'] });
 */
const NODE_MESSAGE =
  'createLocalClient runs the model in a browser or a web worker (model files fetched from `model`, onnxruntime-web); ' +
  "in Node, load a model folder from disk with loadModelFolder (lexembed/server) or call a server started with `npx lexembed serve` through new Lexembed()";

/** Node (not a browser, worker or workerd): process.versions.node, with no window or WorkerGlobalScope. */
const isNode = () =>
  typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === 'string' &&
  typeof (globalThis as { window?: unknown }).window === 'undefined' &&
  typeof (globalThis as { WorkerGlobalScope?: unknown }).WorkerGlobalScope === 'undefined';

export function createLocalClient(options: LocalClientOptions): LocalClient {
  const docsUrl = options.docsUrl ?? '/docs';
  const loading = isNode() ? Promise.reject(new Error(NODE_MESSAGE)) : load(options);
  loading.catch(() => {});
  // Handled here too: a caller that never awaits `ready` must not get an unhandled rejection
  // (which ends a Node process); one that awaits it still gets the error, once.
  const ready = loading.then(({ choice, loadMs }) => ({ ...choice, loadMs }));
  ready.catch(() => {});
  /** The server's operation, in this page: its body, or its problem as the HTTP client's typed error. */
  const run = async <T>(operation: (body: unknown, embedder: Embedder) => Promise<Outcome<T>>, params: unknown): Promise<T> => {
    const { embedder } = await loading;
    const outcome = await operation(params, embedder);
    if (!outcome.ok) throw toError(outcome.problem, docsUrl);
    return outcome.value.body;
  };
  return {
    embeddings: { create: (params) => run(createEmbeddings, params) },
    rerankings: { create: (params) => run(createRerankings, params) },
    tokenize: { create: (params) => run(createTokenization, params) },
    openai: { embeddings: { create: (params) => run(createOpenAIEmbeddings, params) } },
    async chunkText(text, chunkOptions) {
      const { embedder } = await loading;
      const chunks = embedder.chunkText(text, chunkOptions);
      if (!chunks.ok) throw toError(chunks.problem, docsUrl);
      return chunks.value;
    },
    ready,
    async dispose() {
      await (await loading).embedder.dispose();
    },
  };
}

async function load(options: LocalClientOptions): Promise<{ embedder: Embedder; choice: DeviceChoice; loadMs: number }> {
  const started = performance.now();
  const base = options.model.endsWith('/') ? options.model : `${options.model}/`;
  const parts = base.replace(/\/+$/, '').split('/');
  const modelId = parts.pop()!;
  const root = parts.join('/') + '/';
  const onnx = env.backends.onnx as { wasm?: { wasmPaths?: unknown; numThreads?: number; proxy?: boolean } };
  if (onnx.wasm) {
    onnx.wasm.wasmPaths = options.wasmPaths ?? { mjs: '/ort/ort-wasm-simd-threaded.asyncify.mjs', wasm: '/ort/ort-wasm-simd-threaded.asyncify.wasm' };
    const isolated = (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true;
    const cores = (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? 1;
    onnx.wasm.numThreads = options.numThreads ?? (isolated ? Math.min(4, cores) : 1);
  }
  // Model files are large and a busy server or a dropped connection happens: every fetch of them
  // retries. They skip the HTTP cache: a private window's in-memory cache cannot hold a 50 MB model
  // and fails the download (net::ERR_CACHE_WRITE_FAILURE, every time in Chromium's incognito);
  // transformers.js keeps its own copy in the Cache API where the browser allows one.
  const tf = env as unknown as { fetch: typeof fetch };
  tf.fetch = retryingFetch(uncachedFetch);
  const settingsResponse = await tf.fetch(`${base}lexembed.json`);
  if (!settingsResponse.ok) throw new Error(`cannot load ${base}lexembed.json (HTTP ${settingsResponse.status}); serve the model folder at ${base}`);
  const settings = parseModelSettings(await settingsResponse.json(), `${base}lexembed.json`);
  const choice = await chooseDevice(options.device ?? 'auto', options.allowFallbackAdapter);
  const backend = await createTransformersBackend({
    modelId,
    localModelPath: root,
    settings,
    device: choice.device,
    progress: options.onProgress,
  });
  return { embedder: createEmbedder(settings, backend), choice, loadMs: performance.now() - started };
}

const uncachedFetch: typeof fetch = (input, init) => fetch(input, { ...init, cache: 'no-store' });

function toError(problem: Problem, docsUrl: string) {
  const doc = toProblemDocument(problem, docsUrl);
  return makeAPIError(doc.status, doc, new Headers({ 'content-type': 'application/problem+json', ...problem.headers }));
}
export { chunkText, tokenOffsets, wordTokenCounter, type ChunkOptions, type TextChunk, type TokenSpan } from '../embedder/chunk.ts';
