// Where a command's model answers: the local model folder (run in this process through the HTTP
// API's own operations: src/local/in-process.ts) or a lexembed server (--remote, the HTTP client).
// Either way the command sees the same request and response shapes, so `lexembed search` and
// `lexembed mcp` give what POST /v1/embeddings and /v1/rerankings give.
import { Lexembed, type EmbeddingCreateParams, type RerankingCreateParams, type TokenizeCreateParams } from '../client/index.ts';
import { DEFAULT_RERANK_MODEL_NAME, type EmbeddingResponse, type RerankResponse, type TokenizeResponse } from '../contract/index.ts';
import type { TextChunk } from '../embedder/chunk.ts';
import { DENSE_PARTS, type VectorsFingerprint } from '../embedder/fingerprint.ts';
import type { Embedder } from '../embedder/types.ts';
import { inProcessClient } from '../local/in-process.ts';
import { loadModelFolder } from '../node/runtime/load-model.ts';
import { messageWithCause } from '../util/message-of.ts';
import { deviceOptions, type DeviceConfig } from './device-options.ts';

/**
 * Which weights make the vectors: the API name, the folder's id, the fingerprint of the served
 * files and, for a model loaded here, the vectors fingerprint (what a document's vectors depend
 * on; a server's /health does not show it, so a remote model's is null).
 */
export interface ModelIdentity {
  readonly name: string;
  readonly id: string | null;
  readonly fingerprint: string | null;
  readonly vectors: Partial<VectorsFingerprint> | null;
}

export interface ModelSource {
  readonly embeddings: { create(params: EmbeddingCreateParams): Promise<EmbeddingResponse> };
  readonly rerankings: { create(params: RerankingCreateParams): Promise<RerankResponse> };
  readonly tokenize: { create(params: TokenizeCreateParams): Promise<TokenizeResponse> };
  /** The API model name to send, and the reranker's. */
  readonly modelName: string;
  readonly rerankModelName: string;
  /** Cuts a text into chunks with the model's tokenizer; null for a remote server (no chunking endpoint). */
  readonly chunkText: ((text: string, options?: { size?: number; overlap?: number }) => Promise<TextChunk[]>) | null;
  /** Where it answers, in words (for logs). */
  readonly where: string;
  /** The model loaded in this process (what a search index embeds with); absent for a remote server. */
  readonly embedder?: Embedder;
  identity(): Promise<ModelIdentity>;
  dispose(): Promise<void>;
}

export interface SourceConfig extends DeviceConfig {
  readonly model: string;
  readonly remote: string;
  readonly 'model-name': string;
}

/** The model `config` names: --remote's server, else the --model folder loaded here. */
export async function openModelSource(config: SourceConfig): Promise<ModelSource> {
  if (config.remote) {
    // The key comes from LEXEMBED_API_KEY; without one, calls go unauthenticated (a --no-auth server).
    const client = new Lexembed({ baseURL: config.remote, apiKey: process.env.LEXEMBED_API_KEY?.trim() || null });
    return {
      embeddings: client.embeddings,
      rerankings: client.rerankings,
      tokenize: client.tokenize,
      modelName: config['model-name'],
      rerankModelName: DEFAULT_RERANK_MODEL_NAME,
      chunkText: null,
      where: `the lexembed server at ${config.remote}`,
      identity: () => remoteIdentity(config.remote, config['model-name']),
      dispose: async () => {},
    };
  }
  const embedder: Embedder = await loadModelFolder(config.model, { ...deviceOptions(config), batch: { tokens: 'auto', size: 'auto' } });
  const client = inProcessClient(async () => embedder);
  return {
    ...client,
    modelName: embedder.modelName,
    rerankModelName: embedder.reranker?.rerankModelName ?? DEFAULT_RERANK_MODEL_NAME,
    chunkText: client.chunkText,
    where: `${config.model} (${embedder.runtime.deviceReason ?? 'cpu'})`,
    embedder,
    identity: async () => localIdentity(embedder),
    dispose: () => embedder.dispose(),
  };
}

/** The remote server's model id and fingerprint, from its /health (the base URL less /v1). */
export async function remoteIdentity(baseURL: string, modelName: string): Promise<ModelIdentity> {
  const url = `${baseURL.replace(/\/+$/, '').replace(/\/v1$/, '')}/health`;
  let res: Response;
  try {
    res = await fetch(url);
  } catch (error) {
    throw new Error(`cannot reach ${url}: ${messageWithCause(error)}; is the server running, and is --remote (LEXEMBED_BASE_URL) right?`);
  }
  const body = (await res.json().catch(() => ({}))) as { model_id?: string; fingerprint?: string };
  if (!res.ok) throw new Error(`${url} answered ${res.status}: the server is not ready (is the model still loading?)`);
  return { name: modelName, id: body.model_id ?? null, fingerprint: body.fingerprint ?? null, vectors: null };
}

/** A model loaded here: its name, id, fingerprint and vectors fingerprint. */
export function localIdentity(embedder: Embedder): ModelIdentity {
  const { id, fingerprint, vectors } = embedder.settings;
  return { name: embedder.modelName, id: id ?? null, fingerprint: fingerprint ?? null, vectors: vectors ?? null };
}

/**
 * The identity an output of `task` records (OUT.meta.json): with the dense parts of the vectors
 * fingerprint where it holds document vectors (the document settings they cover are
 * retrieval/document's), so a release that keeps them keeps the output; other tasks' vectors
 * depend on their own prompts, and their outputs are checked by the whole fingerprint.
 */
export function outputIdentity(identity: ModelIdentity, task: string | null): ModelIdentity {
  const vectors = task === 'retrieval/document' && identity.vectors ? Object.fromEntries(DENSE_PARTS.map((p) => [p, identity.vectors![p]])) : null;
  return { ...identity, vectors };
}
