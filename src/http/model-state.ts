// The served model as the app sees it: loading, loaded, or failed to load. A failure is permanent
// for this state; a runtime that loads again (the edge) makes a new app and says so in the
// failure's own detail (ModelLoadFailure).
import { problem, type Problem } from '../contract/index.ts';
import type { Embedder } from '../embedder/types.ts';

const DEFAULT_FAILURE = 'the model failed to load, so this server cannot answer; the server log says why (fix the model folder, then restart)';

/** A load failure that carries what clients are told (why, and what happens next), and when to retry. */
export class ModelLoadFailure extends Error {
  constructor(
    readonly detail: string,
    readonly retryAfterSeconds?: number,
    options?: ErrorOptions,
  ) {
    super(detail, options);
    this.name = 'ModelLoadFailure';
  }
}

export interface ModelState {
  /** The model once loaded (synchronously readable, for /health). */
  readonly loaded: () => Embedder | undefined;
  /** Whether loading failed (the server log says why). */
  readonly failed: () => boolean;
  /** The 503 of a failure that says itself what clients are told (ModelLoadFailure); undefined otherwise. */
  readonly failure: () => Problem | undefined;
  /** Waits for the model: it, or the 503 that says it failed to load. */
  readonly model: () => Promise<{ ok: true; value: Embedder } | { ok: false; problem: Problem }>;
  /** The model, or undefined when it failed to load. */
  readonly settled: () => Promise<Embedder | undefined>;
}

export function createModelState(embedder: Embedder | Promise<Embedder>): ModelState {
  let loaded: Embedder | undefined;
  let failed = false;
  let failure: Problem | undefined;
  const loading = Promise.resolve(embedder).then(
    (e) => (loaded = e),
    (error) => {
      failed = true;
      if (error instanceof ModelLoadFailure) {
        failure = problem('unavailable', error.detail, error.retryAfterSeconds ? { 'retry-after': String(error.retryAfterSeconds) } : undefined);
      }
      throw error;
    },
  );
  loading.catch(() => {});
  return {
    loaded: () => loaded,
    failed: () => failed,
    failure: () => failure,
    model: () =>
      loading.then(
        (value) => ({ ok: true as const, value }),
        () => ({ ok: false as const, problem: failure ?? problem('unavailable', DEFAULT_FAILURE) }),
      ),
    settled: () => loading.catch(() => undefined),
  };
}
