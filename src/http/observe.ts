// Per-request observation: a request id (given or new), then one structured log record and one
// metrics observation when the answer is ready. An /invocations inner call only reports its token
// count back to the outer request, which logs it.
import type { MiddlewareHandler } from 'hono';
import { innerCallOf } from './invocations.ts';
import type { Env, RequestState } from './request-state.ts';

export type { Env } from './request-state.ts';

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

const REQUEST_ID = /^[\w.:@-]{1,128}$/;
/** The header that carries the request id, given or new, both ways. */
export const REQUEST_ID_HEADER = 'x-request-id';

/** @param isRoute whether a matched route path is one of the app's (else it is logged as "unmatched") */
export function observeRequests(options: { metrics?: AppMetrics; log?: (record: RequestLogRecord) => void; isRoute: (path: string) => boolean }): MiddlewareHandler<Env> {
  return async (c, next) => {
    const inner = innerCallOf(c);
    const given = c.req.header(REQUEST_ID_HEADER);
    const requestId = given && REQUEST_ID.test(given) ? given : crypto.randomUUID();
    const request: RequestState = { id: requestId, inputTokens: null, headersWritten: false };
    c.set('request', request);
    const started = performance.now();
    await next();
    if (!request.headersWritten) c.res.headers.set(REQUEST_ID_HEADER, requestId);
    if (inner) {
      inner.inputTokens = request.inputTokens;
      return;
    }
    const route = c.req.routePath && c.req.routePath !== '/*' && options.isRoute(c.req.routePath) ? c.req.routePath : 'unmatched';
    const seconds = (performance.now() - started) / 1000;
    const { inputTokens } = request;
    options.metrics?.observeRequest({ route, method: c.req.method, status: c.res.status, seconds, inputTokens });
    options.log?.({ msg: 'request', request_id: requestId, method: c.req.method, route, status: c.res.status, latency_ms: +(seconds * 1000).toFixed(2), input_tokens: inputTokens });
  };
}
