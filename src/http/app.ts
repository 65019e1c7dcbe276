// The lexembed HTTP app (Hono): one route table (rows below), authentication before validation,
// operations from src/operations, and one place that turns an outcome into a response: a value
// as JSON, a problem as problem+json (OpenAI's error shape under /openai/v1).
import { Hono } from 'hono';
import { cors } from 'hono/cors';
import { DEFAULT_MODEL_NAME, OPENAI_PREFIX, pathSpellingDetail, pathSpellingFault, problem, type Problem } from '../contract/index.ts';
import type { Embedder } from '../embedder/types.ts';
import { createInvocationsHandler } from './invocations.ts';
import { createModelState } from './model-state.ts';
import type { AppMetrics, RequestLogRecord } from './observe.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { allowedMethods, COMMON_HEADERS, dispatcher, FINGERPRINT_HEADER, MODEL_ID_HEADER, registerFallbacks, registerRoutes, requestOf, trackRequests, type Pipeline } from './pipeline.ts';
import { openAIErrorResponse, problemResponse } from './problem-response.ts';
import { RAW_TARGET } from './raw-target.ts';
import type { Env } from './request-state.ts';
import { documentRoutes, notServed, operationRoutes, probeRoutes, proxyRoutes, searchRoute } from './route-table.ts';
import type { Route } from './routes.ts';
import type { Authenticate } from '../auth/records.ts';
import type { Meter } from '../usage/meter.ts';
import type { Searcher } from '../operations/index.ts';

export type { Authenticate, Resource } from '../auth/records.ts';
export type { AppMetrics, RequestLogRecord } from './observe.ts';
export type { Env } from './request-state.ts';
export { RAW_TARGET } from './raw-target.ts';
export { FINGERPRINT_HEADER, MODEL_ID_HEADER } from './pipeline.ts';

export interface AppOptions {
  /** The embedder, or a promise of it while the model loads. */
  readonly embedder: Embedder | Promise<Embedder>;
  readonly authenticate?: Authenticate;
  /** Base of problem `type` URIs; `/docs` serves the errors page itself. */
  readonly docsUrl?: string;
  readonly maxBodyBytes?: number;
  /** Called with unexpected errors (never with request texts). */
  readonly onUnexpectedError?: (error: unknown) => void;
  /**
   * `api` (default): the public API with authentication. `proxy`: a private deployment as a
   * model-hosting platform expects (spec 4.3): `POST /invocations` and `GET /ping`, no keys.
   */
  readonly deployment?: 'api' | 'proxy';
  /** Request metrics (the Node adapter passes Prometheus); adds GET /metrics. */
  readonly metrics?: AppMetrics;
  /** Receives one structured record per request; never texts, keys or key hashes. */
  readonly log?: (record: RequestLogRecord) => void;
  /** Origins allowed to call from browsers ("*" for any); CORS is off when empty. */
  readonly corsOrigins?: readonly string[];
  /**
   * What GET /readyz checks beside the model (load balancers and Kubernetes send traffic only to a
   * ready replica): whether the server is draining (SIGTERM), and whether the key store answers.
   */
  readonly readiness?: { readonly draining: () => boolean; readonly checkStore?: () => Promise<void> };
  /**
   * Usage metering, rate limits and quotas per key and account (src/usage): every authenticated
   * operation is admitted, charged its input tokens and, when answered 200, recorded.
   */
  readonly usage?: Meter;
  /** A search index (lexembed serve --index): adds POST /v1/search; a promise while it opens. */
  readonly search?: Searcher | Promise<Searcher>;
}

export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;

/**
 * Builds the app from the route table (route-table.ts), each row served through the request
 * pipeline's stages (pipeline.ts). Adapters (Node, edge) only hand it requests.
 * @example const app = createApp({ embedder: await loadModelFolder(dir) }); await app.request('/health')
 */
