// lexembed's public entry: the contract, the embedder and the HTTP app.
export * from './contract/index.ts';
export { createEmbedder, type EmbedderHooks } from './embedder/embedder.ts';
export { BatchScheduler, DEFAULT_SCHEDULER_LIMITS, QueueFullError, type SchedulerLimits, type SchedulerStats } from './embedder/scheduler.ts';
export { ModelSettingsSchema, parseModelSettings, type ModelSettings } from './embedder/settings.ts';
export type { Embedder, EmbeddingBackend, EmbedInput, EmbedOutput } from './embedder/types.ts';
export { createApp, type AppOptions, type Authenticate } from './http/app.ts';
export * from './client/index.ts';
