// lexembed's public entry: the contract, the embedder core and the HTTP client. Nothing here
// needs more than zod; the HTTP app and the Node server are in lexembed/server.
export * from './contract/index.ts';
export { createEmbedder, type EmbedderHooks } from './embedder/embedder.ts';
export { loadModel, type LoadOptions, type ModelSource } from './embedder/load.ts';
export { openLease, type Lease, type Reservation, type UsageGate } from './embedder/admission.ts';
export { chunkText, tokenOffsets, wordTokenCounter, type ChunkOptions, type TextChunk, type TokenSpan } from './embedder/chunk.ts';
export { BatchScheduler, DEFAULT_SCHEDULER_LIMITS, QueueFullError, type SchedulerLimits, type SchedulerStats } from './embedder/scheduler.ts';
export { ModelSettingsSchema, parseModelSettings, type ModelSettings } from './embedder/settings.ts';
export type { EmbedOptions, Embedder, EmbedderRuntime, EmbeddingBackend, EmbedInput, EmbedOutput, Reranker } from './embedder/types.ts';
export * from './client/index.ts';
