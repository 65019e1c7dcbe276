// Where a command's model answers: the local model folder (run in this process through the HTTP
// API's own operations: src/local/in-process.ts) or a lexembed server (--remote, the HTTP client).
// Either way the command sees the same request and response shapes, so `lexembed search` and
// `lexembed mcp` give what POST /v1/embeddings and /v1/rerankings give.
import { Lexembed, type EmbeddingCreateParams, type RerankingCreateParams, type TokenizeCreateParams } from '../client/index.ts';
import { DEFAULT_RERANK_MODEL_NAME, type EmbeddingResponse, type RerankResponse, type TokenizeResponse } from '../contract/index.ts';
import type { TextChunk } from '../embedder/chunk.ts';
import type { Embedder } from '../embedder/types.ts';
import { inProcessClient } from '../local/in-process.ts';
import { loadModelFolder } from '../node/runtime/load-model.ts';
import { messageWithCause } from '../util/message-of.ts';
import { deviceOptions, type DeviceConfig } from './device-options.ts';

/** Which weights make the vectors: the API name, the folder's id and the fingerprint of the served files. */
export interface ModelIdentity {
  readonly name: string;
  readonly id: string | null;
  readonly fingerprint: string | null;
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
    identity: async () => ({ name: embedder.modelName, id: embedder.settings.id ?? null, fingerprint: embedder.settings.fingerprint ?? null }),
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
  return { name: modelName, id: body.model_id ?? null, fingerprint: body.fingerprint ?? null };
}
