// Messages between the demo page and its model worker.
/** dtype: the in-page model's precision (?dtype=auto|fp32|q8; auto: int8 on WASM where the model card says it keeps quality). */
/** before: run as the page did before its speed-ups (?before=1: onnxruntime-web's asyncify build on WASM too, batches of 512 tokens; for bench:browser). */
export type Mode = { kind: 'local'; device: 'auto' | 'webgpu' | 'wasm'; dtype?: 'auto' | 'fp32' | 'q8'; graph?: 'auto' | 'plain' | 'fused'; before?: boolean } | { kind: 'remote'; baseURL: string; apiKey: string };

export type ToWorker =
  | { type: 'init'; mode: Mode }
  | { type: 'embed'; id: number; texts: string[]; task: 'retrieval/query' | 'retrieval/document' }
  /** Any request, as an application would send it (used by the browser tests). */
  | { type: 'create'; id: number; params: unknown }
  /** A reranking request through the same client (used by the browser tests). */
  | { type: 'rerank'; id: number; params: unknown }
  /** An OpenAI-shaped embeddings request through the in-page client (used by the browser tests). */
  | { type: 'openai'; id: number; params: unknown }
  /** Cut a long document into token windows with the in-page model's tokenizer. */
  | { type: 'chunk'; id: number; text: string; size: number; overlap: number };

/** A chunk of a document: its text is `document.slice(start, end)`. */
export interface Chunk {
  readonly text: string;
  readonly start: number;
  readonly end: number;
  readonly tokens: number;
}

export type FromWorker =
  | { type: 'progress'; fraction: number; file: string }
  | { type: 'ready'; backend: string; dtype?: string; graph?: string; modelId?: string | null; fingerprint?: string | null; reason: string; loadMs: number }
  | { type: 'failed'; message: string }
  | { type: 'embedded'; id: number; vectors: number[][]; ms: number; inputTokens: number }
  | { type: 'created'; id: number; response: unknown }
  | { type: 'chunked'; id: number; chunks: Chunk[] }
  | { type: 'error'; id: number; message: string; name?: string; status?: number; title?: string; detail?: string | null; errorType?: string };
