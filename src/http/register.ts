// Registration apart from the rows (the rows are data in route-table.ts; this file turns them into
// Hono routes): each row becomes a Hono route that authenticates first wherever the row names a
// resource, meters it where the row names what it counts as, runs the handler, and serialises
// its outcome here, once: a value as JSON, a problem in the route's error shape.
import type { Context, Hono } from 'hono';
import { float32JsonBytes, problem, type Problem } from '../contract/index.ts';
import { isRefusal, type Authenticate } from '../auth/records.ts';
import type { Meter, Ticket } from '../usage/meter.ts';
import type { ModelState } from './model-state.ts';
import { REQUEST_ID_HEADER } from './observe.ts';
import { requestOf, type Env } from './request-state.ts';
import { FINGERPRINT_HEADER, MODEL_ID_HEADER, modelIdentity } from './route-table.ts';
import type { Route } from './routes.ts';

/** Headers every answer carries (opaque cross-origin reads allowed: see installMiddleware in app.ts). */
export const COMMON_HEADERS = { 'cross-origin-resource-policy': 'cross-origin' } as const;

export interface Registration {
  readonly authenticate: Authenticate;
  readonly usage?: Meter;
  readonly state: ModelState;
  /** A problem as the request's route answers it (problem details, or OpenAI's error shape). */
  readonly fail: (c: Context<Env>, p: Problem) => Response;
}

/** Registers every row; returns the methods served per path (for 405s and the request log). */
export function registerRoutes(app: Hono<Env>, table: readonly Route<Env>[], registration: Registration): Map<string, string[]> {
  const allowed = new Map<string, string[]>();
  for (const route of table) {
    allowed.set(route.path, [...(allowed.get(route.path) ?? []), route.method]);
    app.on(route.method, route.path, (c) => serve(route, c, registration));
  }
  return allowed;
}

async function serve(route: Route<Env>, c: Context<Env>, { authenticate, usage, state, fail }: Registration): Promise<Response> {
  const request = requestOf(c);
  let ticket: Ticket | undefined;
  if (route.resource) {
    const decision = await authenticate({ authorization: c.req.header('authorization') ?? null, resource: route.resource });
    if (decision && isRefusal(decision)) return fail(c, route.unserved ? unservedRefusal(decision, route) : decision);
    if (decision && route.meter && usage) {
      ticket = usage.open(decision, route.meter);
      const limited = await ticket.admit();
      if (limited) return fail(c, limited);
      request.ticket = ticket;
    }
  }
  let inputTokens: number | null = null;
  try {
    const outcome = await route.handler(c);
    if (outcome instanceof Response) return outcome;
    if (!outcome.ok) return fail(c, outcome.problem);
    inputTokens = outcome.value.inputTokens ?? 0;
    request.inputTokens = outcome.value.inputTokens;
    // Every header of the answer in one plain object, the request id and CORP included: the Node
    // adapter writes such a response without building a Headers object (measured: undici's Headers
    // took 5-6 % of the server thread on short requests); the middleware then adds nothing.
    const headers: Record<string, string> = { 'content-type': 'application/json', [REQUEST_ID_HEADER]: request.id, ...COMMON_HEADERS };
    const loaded = route.operation ? state.loaded() : null;
    if (loaded) {
      const { model_id, fingerprint } = modelIdentity(loaded);
      if (model_id) headers[MODEL_ID_HEADER] = model_id;
      if (fingerprint) headers[FINGERPRINT_HEADER] = fingerprint;
    }
    Object.assign(headers, ticket?.headers());
    request.headersWritten = true;
    // Vectors as float32 (the shortest decimal per component that reads back to it), straight to bytes.
    return new Response(float32JsonBytes(outcome.value.body), { status: 200, headers });
  } finally {
    // Recorded before the answer leaves (a shared store then loses no count if this process dies).
    await ticket?.settle(inputTokens);
  }
}

/** 405 with Allow for a known path, 404 otherwise; a thrown error is a 500 problem, reported. */
export function registerFallbacks(app: Hono<Env>, allowed: ReadonlyMap<string, string[]>, fail: Registration['fail'], onUnexpectedError?: (error: unknown) => void): void {
  app.notFound((c) => {
    const methods = allowed.get(c.req.path);
    if (methods) {
      return fail(c, problem('methodNotAllowed', `${c.req.method} is not allowed on ${c.req.path}; use ${methods.join(' or ')}`, { allow: methods.join(', ') }));
    }
    return fail(c, problem('notFound', `no route at ${c.req.path.slice(0, 200)}; the embeddings endpoint is POST /v1/embeddings`));
  });
  app.onError((error, c) => {
    (onUnexpectedError ?? ((e) => console.error('lexembed: unexpected error:', e)))(error);
    return fail(c, problem('internal', 'an unexpected error occurred while processing the request; retry, and report it if it persists'));
  });
}

/** A key refused for a route this deployment does not serve: no key would get an answer there, so the detail must not advise making one. */
function unservedRefusal(refusal: Problem, route: Route<Env>): Problem {
  if (refusal.code !== 'unauthorizedKey' || !refusal.detail) return refusal;
  const reason = refusal.detail.replace(/; create a key with .*$/, '');
  return { ...refusal, detail: `${reason}; but this deployment does not serve ${route.method} ${route.path} (embedding model only), so no key gets an answer there` };
}
