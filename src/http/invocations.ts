// POST /invocations, the proxy endpoint of private deployments (spec 4.3): validates the
// invocation and dispatches it to the row of the route it names (pipeline.ts `dispatcher`), with
// the outer request's state, so the inner answer's token count is the outer request's and the one
// request is logged once, under /invocations. It answers exactly what the named route answers.
import { HOP_BY_HOP_HEADERS, validateInvocationRequest, type Problem } from '../contract/index.ts';
import { readJsonBody } from './read-body.ts';
import type { RequestState } from './request-state.ts';

export interface InvocationsDeps {
  /** Serves a request with the row its method and path name (or the 404/405 problem). */
  readonly dispatch: (request: Request, state: RequestState) => Response | Promise<Response>;
  readonly maxBodyBytes: number;
  readonly fail: (request: Request, problem: Problem) => Response;
}

export function createInvocationsHandler(deps: InvocationsDeps) {
  return async (request: Request, state: RequestState): Promise<Response> => {
    const body = await readJsonBody(request, deps.maxBodyBytes);
    if (!body.ok) return deps.fail(request, body.problem);
    const invocation = validateInvocationRequest(body.value);
    if (!invocation.ok) return deps.fail(request, invocation.problem);
    const { path, method, headers, data } = invocation.value;
    const forwarded = new Headers();
    for (const [name, value] of Object.entries(headers ?? {})) {
      if (!(HOP_BY_HOP_HEADERS as readonly string[]).includes(name.toLowerCase())) forwarded.set(name, value);
    }
    const hasBody = data !== null && method !== 'GET' && method !== 'HEAD';
    const text = hasBody ? JSON.stringify(data) : undefined;
    if (hasBody && !forwarded.has('content-type')) forwarded.set('content-type', 'application/json');
    // The inner body's exact size, so the route's lease reserves queue room for it as for a direct call.
    if (text !== undefined) forwarded.set('content-length', String(new TextEncoder().encode(text).length));
    // On the outer request's origin, so problem types in the answer resolve where the caller is.
    const inner = await deps.dispatch(new Request(new URL(path, request.url), { method, headers: forwarded, body: text, signal: request.signal }), state);
    const responseHeaders = new Headers(inner.headers);
    for (const name of HOP_BY_HOP_HEADERS) responseHeaders.delete(name);
    return new Response(inner.body, { status: inner.status, headers: responseHeaders });
  };
}
