// The Embedder interface the HTTP app and the CLI talk to, and the backend seam beneath it.
import type { Chunking, ModelCapabilities, RerankCapabilities, Result, ScoringMethod, SparseWeighting, Task, TokenizeResponse } from '../contract/index.ts';
import type { TextChunk } from './chunk.ts';
import type { Lease, Reservation } from './admission.ts';
import type { ModelSettings } from './settings.ts';
import type { SparseVector } from './sparse.ts';

/** Batching totals of the scheduler (padding efficiency = realTokens / paddedTokens). */
export interface SchedulerStats {
  batches: number;
  sequences: number;
  realTokens: number;
  paddedTokens: number;
  queuedTokens: number;
  queuedSequences: number;
}

export interface EmbedInput {
  readonly texts: readonly string[];
  readonly task: Task | null;
  readonly overflowStrategy: 'drop_end' | null;
  readonly dimensions: number | null;
}

export interface EmbedOptions {
  /** Aborting (e.g. the client disconnected) takes the request's waiting texts off the queue. */
  readonly signal?: AbortSignal;
  /**
   * The request's admission (admission.ts): its queue room, if it holds some already, and the
   * meter it commits its exact input tokens to before the model runs (a problem refuses it there).
   * Without one, the embedder holds room for its own estimate and nothing is metered.
   */
  readonly lease?: Lease;
}

export interface EmbedOutput {
  /** Unit-norm vectors in input order. */
  readonly vectors: Float32Array[];
  /** Tokens fed to the model: prompt and special tokens included, after truncation. */
  readonly inputTokens: number;
  /** Texts cut to the model's maximum by overflow_strategy drop_end (their end was not embedded). */
  readonly truncatedTexts?: number;
}

export interface RerankInput {
  readonly query: string;
  readonly texts: readonly string[];
  readonly chunking: Chunking;
  readonly method: ScoringMethod;
}

export interface RerankOutput {
  /** One score in [0, 1] per text, in input order. */
  readonly scores: number[];
  /** Tokens fed to the model: the query and every chunk, special tokens included. */
  readonly inputTokens: number;
}

export interface SparseInput {
  readonly texts: readonly string[];
  readonly task: Task | null;
  readonly overflowStrategy: 'drop_end' | null;
  readonly weighting: SparseWeighting;
}

export interface SparseOutput {
  /** One sparse vector per text, in input order. */
  readonly vectors: SparseVector[];
  /** Tokens read: prompt and special tokens included, after truncation (no model runs). */
  readonly inputTokens: number;
  readonly truncatedTexts?: number;
}

export interface SparseEmbedder {
  /** Indices lie below this. */
  readonly vocabularySize: number;
  embed(input: SparseInput, options?: EmbedOptions): Promise<Result<SparseOutput>>;
}

/**
 * A loaded model, as the HTTP app, the CLI, the clients and the adapters use it: what it can do
 * (ModelCapabilities, and `reranker` / `sparse` where the folder carries them, each with its
 * method), its operations, and where it runs (`runtime`).
 */
export interface Embedder extends ModelCapabilities {
  readonly settings: ModelSettings;
  embed(input: EmbedInput, options?: EmbedOptions): Promise<Result<EmbedOutput>>;
  /** Token counts as `embed` would read the texts (before truncation), optionally each token with offsets; yields to the event loop as it goes. */
  tokenize(texts: readonly string[], options: { task: Task | null; offsets: boolean }): Promise<TokenizeResponse['results']>;
  /**
   * Splits a long text into chunks of at most `size` tokens (default: what one embedding of a
   * document reads) with `overlap` tokens repeated (default 0), cut between words, with offsets.
   * A bad size or overlap is a validation problem.
   */
  chunkText(text: string, options?: { size?: number | null; overlap?: number | null }): Result<TextChunk[]>;
  /** The most tokens one chunk may have: the model's input less its special tokens and document prompt. */
  readonly maxChunkTokens: number;
  /** The reranker, when the model folder carries a reranking fit: its limits and `rerank`, through the same batching queue as embed. */
  readonly reranker?: Reranker;
  /** Sparse vectors over the word-piece vocabulary, when the model folder carries the lexical table (lexembed.json "sparse"); no model run. */
  readonly sparse?: SparseEmbedder;
  /** Where and how the model runs. */
  readonly runtime: EmbedderRuntime;
  dispose(): Promise<void>;
}

export interface Reranker extends RerankCapabilities {
  /** Scores texts against a query, through the same batching queue as embed. */
  rerank(input: RerankInput, options?: EmbedOptions): Promise<Result<RerankOutput>>;
}

export interface EmbedderRuntime {
  /** Where inference runs, e.g. "onnxruntime-node (cpu)". */
  readonly backendName: string;
  /** Why the backend runs where it does (e.g. the WebGPU adapter chosen by --device auto). */
  readonly deviceReason?: string;
  /**
   * Room in the batching queue for about `tokens` tokens, held until released or the request's
   * texts are queued (a lease's queue gate, admission.ts); a 503 problem at once when there is none.
   */
  reserve(tokens: number): Result<Reservation>;
  /**
   * The most tokens a request body of `bodyBytes` bytes can make (with `maxTexts`, at most that
   * many texts of the model's maximum length): what a lease reserves before the body is read.
   */
  tokensOfBody(bodyBytes: number, maxTexts: number | null): number;
  /** Batching totals (padding efficiency = realTokens / paddedTokens). */
  stats(): SchedulerStats;
  /** Diagnostics: a full garbage collection wherever the model runs, if Node ran with --expose-gc. */
  collectGarbage(): Promise<void>;
}

/** What a model runtime must provide: tokenise, and run pooled batches. */
export interface EmbeddingBackend {
  readonly name: string;
  /** Where the model runs: cpu, webgpu, wasm (absent: cpu). */
  readonly device?: string;
  readonly deviceReason?: string;
  /** Token ids with special tokens, untruncated. */
  encode(text: string): number[];
  /** The text's tokens as strings (no special tokens), e.g. ['leas', '##ing']: for token offsets. */
  tokenize?(text: string): string[];
  /** The text of token ids (special tokens dropped): what reranking's BM25 reads of a chunk. */
  decode?(ids: readonly number[]): string;
  /** Pooled (not yet normalised) vectors, one per sequence, full model width. */
  run(batch: readonly (readonly number[])[]): Promise<Float32Array[]>;
  /** How many batches may be sent before the first comes back (default 1); a worker thread queues the next while one runs. */
  readonly maxBatchesInFlight?: number;
  collectGarbage?(): Promise<void>;
  dispose(): Promise<void>;
}
