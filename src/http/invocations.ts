// POST /invocations, the proxy endpoint of private deployments (spec 4.3): validates the
// invocation, dispatches it to the app's own routes in-process, and answers exactly what the
// named route answers. The inner call is marked in its context (the `env` it is dispatched with),
// which also carries its token count back to the outer request for the log and metrics.
import type { Context } from 'hono';
import { HOP_BY_HOP_HEADERS, validateInvocationRequest, type Problem } from '../contract/index.ts';
import { readJsonBody } from './read-body.ts';
import { RAW_TARGET } from './raw-target.ts';
import { requestOf, type Env } from './request-state.ts';

/** The key under which an inner call's record travels in the dispatch context. */
export const INNER_CALL = 'lexembed.innerCall';

/** What an inner call reports back to the /invocations request that made it. */
export interface InnerCall {
  inputTokens: number | null;
}

/** The inner call record of a request dispatched by /invocations, if this is one. */
export function innerCallOf(c: Context): InnerCall | undefined {
  return (c.env as Record<string, InnerCall | undefined> | undefined)?.[INNER_CALL];
}

export interface InvocationsDeps {
  /** The app's own fetch: the named route answers the inner request. */
  readonly dispatch: (request: Request, env: Record<string, unknown>) => Response | Promise<Response>;
  readonly maxBodyBytes: number;
  readonly fail: (c: Context, problem: Problem) => Response;
}

export function createInvocationsHandler(deps: InvocationsDeps) {
  return async (c: Context<Env>): Promise<Response> => {
    const body = await readJsonBody(c.req.raw, deps.maxBodyBytes);
    if (!body.ok) return deps.fail(c, body.problem);
    const invocation = validateInvocationRequest(body.value);
    if (!invocation.ok) return deps.fail(c, invocation.problem);
    const { path, method, headers, data } = invocation.value;
    const forwarded = new Headers();
    for (const [name, value] of Object.entries(headers ?? {})) {
      if (!(HOP_BY_HOP_HEADERS as readonly string[]).includes(name.toLowerCase())) forwarded.set(name, value);
    }
    const hasBody = data !== null && method !== 'GET' && method !== 'HEAD';
    if (hasBody && !forwarded.has('content-type')) forwarded.set('content-type', 'application/json');
    forwarded.set('x-request-id', requestOf(c).id);
    // On the outer request's origin, so problem types in the answer resolve where the caller is.
    const request = new Request(new URL(path, c.req.url), { method, headers: forwarded, body: hasBody ? JSON.stringify(data) : undefined, signal: c.req.raw.signal });
    const call: InnerCall = { inputTokens: null };
    // The outer request's env, less its raw target: the inner request's target is `path`.
    const { [RAW_TARGET]: _outerTarget, ...env } = (c.env ?? {}) as Record<string, unknown>;
    const inner = await deps.dispatch(request, { ...env, [INNER_CALL]: call });
    if (call.inputTokens) requestOf(c).inputTokens = call.inputTokens;
    const responseHeaders = new Headers(inner.headers);
    for (const name of HOP_BY_HOP_HEADERS) responseHeaders.delete(name);
    return new Response(inner.body, { status: inner.status, headers: responseHeaders });
  };
}