export function createApp(options: AppOptions): Hono<Env> {
  // Without a configured docs URL, problem types are absolute on the request's own origin, so they
  // resolve wherever the server is reached (behind a platform too); the OpenAPI document keeps '/docs'.
  const docsUrlOf = (request: Request) => options.docsUrl ?? new URL('/docs', request.url).href;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const proxyMode = options.deployment === 'proxy';
  const state = createModelState(options.embedder);
  // The OpenAI-compatible routes answer in OpenAI's error shape, everything else with problem details.
  const fail = (request: Request, p: Problem) =>
    new URL(request.url).pathname.startsWith(`${OPENAI_PREFIX}/`) ? openAIErrorResponse(p) : problemResponse(p, docsUrlOf(request));
  // Proxy deployments need no key, and one that is passed is ignored (spec 4.3 rule 2).
  const authenticate: Authenticate = proxyMode ? () => null : (options.authenticate ?? (() => null));
  const pipeline: Pipeline = { authenticate, usage: proxyMode ? undefined : options.usage, state, maxBodyBytes, fail };
  const table: Route[] = [
    ...operationRoutes(),
    ...(options.search && !proxyMode ? [searchRoute(options.search)] : []),
    ...probeRoutes(state, options.readiness),
    ...(proxyMode ? proxyRoutes(state, createInvocationsHandler({ dispatch: (request, s) => dispatch(request, s), maxBodyBytes, fail })) : []),
    ...documentRoutes(() => (openApiDoc ??= buildDocument()), options.metrics),
  ];
  const allowed = allowedMethods(table);
  const dispatch = dispatcher(table, allowed, pipeline);
  const app = new Hono<Env>();
  installMiddleware(app, options, fail, (path) => allowed.has(path));
  registerRoutes(app, table, pipeline);
  registerFallbacks(app, allowed, fail, options.onUnexpectedError);

  // /openapi.json from the same rows (a route the loaded model cannot serve is documented as
  // such), built once the model has loaded or failed: it cannot change after that.
  let openApiDoc: Promise<ReturnType<typeof buildOpenApiDocument>> | undefined;
  const buildDocument = async () => {
    const embedder = await state.settled(); // a failed model still has its document
    const keyed = !proxyMode && options.authenticate !== undefined;
    return buildOpenApiDocument({
      modelName: embedder?.modelName ?? DEFAULT_MODEL_NAME,
      rerankModelName: embedder?.reranker?.rerankModelName ?? null,
      docsUrl: options.docsUrl ?? '/docs',
      authenticated: keyed,
      metered: keyed && options.usage !== undefined,
      routes: table.map((r) => (r.requires && !embedder?.[r.requires] ? notServed(r.path, r.resource!) : r)),
    });
  };
  return app;
}

/** Per-request observation, the CORP header, the one-spelling-per-route check and CORS. */
function installMiddleware(app: Hono<Env>, options: AppOptions, fail: Pipeline['fail'], isRoute: (path: string) => boolean): void {
  app.use(trackRequests({ metrics: options.metrics, log: options.log, isRoute }));
  // Opaque (no-cors) reads from other origins are allowed, so a cross-origin-isolated page (the
  // demo) can tell "this server refuses my origin (CORS)" from "nothing answers"; they expose nothing.
  app.use(async (c, next) => {
    await next();
    if (!requestOf(c).headersWritten) for (const [name, value] of Object.entries(COMMON_HEADERS)) c.header(name, value);
  });
  // One spelling per route (contract/paths.ts): anything else is no route, before authentication.
  app.use(async (c, next) => {
    const raw = (c.env as Record<string, unknown> | undefined)?.[RAW_TARGET];
    const target = typeof raw === 'string' && raw.startsWith('/') ? raw : new URL(c.req.url).pathname;
    const fault = pathSpellingFault(target);
    if (fault) return fail(c.req.raw, problem('notFound', pathSpellingDetail(target, fault)));
    await next();
  });
  if (options.corsOrigins?.length) {
    const origins = [...options.corsOrigins];
    app.use(cors({ origin: origins.includes('*') ? '*' : origins, allowHeaders: ['authorization', 'content-type', 'x-request-id'], exposeHeaders: ['x-request-id', 'retry-after', MODEL_ID_HEADER, FINGERPRINT_HEADER], maxAge: 600 }));
  }
}
