// Per-request observation, the pipeline's last stage (pipeline.ts): one structured log record and
// one metrics observation when the answer is ready, from the request's state.
import type { RequestState } from './request-state.ts';

export interface RequestLogRecord {
  readonly msg: 'request';
  readonly request_id: string;
  readonly method: string;
  readonly route: string;
  readonly status: number;
  readonly latency_ms: number;
  readonly input_tokens: number | null;
}

export interface AppMetrics {
  observeRequest(record: { route: string; method: string; status: number; seconds: number; inputTokens: number | null }): void;
  render(): Promise<{ contentType: string; body: string }>;
}

export interface ObserveOptions {
  readonly metrics?: AppMetrics;
  readonly log?: (record: RequestLogRecord) => void;
}

const REQUEST_ID = /^[\w.:@-]{1,128}$/;
/** The header that carries the request id, given or new, both ways. */
export const REQUEST_ID_HEADER = 'x-request-id';

/** The request id a client gave, if it is a usable one; a new one otherwise. */
export const requestIdOf = (given: string | undefined) => (given && REQUEST_ID.test(given) ? given : crypto.randomUUID());

/** Logs and counts one answered request (`route`: its row's path, or "unmatched"). */
export function observeAnswer(options: ObserveOptions, request: RequestState, answer: { method: string; route: string; status: number; seconds: number }): void {
  const { method, route, status, seconds } = answer;
  const { inputTokens } = request;
  options.metrics?.observeRequest({ route, method, status, seconds, inputTokens });
  options.log?.({ msg: 'request', request_id: request.id, method, route, status, latency_ms: +(seconds * 1000).toFixed(2), input_tokens: inputTokens });
}
