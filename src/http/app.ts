// The lexembed HTTP app (Hono): one route table, authentication before validation, every
// failure answered as a problem through problemResponse().
import { Hono, type Context } from 'hono';
import { cors } from 'hono/cors';
import {
  buildEmbeddingResponse,
  buildOpenAIEmbeddingResponse,
  DEFAULT_MODEL_NAME,
  MAX_OPENAI_INPUTS,
  MAX_TEXTS_PER_REQUEST,
  OPENAI_PREFIX,
  openAIModelIds,
  pathSpellingDetail,
  pathSpellingFault,
  problem,
  textsOf,
  validateEmbeddingRequest,
  validateOpenAIEmbeddingRequest,
  validateTokenizeRequest,
  type Problem,
} from '../contract/index.ts';
import { answerRerankRequest, rerankNotServed } from '../embedder/rerank-request.ts';
import type { Embedder } from '../embedder/types.ts';
import { renderDocsPage } from './docs-page.ts';
import { renderErrorsPage } from './errors-page.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { openAIErrorResponse, problemResponse } from './problem-response.ts';
import { RAW_TARGET } from './raw-target.ts';
import { readJsonBody } from './read-body.ts';
import { createInvocationsHandler, innerCallOf } from './invocations.ts';
import type { Route } from './routes.ts';

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
export { RAW_TARGET } from './raw-target.ts';
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
  // The OpenAI-compatible routes answer in OpenAI's error shape, everything else with problem details.
  const fail = (c: Context<Env>, p: Problem) => (c.req.path.startsWith(`${OPENAI_PREFIX}/`) ? openAIErrorResponse(p) : problemResponse(p, docsUrlOf(c)));
  const app = new Hono<Env>();

  // Request id, structured log and metrics, once per request (an /invocations inner call only
  // reports its token count back to the outer request, which logs it).
  app.use(async (c, next) => {
    const inner = innerCallOf(c);
    const given = c.req.header('x-request-id');
    const requestId = given && REQUEST_ID.test(given) ? given : crypto.randomUUID();
    c.set('requestId', requestId);
    const started = performance.now();
    await next();
    c.res.headers.set('x-request-id', requestId);
    if (inner) {
      inner.inputTokens = c.get('inputTokens') ?? null;
      return;
    }
    const route = c.req.routePath && c.req.routePath !== '/*' && allowed.has(c.req.routePath) ? c.req.routePath : 'unmatched';
    const seconds = (performance.now() - started) / 1000;
    const inputTokens = c.get('inputTokens') ?? null;
    options.metrics?.observeRequest({ route, method: c.req.method, status: c.res.status, seconds, inputTokens });
    options.log?.({ msg: 'request', request_id: requestId, method: c.req.method, route, status: c.res.status, latency_ms: +(seconds * 1000).toFixed(2), input_tokens: inputTokens });
  });
  // One spelling per route (contract/paths.ts): anything else is no route, before authentication.
  app.use(async (c, next) => {
    const raw = (c.env as Record<string, unknown> | undefined)?.[RAW_TARGET];
    const target = typeof raw === 'string' && raw.startsWith('/') ? raw : new URL(c.req.url).pathname;
    const fault = pathSpellingFault(target);
    if (fault) return fail(c, problem('notFound', pathSpellingDetail(target, fault)));
    await next();
  });
  if (options.corsOrigins?.length) {
    const origins = [...options.corsOrigins];
    app.use(cors({ origin: origins.includes('*') ? '*' : origins, allowHeaders: ['authorization', 'content-type', 'x-request-id'], exposeHeaders: ['x-request-id', 'retry-after'], maxAge: 600 }));
  }

  const BODY_PROBLEMS = ['requestTooLarge', 'internal', 'unavailable'] as const;
  const table: Route<Env>[] = [
    {
      method: 'POST',
      path: '/v1/embeddings',
      operationId: 'createEmbeddings',
      summary: 'Vectorize one text or several texts',
      tags: ['embeddings'],
      resource: 'embeddings',
      body: 'EmbeddingRequest',
      ok: { description: 'One embedding per input text, with its index', json: 'EmbeddingResponse' },
      problems: ['validation', 'inputTooLarge', 'unsupportedDimension', 'unsupportedTask', ...BODY_PROBLEMS],
      operation: true,
      async handler(c) {
        const loadedModel = await model();
        if (!loadedModel.ok) return fail(c, loadedModel.problem);
        const embedder = loadedModel.value;
        const full = refusedBySize(c, embedder, MAX_TEXTS_PER_REQUEST);
        if (full) return fail(c, full);
        const body = await readJsonBody(c.req.raw, maxBodyBytes);
        if (!body.ok) return fail(c, body.problem);
        const request = validateEmbeddingRequest(body.value, embedder);
        if (!request.ok) return fail(c, request.problem);
        const { task, overflow_strategy, dimensions } = request.value;
        const result = await embedder.embed({ texts: textsOf(request.value), task, overflowStrategy: overflow_strategy, dimensions }, { signal: c.req.raw.signal });
        if (!result.ok) return fail(c, result.problem);
        c.set('inputTokens', result.value.inputTokens);
        return c.json(buildEmbeddingResponse(result.value.vectors, result.value.inputTokens));
      },
    },
    {
      method: 'POST',
      path: '/v1/rerankings',
      operationId: 'createRerankings',
      summary: 'Rank texts by relevance to a query (embedding similarity and BM25 over the request, per chunk, calibrated to 0–1)',
      tags: ['rerankings'],
      resource: 'rerankings',
      body: 'RerankRequest',
      ok: { description: 'The texts by score, highest first, with their indices', json: 'RerankResponse' },
      problems: ['validation', ...BODY_PROBLEMS],
      operation: true,
      requires: 'reranker',
      async handler(c) {
        const loadedModel = await model();
        if (!loadedModel.ok) return fail(c, loadedModel.problem);
        const embedder = loadedModel.value;
        // Without a reranker the route is not served: say so before reading the body.
        if (!embedder.reranker) return fail(c, rerankNotServed(embedder));
        const full = refusedBySize(c, embedder, null);
        if (full) return fail(c, full);
        const body = await readJsonBody(c.req.raw, maxBodyBytes);
        if (!body.ok) return fail(c, body.problem);
        const result = await answerRerankRequest(embedder, body.value, { signal: c.req.raw.signal });
        if (!result.ok) return fail(c, result.problem);
        c.set('inputTokens', result.value.usage.input_tokens);
        return c.json(result.value);
      },
    },
    {
      method: 'POST',
      path: '/v1/tokenize',
      operationId: 'createTokenization',
      summary: 'Token counts of texts as /v1/embeddings reads them (an extension), optionally each token with its character offsets; runs no model',
      tags: ['embeddings'],
      resource: 'embeddings',
      body: 'TokenizeRequest',
      ok: { description: 'Per text: its input tokens, and with return_offsets its tokens and offsets', json: 'TokenizeResponse' },
      problems: ['validation', 'unsupportedTask', ...BODY_PROBLEMS],
      operation: true,
      async handler(c) {
        const loadedModel = await model();
        if (!loadedModel.ok) return fail(c, loadedModel.problem);
        const embedder = loadedModel.value;
        const body = await readJsonBody(c.req.raw, maxBodyBytes);
        if (!body.ok) return fail(c, body.problem);
        const request = validateTokenizeRequest(body.value, embedder);
        if (!request.ok) return fail(c, request.problem);
        const results = embedder.tokenize(request.value.texts, { task: request.value.task, offsets: request.value.return_offsets });
        return c.json({ results, max_input_tokens: embedder.settings.max_input_tokens });
      },
    },
    ...OTHER_OPERATIONS.map(({ path, resource }) => notServed(path, resource)),
    {
      method: 'POST',
      path: `${OPENAI_PREFIX}/embeddings`,
      operationId: 'createOpenAIEmbeddings',
      summary: 'OpenAI-compatible embeddings (for the openai client, LangChain, the AI SDK…); errors in OpenAI\'s shape',
      tags: ['openai'],
      resource: 'embeddings',
      body: 'OpenAIEmbeddingRequest',
      ok: { description: 'One embedding per input, with its index, as floats or base64 float32', json: 'OpenAIEmbeddingResponse' },
      problems: ['validation', 'unsupportedDimension', 'unsupportedTask', ...BODY_PROBLEMS],
      operation: true,
      errors: 'openai',
      async handler(c) {
        const loadedModel = await model();
        if (!loadedModel.ok) return fail(c, loadedModel.problem);
        const embedder = loadedModel.value;
        const full = refusedBySize(c, embedder, MAX_OPENAI_INPUTS);
        if (full) return fail(c, full);
        const body = await readJsonBody(c.req.raw, maxBodyBytes);
        if (!body.ok) return fail(c, { ...body.problem, param: null });
        const call = validateOpenAIEmbeddingRequest(body.value, embedder);
        if (!call.ok) return fail(c, call.problem);
        const { texts, task, dimensions } = call.value;
        const result = await embedder.embed({ texts, task, overflowStrategy: 'drop_end', dimensions }, { signal: c.req.raw.signal });
        if (!result.ok) return fail(c, result.problem);
        c.set('inputTokens', result.value.inputTokens);
        return c.json(buildOpenAIEmbeddingResponse(result.value.vectors, result.value.inputTokens, call.value));
      },
    },
    {
      method: 'GET',
      path: `${OPENAI_PREFIX}/models`,
      operationId: 'listOpenAIModels',
      summary: 'OpenAI-compatible model list: the served model and its task aliases',
      tags: ['openai'],
      resource: 'embeddings',
      ok: { description: 'The models', json: 'OpenAIModelList' },
      problems: ['unavailable'],
      operation: true,
      errors: 'openai',
      async handler(c) {
        const loadedModel = await model();
        if (!loadedModel.ok) return fail(c, loadedModel.problem);
        const data = openAIModelIds(loadedModel.value.modelName).map((id) => ({ id, object: 'model' as const, created: 0, owned_by: 'lexembed' }));
        return c.json({ object: 'list', data });
      },
    },
    {
      method: 'GET',
      path: '/health',
      operationId: 'health',
      summary: 'Readiness: 200 once the model is loaded',
      ok: {
        description: 'Ready',
        media: 'application/json',
        schema: { type: 'object', properties: { status: { const: 'ok' }, model: { type: 'string' }, backend: { type: 'string' } }, required: ['status'] },
      },
      problems: ['unavailable'],
      handler(c) {
        if (loaded) return c.json({ status: 'ok', model: loaded.modelName, backend: loaded.backendName });
        const detail = loadError ? 'the model failed to load; see the server log' : 'the model is loading; retry shortly';
        return fail(c, problem('unavailable', detail, { 'retry-after': '1' }));
      },
    },
    ...(proxyMode
      ? ([
          {
            method: 'GET',
            path: '/ping',
            operationId: 'ping',
            summary: 'Container health: 200 once the model is loaded, 503 before',
            ok: { description: 'Ready' },
            responses: { '503': { description: 'Loading' } },
            handler: (c) => (loaded ? c.json({ status: 'ok' }) : c.json({ status: loadError ? 'failed' : 'loading' }, 503)),
          },
          {
            // Registered only in proxy mode, where no route needs a key: it cannot bypass authentication.
            method: 'POST',
            path: '/invocations',
            operationId: 'invoke',
            summary: 'Proxy endpoint of private deployments: answers exactly what the named route answers',
            body: 'InvocationRequest',
            ok: { description: "The proxied route's response", json: 'EmbeddingResponse' },
            problems: ['validation', 'inputTooLarge', 'unsupportedDimension', 'unsupportedTask', ...BODY_PROBLEMS],
            operation: true,
            handler: createInvocationsHandler({ dispatch: (request, env) => app.fetch(request, env), maxBodyBytes, fail }),
          },
        ] satisfies Route<Env>[])
      : []),
    { method: 'GET', path: '/openapi.json', operationId: 'openapi', summary: 'This document', ok: { description: 'OpenAPI 3.1 document', media: 'application/json', schema: { type: 'object' } }, handler: async (c) => c.json(await openApi()) },
    { method: 'GET', path: '/docs', operationId: 'docs', summary: 'API reference page', ok: { description: 'HTML page', media: 'text/html' }, handler: async (c) => c.html(renderDocsPage(await openApi(), '/docs/api-reference/errors')) },
    {
      method: 'GET',
      path: '/docs/api-reference/errors',
      operationId: 'errors',
      summary: 'The errors page every problem type links to',
      ok: { description: 'HTML page', media: 'text/html' },
      handler: (c) => c.html(renderErrorsPage()),
    },
    ...(options.metrics
      ? [
          {
            method: 'GET',
            path: '/metrics',
            operationId: 'metrics',
            summary: 'Prometheus metrics',
            ok: { description: 'Prometheus text exposition format', media: 'text/plain' },
            async handler(c) {
              const { contentType, body } = await options.metrics!.render();
              return c.body(body, 200, { 'content-type': contentType });
            },
          } satisfies Route<Env>,
        ]
      : []),
  ];

  /**
   * At saturation, the 503 a request gets from its declared size alone, before its body is read:
   * refusing after parsing megabytes would spend the CPU the model needs. A body over the size
   * limit is left to the 413.
   */
  function refusedBySize(c: Context<Env>, embedder: Embedder, maxTexts: number | null): Problem | null {
    const declared = Number(c.req.header('content-length') ?? NaN);
    if (!Number.isFinite(declared) || declared > maxBodyBytes) return null;
    return embedder.refusalBySize?.(declared, maxTexts) ?? null;
  }

  /** A route of the API this deployment does not serve: authenticated like every operation, then a 404. */
  function notServed(path: string, resource: Resource): Route<Env> {
    const operationId = path.replace(/^\/v1\//, '').replace(/\W+(\w)/g, (_, ch: string) => ch.toUpperCase());
    return {
      method: 'POST',
      path,
      operationId,
      summary: 'Part of the API, not served by this deployment: authenticated, then 404',
      resource,
      operation: true,
      handler: (c) => fail(c, problem('notFound', `POST ${path} is part of the API, but this deployment does not serve it (embedding model only); use POST /v1/embeddings`)),
    };
  }

  // The table drives the Hono routes: authentication first wherever a resource is named.
  const allowed = new Map<string, string[]>();
  for (const r of table) {
    allowed.set(r.path, [...(allowed.get(r.path) ?? []), r.method]);
    app.on(r.method, r.path, async (c) => {
      if (r.resource) {
        const refused = await authenticate({ authorization: c.req.header('authorization') ?? null, resource: r.resource });
        if (refused) return fail(c, refused);
      }
      return r.handler(c);
    });
  }

  // …and /openapi.json, from the same rows (a route the loaded model cannot serve is documented as
  // such), built once the model has loaded or failed: it cannot change after that.
  let openApiDoc: Promise<ReturnType<typeof buildOpenApiDocument>> | undefined;
  const openApi = () => (openApiDoc ??= buildDocument());
  const buildDocument = async () => {
    const embedder = await embedderPromise.catch(() => undefined); // a failed model still has its document
    return buildOpenApiDocument({
      modelName: embedder?.modelName ?? DEFAULT_MODEL_NAME,
      rerankModelName: embedder?.reranker?.rerankModelName ?? null,
      docsUrl,
      authenticated: !proxyMode && options.authenticate !== undefined,
      routes: table.map((r) => (r.requires === 'reranker' && !embedder?.reranker ? notServed(r.path, r.resource!) : r)),
    });
  };

  app.notFound((c) => {
    const methods = allowed.get(c.req.path);
    if (methods) {
      return fail(c, problem('methodNotAllowed', `${c.req.method} is not allowed on ${c.req.path}; use ${methods.join(' or ')}`, { allow: methods.join(', ') }));
    }
    return fail(c, problem('notFound', `no route at ${c.req.path.slice(0, 200)}; the embeddings endpoint is POST /v1/embeddings`));
  });

  app.onError((error, c) => {
    (options.onUnexpectedError ?? ((e) => console.error('lexembed: unexpected error:', e)))(error);
    return fail(c, problem('internal', 'an unexpected error occurred while processing the request; retry, and report it if it persists'));
  });

  return app;
}
