// The served model as the app sees it: loading, loaded, or failed to load (a permanent state).
import { problem, type Problem } from '../contract/index.ts';
import type { Embedder } from '../embedder/types.ts';

export interface ModelState {
  /** The model once loaded (synchronously readable, for /health). */
  readonly loaded: () => Embedder | undefined;
  /** Whether loading failed (the server log says why). */
  readonly failed: () => boolean;
  /** Waits for the model: it, or the 503 that says it failed to load. */
  readonly model: () => Promise<{ ok: true; value: Embedder } | { ok: false; problem: Problem }>;
  /** The model, or undefined when it failed to load. */
  readonly settled: () => Promise<Embedder | undefined>;
}

export function createModelState(embedder: Embedder | Promise<Embedder>): ModelState {
  let loaded: Embedder | undefined;
  let failed = false;
  const loading = Promise.resolve(embedder).then(
    (e) => (loaded = e),
    (error) => {
      failed = true;
      throw error;
    },
  );
  loading.catch(() => {});
  return {
    loaded: () => loaded,
    failed: () => failed,
    model: () =>
      loading.then(
        (value) => ({ ok: true as const, value }),
        () => ({ ok: false as const, problem: problem('unavailable', 'the model failed to load, so this server cannot answer; the server log says why (fix the model folder, then restart)') }),
      ),
    settled: () => loading.catch(() => undefined),
  };
}
