// The lexembed HTTP app (Hono): one route table, authentication before validation, every
// failure answered as a problem through problemResponse().
import { Hono, type Context } from 'hono';
import { cors } from 'hono/cors';
import {
  buildEmbeddingResponse,
  DEFAULT_MODEL_NAME,
  HOP_BY_HOP_HEADERS,
  problem,
  validateInvocationRequest,
  textsOf,
  validateEmbeddingRequest,
  type Problem,
} from '../contract/index.ts';
import { answerRerankRequest, rerankNotServed } from '../embedder/rerank-request.ts';
import type { Embedder } from '../embedder/types.ts';
import { renderDocsPage } from './docs-page.ts';
import { renderErrorsPage } from './errors-page.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { problemResponse } from './problem-response.ts';
import { readJsonBody } from './read-body.ts';

export type { Authenticate, Resource } from '../auth/records.ts';
import type { Authenticate, Resource } from '../auth/records.ts';

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
}

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

export type Env = { Variables: { requestId: string; inputTokens: number } };
const REQUEST_ID = /^[\w.:@-]{1,128}$/;

export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;

/** Operations of the API this deployment does not serve: authenticated like every operation, then a 404. */
const OTHER_OPERATIONS: readonly { path: string; resource: Resource }[] = [
  { path: '/v1/enrichments', resource: 'enrichments' },
  { path: '/v1/extractions/qa', resource: 'extractions' },
  { path: '/v1/classifications/universal', resource: 'classifications' },
];

/**
 * Builds the app. Adapters (Node, edge) only hand it requests.
 * @example const app = createApp({ embedder: await loadModelFolder(dir) }); await app.request('/health')
 */
