// The Embedder interface the HTTP app and the CLI talk to, and the backend seam beneath it.
import type { Chunking, ModelCapabilities, Problem, RerankCapabilities, Result, ScoringMethod, SparseWeighting, Task, TokenizeResponse } from '../contract/index.ts';
import type { TextChunk } from './chunk.ts';
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
   * Called with the request's exact input tokens once its texts are tokenised, before the model
   * runs: a problem refuses the request there (a rate limit or quota, src/usage/meter.ts).
   */
  readonly charge?: (inputTokens: number) => Promise<Problem | null>;
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

export interface Embedder extends ModelCapabilities {
  readonly settings: ModelSettings;
  /** Where inference runs, e.g. "onnxruntime-node (cpu)". */
  readonly backendName: string;
  /** Why the backend runs where it does (e.g. the WebGPU adapter chosen by --device auto). */
  readonly deviceReason?: string;
  embed(input: EmbedInput, options?: EmbedOptions): Promise<Result<EmbedOutput>>;
  /**
   * Splits a long text into chunks of at most `size` tokens (default: what one embedding of a
   * document reads) with `overlap` tokens repeated (default 0), cut between words, with offsets.
   * A bad size or overlap is a validation problem.
   */
  chunkText(text: string, options?: { size?: number | null; overlap?: number | null }): Result<TextChunk[]>;
  /** The most tokens one chunk may have: the model's input less its special tokens and document prompt. */
  readonly maxChunkTokens: number;
  /** Token counts as `embed` would read the texts (before truncation), optionally each token with offsets; yields to the event loop as it goes. */
  tokenize(texts: readonly string[], options: { task: Task | null; offsets: boolean }): Promise<TokenizeResponse['results']>;
  /** The reranker's limits, when the model folder carries a reranking fit. */
  readonly reranker?: RerankCapabilities;
  /** Scores texts against a query (requires `reranker`); through the same batching queue as embed. */
  rerank?(input: RerankInput, options?: EmbedOptions): Promise<Result<RerankOutput>>;
  /** Sparse vectors over the word-piece vocabulary, when the model folder carries the lexical table (lexembed.json "sparse"); no model run. */
  readonly sparse?: SparseEmbedder;
  /**
   * A 503 when the queue has no room for a request of `bodyBytes` bytes (estimated from its size;
   * with `maxTexts`, at most that many texts of the model's maximum length), so a full server
   * refuses before reading and parsing the body; null when it may have room.
   */
  refusalBySize?(bodyBytes: number, maxTexts: number | null): Problem | null;
  /** Batching totals (padding efficiency = realTokens / paddedTokens). */
  schedulerStats?(): SchedulerStats;
  /** Diagnostics: a full garbage collection wherever the model runs, if Node ran with --expose-gc. */
  collectGarbage?(): Promise<void>;
  dispose(): Promise<void>;
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
