// One request, one list of stages (issue "Shape III"). Every row of the route table is served here,
// in this order:
//
//   observe    the request id (given or new) and the clock                  trackRequests, first middleware
//   auth       the key, where the row names a resource                      authenticated
//   model      the model loaded (or a 503); a capability the row requires   serveOperation
//   lease      the meter's admission and queue room for the declared size   src/embedder/admission.ts
//   body       the JSON body, under the size limit                          read-body.ts
//   operation  the row's operation (src/operations), which commits the exact input tokens to the lease
//   response   the value as JSON, with the request id, the model identity and the lease's rate-limit headers
//   settle     the lease settled with the outcome, before the answer leaves
//   log        one record and one metrics observation                       trackRequests, at the end (observe.ts)
//
// Rows that need no model (probes, pages, the proxy) skip from auth to their handler. The request's
// state is one object (request-state.ts) that this file alone keeps on Hono's context; /invocations
// dispatches to its route's row here, with the outer request's state, rather than through the app again.
import type { Context, Hono, MiddlewareHandler } from 'hono';
import { float32JsonBytes, problem, type Problem } from '../contract/index.ts';
import { isRefusal, type Authenticate, type Principal } from '../auth/records.ts';
import { openLease } from '../embedder/admission.ts';
import type { Embedder } from '../embedder/types.ts';
import { rerankNotServed, sparseNotServed, type Answer } from '../operations/index.ts';
import type { Meter } from '../usage/meter.ts';
import type { ModelState } from './model-state.ts';
import { observeAnswer, REQUEST_ID_HEADER, requestIdOf, type ObserveOptions } from './observe.ts';
import { readJsonBody } from './read-body.ts';
import type { Env, RequestState } from './request-state.ts';
import { isOperationRoute, type HandlerRoute, type OperationRoute, type Route } from './routes.ts';

/** Headers every answer carries (opaque cross-origin reads allowed: see installMiddleware in app.ts). */
export const COMMON_HEADERS = { 'cross-origin-resource-policy': 'cross-origin' } as const;

/** Response headers of every answered operation: which weights answered. */
export const MODEL_ID_HEADER = 'x-lexembed-model-id';
export const FINGERPRINT_HEADER = 'x-lexembed-model-fingerprint';

/** The loaded model's id and fingerprint, where known. */
export function modelIdentity(embedder: Pick<Embedder, 'settings'>): { model_id?: string; fingerprint?: string } {
  const { id, fingerprint } = embedder.settings;
  return { ...(id ? { model_id: id } : {}), ...(fingerprint ? { fingerprint } : {}) };
}

/** What a capability a row requires answers when the loaded model lacks it. */
const NOT_SERVED: Record<NonNullable<Route['requires']>, (embedder: Embedder) => Problem> = { sparse: sparseNotServed, reranker: rerankNotServed };

export interface Pipeline {
  readonly authenticate: Authenticate;
  readonly usage?: Meter;
  readonly state: ModelState;
  readonly maxBodyBytes: number;
  /** A problem as the request's route answers it (problem details, or OpenAI's error shape). */
  readonly fail: (request: Request, p: Problem) => Response;
}

/** The request's state (made by trackRequests, the first middleware). */
export const requestOf = (c: Context<Env>): RequestState => c.get('request');

/** The first stage and the last: the request's state and clock; then its log record and metrics. */
export function trackRequests(options: ObserveOptions & { isRoute: (path: string) => boolean }): MiddlewareHandler<Env> {
  return async (c, next) => {
    const state: RequestState = { id: requestIdOf(c.req.header(REQUEST_ID_HEADER)), inputTokens: null, headersWritten: false };
    c.set('request', state);
    const started = performance.now();
    await next();
    if (!state.headersWritten) c.res.headers.set(REQUEST_ID_HEADER, state.id);
    const route = c.req.routePath && c.req.routePath !== '/*' && options.isRoute(c.req.routePath) ? c.req.routePath : 'unmatched';
    observeAnswer(options, state, { method: c.req.method, route, status: c.res.status, seconds: (performance.now() - started) / 1000 });
  };
}

/** The methods the table serves per path (for 405s and the request log). */
export function allowedMethods(table: readonly Route[]): ReadonlyMap<string, string[]> {
  const allowed = new Map<string, string[]>();
  for (const route of table) allowed.set(route.path, [...(allowed.get(route.path) ?? []), route.method]);
  return allowed;
}

/** Registers every row as a Hono route served through the stages. */
export function registerRoutes(app: Hono<Env>, table: readonly Route[], pipeline: Pipeline): void {
  for (const route of table) app.on(route.method, route.path, (c) => serve(route, c.req.raw, requestOf(c), pipeline));
}

/** Serves a request with the row its method and path name, or the 404/405 problem (what /invocations dispatches through). */
export function dispatcher(table: readonly Route[], allowed: ReadonlyMap<string, string[]>, pipeline: Pipeline) {
  return (request: Request, state: RequestState): Promise<Response> | Response => {
    const path = new URL(request.url).pathname;
    const route = table.find((r) => r.method === request.method && r.path === path);
    return route ? serve(route, request, state, pipeline) : pipeline.fail(request, unrouted(request.method, path, allowed));
  };
}

/** 405 with Allow for a known path, 404 otherwise. */
function unrouted(method: string, path: string, allowed: ReadonlyMap<string, string[]>): Problem {
  const methods = allowed.get(path);
  if (methods) return problem('methodNotAllowed', `${method} is not allowed on ${path}; use ${methods.join(' or ')}`, { allow: methods.join(', ') });
  return problem('notFound', `no route at ${path.slice(0, 200)}; the embeddings endpoint is POST /v1/embeddings`);
}