export function createApp(options: AppOptions): Hono<Env> {
  // Without a configured docs URL, problem types are absolute on the request's own origin, so they
  // resolve wherever the server is reached (behind a platform too); the OpenAPI document keeps '/docs'.
  const docsUrl = options.docsUrl ?? '/docs';
  const docsUrlOf = (c: Context<Env>) => options.docsUrl ?? new URL('/docs', c.req.url).href;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const proxyMode = options.deployment === 'proxy';
  // Proxy deployments need no key, and one that is passed is ignored (spec 4.3 rule 2).
  const authenticate: Authenticate = proxyMode ? () => null : (options.authenticate ?? (() => null));
  let loaded: Embedder | undefined;
  let loadError: unknown;
  const embedderPromise = Promise.resolve(options.embedder).then(
    (e) => (loaded = e),
    (error) => {
      loadError = error;
      throw error;
    },
  );
  embedderPromise.catch(() => {});
  /** The model, or a 503 saying it failed to load (a permanent state: the log says why). */
  const model = (): Promise<{ ok: true; value: Embedder } | { ok: false; problem: Problem }> =>
    embedderPromise.then(
      (value) => ({ ok: true, value }),
      () => ({ ok: false, problem: problem('unavailable', 'the model failed to load, so this server cannot answer; the server log says why (fix the model folder, then restart)') }),
    );
  const fail = (c: Context<Env>, p: Problem) => problemResponse(p, docsUrlOf(c));
  const refusal = (c: Context<Env>, resource: Resource) => authenticate({ authorization: c.req.header('authorization') ?? null, resource });
  const routes = new Map<string, string[]>();
  const app = new Hono<Env>();
  const innerRequests = new WeakSet<Request>();

  // Request id, structured log and metrics, once per request (not again for /invocations' inner call).
  app.use(async (c, next) => {
    const inner = innerRequests.has(c.req.raw);
    const given = c.req.header('x-request-id');
    const requestId = given && REQUEST_ID.test(given) ? given : crypto.randomUUID();
    c.set('requestId', requestId);
    const started = performance.now();
    await next();
    c.res.headers.set('x-request-id', requestId);
    if (inner) {
      // Hand the token count to the outer /invocations request, which logs it (and strips this).
      const tokens = c.get('inputTokens');
      if (tokens) c.res.headers.set('x-lexembed-input-tokens', String(tokens));
      return;
    }
    const route = c.req.routePath && c.req.routePath !== '/*' && routes.has(c.req.routePath) ? c.req.routePath : 'unmatched';
    const seconds = (performance.now() - started) / 1000;
    const inputTokens = c.get('inputTokens') ?? null;
    options.metrics?.observeRequest({ route, method: c.req.method, status: c.res.status, seconds, inputTokens });
    options.log?.({ msg: 'request', request_id: requestId, method: c.req.method, route, status: c.res.status, latency_ms: +(seconds * 1000).toFixed(2), input_tokens: inputTokens });
  });
  if (options.corsOrigins?.length) {
    const origins = [...options.corsOrigins];
    app.use(cors({ origin: origins.includes('*') ? '*' : origins, allowHeaders: ['authorization', 'content-type', 'x-request-id'], exposeHeaders: ['x-request-id', 'retry-after'], maxAge: 600 }));
  }

  const route = (method: 'GET' | 'POST', path: string, handler: (c: Context<Env>) => Promise<Response> | Response) => {
    routes.set(path, [...(routes.get(path) ?? []), method]);
    app.on(method, path, handler);
  };

  route('POST', '/v1/embeddings', async (c) => {
    const refused = await refusal(c, 'embeddings');
    if (refused) return fail(c, refused);
    const body = await readJsonBody(c.req.raw, maxBodyBytes);
    if (!body.ok) return fail(c, body.problem);
    const loadedModel = await model();
    if (!loadedModel.ok) return fail(c, loadedModel.problem);
    const embedder = loadedModel.value;
    const request = validateEmbeddingRequest(body.value, embedder);
    if (!request.ok) return fail(c, request.problem);
    const { task, overflow_strategy, dimensions } = request.value;
    const result = await embedder.embed({ texts: textsOf(request.value), task, overflowStrategy: overflow_strategy, dimensions }, { signal: c.req.raw.signal });
    if (!result.ok) return fail(c, result.problem);
    c.set('inputTokens', result.value.inputTokens);
    return c.json(buildEmbeddingResponse(result.value.vectors, result.value.inputTokens));
  });

  route('POST', '/v1/rerankings', async (c) => {
    const refused = await refusal(c, 'rerankings');
    if (refused) return fail(c, refused);
    const loadedModel = await model();
    if (!loadedModel.ok) return fail(c, loadedModel.problem);
    const embedder = loadedModel.value;
    // Without a reranker the route is not served: say so before reading the body.
    if (!embedder.reranker) return fail(c, rerankNotServed(embedder));
    const body = await readJsonBody(c.req.raw, maxBodyBytes);
    if (!body.ok) return fail(c, body.problem);
    const result = await answerRerankRequest(embedder, body.value, { signal: c.req.raw.signal });
    if (!result.ok) return fail(c, result.problem);
    c.set('inputTokens', result.value.usage.input_tokens);
    return c.json(result.value);
  });

  for (const { path, resource } of OTHER_OPERATIONS) {
    route('POST', path, async (c) => {
      const refused = await refusal(c, resource);
      if (refused) return fail(c, refused);
      return fail(c, problem('notFound', `POST ${path} is part of the API, but this deployment does not serve it (embedding model only); use POST /v1/embeddings`));
    });
  }

  route('GET', '/health', (c) => {
    if (loaded) return c.json({ status: 'ok', model: loaded.modelName, backend: loaded.backendName });
    const detail = loadError ? 'the model failed to load; see the server log' : 'the model is loading; retry shortly';
    return fail(c, problem('unavailable', detail, { 'retry-after': '1' }));
  });

  if (proxyMode) {
    route('GET', '/ping', (c) => (loaded ? c.json({ status: 'ok' }) : c.json({ status: loadError ? 'failed' : 'loading' }, 503)));

    // Dispatches to the same routes in-process and returns their status, type and body as-is.
    // Registered only in proxy mode, where no route needs a key: it cannot bypass authentication.
    route('POST', '/invocations', async (c) => {
      const body = await readJsonBody(c.req.raw, maxBodyBytes);
      if (!body.ok) return fail(c, body.problem);
      const invocation = validateInvocationRequest(body.value);
      if (!invocation.ok) return fail(c, invocation.problem);
      const { path, method, headers, data } = invocation.value;
      const forwarded = new Headers();
      for (const [name, value] of Object.entries(headers ?? {})) {
        if (!(HOP_BY_HOP_HEADERS as readonly string[]).includes(name.toLowerCase())) forwarded.set(name, value);
      }
      const hasBody = data !== null && method !== 'GET' && method !== 'HEAD';
      if (hasBody && !forwarded.has('content-type')) forwarded.set('content-type', 'application/json');
      forwarded.set('x-request-id', c.get('requestId'));
      // On the outer request's origin, so problem types in the answer resolve where the caller is.
      const innerRequest = new Request(new URL(path, c.req.url), { method, headers: forwarded, body: hasBody ? JSON.stringify(data) : undefined, signal: c.req.raw.signal });
      innerRequests.add(innerRequest);
      const inner = await app.fetch(innerRequest);
      const tokens = inner.headers.get('x-lexembed-input-tokens');
      const responseHeaders = new Headers(inner.headers);
      for (const name of HOP_BY_HOP_HEADERS) responseHeaders.delete(name);
      responseHeaders.delete('x-lexembed-input-tokens');
      if (tokens) c.set('inputTokens', Number(tokens));
      return new Response(inner.body, { status: inner.status, headers: responseHeaders });
    });
  }

  const openApi = async () => {
    const embedder = await embedderPromise.catch(() => undefined); // a failed model still has its document
    return buildOpenApiDocument({
      modelName: embedder?.modelName ?? DEFAULT_MODEL_NAME,
      rerankModelName: embedder?.reranker?.rerankModelName ?? null,
      docsUrl,
      deployment: proxyMode ? 'proxy' : 'api',
      authenticated: !proxyMode && options.authenticate !== undefined,
      metrics: options.metrics !== undefined,
      otherOperations: [...OTHER_OPERATIONS.map((o) => o.path), ...(embedder?.reranker ? [] : ['/v1/rerankings'])],
    });
  };
  route('GET', '/openapi.json', async (c) => c.json(await openApi()));
  route('GET', '/docs', async (c) => c.html(renderDocsPage(await openApi(), '/docs/api-reference/errors')));
  route('GET', '/docs/api-reference/errors', (c) => c.html(renderErrorsPage()));
  if (options.metrics) {
    const metrics = options.metrics;
    route('GET', '/metrics', async (c) => {
      const { contentType, body } = await metrics.render();
      return c.body(body, 200, { 'content-type': contentType });
    });
  }

  app.notFound((c) => {
    const allowed = routes.get(c.req.path);
    if (allowed) {
      return fail(c, problem('methodNotAllowed', `${c.req.method} is not allowed on ${c.req.path}; use ${allowed.join(' or ')}`, { allow: allowed.join(', ') }));
    }
    return fail(c, problem('notFound', `no route at ${c.req.path.slice(0, 200)}; the embeddings endpoint is POST /v1/embeddings`));
  });

  app.onError((error, c) => {
    (options.onUnexpectedError ?? ((e) => console.error('lexembed: unexpected error:', e)))(error);
    return fail(c, problem('internal', 'an unexpected error occurred while processing the request; retry, and report it if it persists'));
  });

  return app;
}
