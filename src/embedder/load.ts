// The one model loader every runtime goes through (issue "Shape III"): Node (node/runtime/load-model.ts:
// files on disk, the inference worker), the edge (edge/handler.ts: files through a binding or URL,
// WASM in the isolate) and the browser (local/client.ts: files over fetch, WebGPU or WASM) each say
// only where the model's files come from and how they open a backend; the settings, the model's
// identity (its id and the fingerprint of the graph that makes the vectors) and the embedder are
// made here, once, so every runtime's answers carry the same model id and fingerprint.
import { createEmbedder, type EmbedderHooks } from './embedder.ts';
import type { ModelFingerprints } from './fingerprint.ts';
import { DEFAULT_SCHEDULER_LIMITS, type SchedulerLimits } from './batch-defaults.ts';
import { parseModelSettings, type ModelSettings } from './settings.ts';
import type { Embedder, EmbeddingBackend } from './types.ts';

/** What one runtime knows of a model: where its files are, and how it opens a backend for it. */
export interface ModelSource {
  /** lexembed.json's parsed value, and how to name it in an error. */
  readSettings(): Promise<{ readonly value: unknown; readonly origin: string }>;
  /**
   * The folder's name, the model's id where lexembed.json names none (null where the runtime
   * cannot know it: the edge's binding).
   */
  readonly folderName: string | null;
  /**
   * Opens the backend the runtime chooses for these settings; says which graph file it loaded
   * (fingerprint.ts graphFileOf) and, where it decided them with the backend, the batch limits.
   */
  openBackend(settings: ModelSettings): Promise<{ readonly backend: EmbeddingBackend; readonly graphFile: string; readonly limits?: SchedulerLimits }>;
  /** The fingerprint and the vectors fingerprint of that graph, the tokenizer and lexembed.json (fingerprint.ts), or null when one cannot be read. */
  fingerprints(graphFile: string): Promise<ModelFingerprints | null>;
}

export interface LoadOptions {
  /** Overrides the API model name from the settings file. */
  readonly modelName?: string;
  /** Batch limits, where the backend does not decide them (default DEFAULT_SCHEDULER_LIMITS). */
  readonly limits?: SchedulerLimits;
  readonly hooks?: EmbedderHooks;
}

/** Loads a model from a runtime's source: settings, backend, identity, embedder. */
export async function loadModel(source: ModelSource, options: LoadOptions = {}): Promise<Embedder> {
  const { value, origin } = await source.readSettings();
  const settings = parseModelSettings(value, origin);
  if (options.modelName) settings.name = options.modelName;
  if (source.folderName) settings.id ??= source.folderName;
  const { backend, graphFile, limits } = await source.openBackend(settings);
  try {
    // The graph the backend loaded (fp32, fp16, int8 or fused) is what makes the vectors.
    const identity = await source.fingerprints(graphFile);
    settings.fingerprint = identity?.fingerprint;
    settings.vectors = identity?.vectors;
    return createEmbedder(settings, backend, limits ?? options.limits ?? DEFAULT_SCHEDULER_LIMITS, options.hooks);
  } catch (error) {
    await backend.dispose();
    throw error;
  }
}