/** Unmatched requests get unrouted's problem; a thrown error is a 500 problem, reported. */
export function registerFallbacks(app: Hono<Env>, allowed: ReadonlyMap<string, string[]>, fail: Pipeline['fail'], onUnexpectedError?: (error: unknown) => void): void {
  app.notFound((c) => fail(c.req.raw, unrouted(c.req.method, c.req.path, allowed)));
  app.onError((error, c) => {
    (onUnexpectedError ?? ((e) => console.error('lexembed: unexpected error:', e)))(error);
    return fail(c.req.raw, problem('internal', 'an unexpected error occurred while processing the request; retry, and report it if it persists'));
  });
}

function serve(route: Route, request: Request, state: RequestState, pipeline: Pipeline): Promise<Response> {
  return isOperationRoute(route) ? serveOperation(route, request, state, pipeline) : serveHandler(route, request, state, pipeline);
}

/** auth → handler → response. */
async function serveHandler(route: HandlerRoute, request: Request, state: RequestState, pipeline: Pipeline): Promise<Response> {
  const principal = await authenticated(route, request, pipeline);
  if (!principal.ok) return pipeline.fail(request, principal.problem);
  const outcome = await route.handler(request, state);
  if (outcome instanceof Response) return outcome;
  if (!outcome.ok) return pipeline.fail(request, outcome.problem);
  return respond(outcome.value, state, null, {});
}

/** auth → model → lease → body → operation → response → settle. */
async function serveOperation(route: OperationRoute, request: Request, state: RequestState, pipeline: Pipeline): Promise<Response> {
  const principal = await authenticated(route, request, pipeline);
  if (!principal.ok) return pipeline.fail(request, principal.problem);
  const model = await pipeline.state.model();
  if (!model.ok) return pipeline.fail(request, model.problem);
  const embedder = model.value;
  if (route.requires && !embedder[route.requires]) return pipeline.fail(request, NOT_SERVED[route.requires](embedder));
  const usage = principal.value && route.meter && pipeline.usage ? pipeline.usage.open(principal.value, route.meter) : undefined;
  const opened = await openLease({ usage, queue: embedder.runtime.reserve, tokens: declaredTokens(route, request, embedder, pipeline.maxBodyBytes) });
  if (!opened.ok) return pipeline.fail(request, opened.problem);
  const lease = opened.value;
  let inputTokens: number | null = null;
  try {
    const body = route.body ? await readJsonBody(request, pipeline.maxBodyBytes) : ({ ok: true, value: undefined } as const);
    if (!body.ok) return pipeline.fail(request, body.problem);
    const outcome = await route.run(body.value, embedder, { signal: request.signal, lease });
    if (!outcome.ok) return pipeline.fail(request, outcome.problem);
    inputTokens = outcome.value.inputTokens ?? 0;
    return respond(outcome.value, state, embedder, lease.headers());
  } finally {
    // Recorded before the answer leaves (a shared store then loses no count if this process dies).
    await lease.settle(inputTokens);
  }
}

/**
 * Tokens to hold queue room for before the body is read, from its declared size (a full server
 * refuses in milliseconds, without reading it); null without a usable Content-Length: the embedder
 * then holds room for its estimate of the texts.
 */
function declaredTokens(route: OperationRoute, request: Request, embedder: Embedder, maxBodyBytes: number): number | null {
  if (!route.body) return null;
  const declared = Number(request.headers.get('content-length') ?? NaN);
  return Number.isFinite(declared) && declared <= maxBodyBytes ? embedder.runtime.tokensOfBody(declared, route.maxTexts) : null;
}

/** The key's principal where the row names a resource and keys are on; null otherwise; a refusal as a problem. */
async function authenticated(route: Route, request: Request, pipeline: Pipeline): Promise<{ ok: true; value: Principal | null } | { ok: false; problem: Problem }> {
  if (!route.resource) return { ok: true, value: null };
  const decision = await pipeline.authenticate({ authorization: request.headers.get('authorization'), resource: route.resource });
  if (decision && isRefusal(decision)) return { ok: false, problem: route.unserved ? unservedRefusal(decision, route) : decision };
  return { ok: true, value: decision };
}

/**
 * The answer: the value as JSON (vectors as float32, the shortest decimal per component that reads
 * back to it, straight to bytes), every header in one plain object, the request id and CORP
 * included: the Node adapter writes such a response without building a Headers object (measured:
 * undici's Headers took 5-6 % of the server thread on short requests); the middleware then adds nothing.
 */
function respond(answer: Answer<unknown>, state: RequestState, embedder: Embedder | null, rateLimits: Record<string, string>): Response {
  state.inputTokens = answer.inputTokens;
  const headers: Record<string, string> = { 'content-type': 'application/json', [REQUEST_ID_HEADER]: state.id, ...COMMON_HEADERS };
  if (embedder) {
    const { model_id, fingerprint } = modelIdentity(embedder);
    if (model_id) headers[MODEL_ID_HEADER] = model_id;
    if (fingerprint) headers[FINGERPRINT_HEADER] = fingerprint;
  }
  Object.assign(headers, rateLimits);
  state.headersWritten = true;
  return new Response(float32JsonBytes(answer.body), { status: 200, headers });
}

/** A key refused for a route this deployment does not serve: no key would get an answer there, so the detail must not advise making one. */
function unservedRefusal(refusal: Problem, route: Route): Problem {
  if (refusal.code !== 'unauthorizedKey' || !refusal.detail) return refusal;
  const reason = refusal.detail.replace(/; create a key with .*$/, '');
  return { ...refusal, detail: `${reason}; but this deployment does not serve ${route.method} ${route.path} (embedding model only), so no key gets an answer there` };
}
