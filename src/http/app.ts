// The lexembed HTTP app (Hono): one route table (rows below), authentication before validation,
// operations from src/operations, and one place that turns an outcome into a response: a value
// as JSON, a problem as problem+json (OpenAI's error shape under /openai/v1).
import { Hono, type Context } from 'hono';
import { cors } from 'hono/cors';
import { DEFAULT_MODEL_NAME, MAX_OPENAI_INPUTS, MAX_TEXTS_PER_REQUEST, OPENAI_PREFIX, pathSpellingDetail, pathSpellingFault, problem, type Problem } from '../contract/index.ts';
import type { EmbedOptions, Embedder } from '../embedder/types.ts';
import { createEmbeddings, createOpenAIEmbeddings, createRerankings, createTokenization, listOpenAIModels, rerankNotServed, type Outcome } from '../operations/index.ts';
import { renderDocsPage } from './docs-page.ts';
import { renderErrorsPage } from './errors-page.ts';
import { createInvocationsHandler } from './invocations.ts';
import { createModelState } from './model-state.ts';
import { observeRequests, type AppMetrics, type Env, type RequestLogRecord } from './observe.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { openAIErrorResponse, problemResponse } from './problem-response.ts';
import { RAW_TARGET } from './raw-target.ts';
import { readJsonBody } from './read-body.ts';
import type { Route } from './routes.ts';
import { isRefusal, type Authenticate, type Resource } from '../auth/records.ts';
import type { Meter, Ticket } from '../usage/meter.ts';

export type { Authenticate, Resource } from '../auth/records.ts';
export type { AppMetrics, Env, RequestLogRecord } from './observe.ts';
export { RAW_TARGET } from './raw-target.ts';

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
}

/** How long /readyz waits for the key store before calling it unreachable. */
const STORE_CHECK_MS = 1_000;

export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;

/** Operations of the API this deployment does not serve: authenticated like every operation, then a 404. */
const OTHER_OPERATIONS: readonly { path: string; resource: Resource }[] = [
  { path: '/v1/enrichments', resource: 'enrichments' },
  { path: '/v1/extractions/qa', resource: 'extractions' },
  { path: '/v1/classifications/universal', resource: 'classifications' },
];

const BODY_PROBLEMS = ['requestTooLarge', 'internal', 'unavailable'] as const;

/** An operation over a decoded body (src/operations), as a route runs it. */
type Operation = (body: unknown, embedder: Embedder, options: EmbedOptions) => Promise<Outcome<unknown>>;

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
  const state = createModelState(options.embedder);
  // The OpenAI-compatible routes answer in OpenAI's error shape, everything else with problem details.
  const fail = (c: Context<Env>, p: Problem) => (c.req.path.startsWith(`${OPENAI_PREFIX}/`) ? openAIErrorResponse(p) : problemResponse(p, docsUrlOf(c)));
  const app = new Hono<Env>();

  app.use(observeRequests({ metrics: options.metrics, log: options.log, isRoute: (path) => allowed.has(path) }));
  // Opaque (no-cors) reads from other origins are allowed, so a cross-origin-isolated page (the
  // demo) can tell "this server refuses my origin (CORS)" from "nothing answers"; they expose nothing.
  app.use(async (c, next) => {
    await next();
    c.header('cross-origin-resource-policy', 'cross-origin');
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
    app.use(cors({ origin: origins.includes('*') ? '*' : origins, allowHeaders: ['authorization', 'content-type', 'x-request-id'], exposeHeaders: ['x-request-id', 'retry-after', MODEL_ID_HEADER, FINGERPRINT_HEADER], maxAge: 600 }));
  }

  /**
   * Runs an operation on the request's JSON body: waits for the model, refuses a full queue from
   * the body's declared size before reading it (`maxTexts`: the most texts the operation takes,
   * null for no cap), reads the body under the limit, then the operation.
   */
  const operate = (operation: Operation, maxTexts: number | null) => async (c: Context<Env>): Promise<Outcome<unknown>> => {
    const model = await state.model();
    if (!model.ok) return model;
    const embedder = model.value;
    const declared = Number(c.req.header('content-length') ?? NaN);
    const full = Number.isFinite(declared) && declared <= maxBodyBytes ? embedder.refusalBySize?.(declared, maxTexts) : null;
    if (full) return { ok: false, problem: full };
    const body = await readJsonBody(c.req.raw, maxBodyBytes);
    if (!body.ok) return body;
    const ticket = c.get('ticket');
    return operation(body.value, embedder, { signal: c.req.raw.signal, charge: ticket && ((tokens) => ticket.charge(tokens)) });
  };

  const table: Route<Env>[] = [
    {
      method: 'POST',
      path: '/v1/embeddings',
      operationId: 'createEmbeddings',
      meter: 'embeddings',
      summary: 'Vectorize one text or several texts',
      tags: ['embeddings'],
      resource: 'embeddings',
      body: 'EmbeddingRequest',
      ok: { description: 'One embedding per input text, with its index', json: 'EmbeddingResponse' },
      problems: ['validation', 'inputTooLarge', 'unsupportedDimension', 'unsupportedTask', ...BODY_PROBLEMS],
      operation: true,
      handler: operate(createEmbeddings, MAX_TEXTS_PER_REQUEST),
    },
    {
      method: 'POST',
      path: '/v1/rerankings',
      operationId: 'createRerankings',
      meter: 'rerankings',
      summary: 'Rank texts by relevance to a query (embedding similarity and BM25 over the request, per chunk, calibrated to 0–1)',
      tags: ['rerankings'],
      resource: 'rerankings',
      body: 'RerankRequest',
      ok: { description: 'The texts by score, highest first, with their indices', json: 'RerankResponse' },
      problems: ['validation', ...BODY_PROBLEMS],
      operation: true,
      requires: 'reranker',
      async handler(c) {
        // Without a reranker the route is not served: say so before reading the body.
        const model = await state.model();
        if (model.ok && !model.value.reranker) return { ok: false, problem: rerankNotServed(model.value) };
        return operate(createRerankings, null)(c);
      },
    },
    {
      method: 'POST',
      path: '/v1/tokenize',
      operationId: 'createTokenization',
      meter: 'tokenize',
      summary: 'Token counts of texts as /v1/embeddings reads them (an extension), optionally each token with its character offsets; runs no model',
      tags: ['embeddings'],
      resource: 'embeddings',
      body: 'TokenizeRequest',
      ok: { description: 'Per text: its input tokens, and with return_offsets its tokens and offsets', json: 'TokenizeResponse' },
      problems: ['validation', 'unsupportedTask', ...BODY_PROBLEMS],
      operation: true,
      handler: operate(createTokenization, null),
    },
    ...OTHER_OPERATIONS.map(({ path, resource }) => notServed(path, resource)),
    {
      method: 'POST',
      path: `${OPENAI_PREFIX}/embeddings`,
      operationId: 'createOpenAIEmbeddings',
      meter: 'embeddings',
      summary: "OpenAI-compatible embeddings (for the openai client, LangChain, the AI SDK…); errors in OpenAI's shape",
      tags: ['openai'],
      resource: 'embeddings',
      body: 'OpenAIEmbeddingRequest',
      ok: { description: 'One embedding per input, with its index, as floats or base64 float32', json: 'OpenAIEmbeddingResponse' },
      problems: ['validation', 'unsupportedDimension', 'unsupportedTask', ...BODY_PROBLEMS],
      operation: true,
      errors: 'openai',
      handler: operate(createOpenAIEmbeddings, MAX_OPENAI_INPUTS),
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
      async handler() {
        const model = await state.model();
        return model.ok ? listOpenAIModels(model.value) : model;
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
        schema: {
          type: 'object',
          properties: {
            status: { const: 'ok' },
            model: { type: 'string', description: 'the model name requests use' },
            model_id: { type: 'string', description: 'which weights serve it (the bundled hybrid and static models differ)' },
            fingerprint: { type: 'string', description: 'short hash of the served weights, tokenizer and settings; compare it with an index\'s' },
            backend: { type: 'string' },
          },
          required: ['status'],
        },
      },
      problems: ['unavailable'],
      handler() {
        const loaded = state.loaded();
        if (loaded) return { ok: true, value: { body: { status: 'ok', model: loaded.modelName, ...modelIdentity(loaded), backend: loaded.backendName }, inputTokens: null } };
        const detail = state.failed() ? 'the model failed to load; see the server log' : 'the model is loading; retry shortly';
        return { ok: false, problem: problem('unavailable', detail, { 'retry-after': '1' }) };
      },
    },
    {
      method: 'GET',
      path: '/livez',
      operationId: 'livez',
      summary: 'Liveness: 200 while the process runs and its event loop answers (restart the container otherwise)',
      ok: { description: 'Alive', media: 'application/json', schema: { type: 'object', properties: { status: { const: 'alive' } }, required: ['status'] } },
      handler: (c) => c.json({ status: 'alive' }),
    },
    {
      method: 'GET',
      path: '/readyz',
      operationId: 'readyz',
      summary: 'Readiness: 200 when the model is loaded, the key store answers and the server is not draining; 503 otherwise',
      ok: { description: 'Ready for traffic', media: 'application/json', schema: { type: 'object', properties: { status: { const: 'ready' } }, required: ['status'] } },
      problems: ['unavailable'],
      async handler() {
        const unready = (detail: string) => ({ ok: false as const, problem: problem('unavailable', detail, { 'retry-after': '1' }) });
        if (options.readiness?.draining()) return unready('the server is shutting down: it finishes the requests it has and takes no new ones; send them to another replica');
        const loaded = state.loaded();
        if (!loaded) return unready(state.failed() ? 'the model failed to load; see the server log' : 'the model is loading; retry shortly');
        if (options.readiness?.checkStore) {
          let timer: ReturnType<typeof setTimeout> | undefined;
          const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${STORE_CHECK_MS} ms`)), STORE_CHECK_MS)));
          try {
            await Promise.race([options.readiness.checkStore(), timeout]);
          } catch (error) {
            return unready(`the key store cannot be reached (${error instanceof Error ? error.message : String(error)}), so no API key can be checked`);
          } finally {
            clearTimeout(timer);
          }
        }
        return { ok: true, value: { body: { status: 'ready', model: loaded.modelName, ...modelIdentity(loaded) }, inputTokens: null } };
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
            handler: (c) => (state.loaded() ? c.json({ status: 'ok' }) : c.json({ status: state.failed() ? 'failed' : 'loading' }, 503)),
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
      handler: () => ({ ok: false, problem: problem('notFound', `POST ${path} is part of the API, but this deployment does not serve it (embedding model only); use POST /v1/embeddings`) }),
    };
  }

  // The table drives the Hono routes: authentication first wherever a resource is named, then the
  // handler; its outcome is serialised here, once.
  const allowed = new Map<string, string[]>();
  for (const r of table) {
    allowed.set(r.path, [...(allowed.get(r.path) ?? []), r.method]);
    app.on(r.method, r.path, async (c) => {
      let ticket: Ticket | undefined;
      if (r.resource) {
        const decision = await authenticate({ authorization: c.req.header('authorization') ?? null, resource: r.resource });
        if (decision && isRefusal(decision)) return fail(c, decision);
        if (decision && r.meter && options.usage) {
          ticket = options.usage.open(decision, r.meter);
          const limited = await ticket.admit();
          if (limited) return fail(c, limited);
          c.set('ticket', ticket);
        }
      }
      let inputTokens: number | null = null;
      try {
        const outcome = await r.handler(c);
        if (outcome instanceof Response) return outcome;
        if (!outcome.ok) return fail(c, outcome.problem);
        inputTokens = outcome.value.inputTokens ?? 0;
        if (outcome.value.inputTokens !== null) c.set('inputTokens', outcome.value.inputTokens);
        const loaded = r.operation ? state.loaded() : null;
        if (loaded) {
          const { model_id, fingerprint } = modelIdentity(loaded);
          if (model_id) c.header(MODEL_ID_HEADER, model_id);
          if (fingerprint) c.header(FINGERPRINT_HEADER, fingerprint);
        }
        for (const [name, value] of Object.entries(ticket?.headers() ?? {})) c.header(name, value);
        return c.json(outcome.value.body as object);
      } finally {
        // Recorded before the answer leaves (a shared store then loses no count if this process dies).
        await ticket?.settle(inputTokens);
      }
    });
  }

  // …and /openapi.json, from the same rows (a route the loaded model cannot serve is documented as
  // such), built once the model has loaded or failed: it cannot change after that.
  let openApiDoc: Promise<ReturnType<typeof buildOpenApiDocument>> | undefined;
  const openApi = () => (openApiDoc ??= buildDocument());
  const buildDocument = async () => {
    const embedder = await state.settled(); // a failed model still has its document
    return buildOpenApiDocument({
      modelName: embedder?.modelName ?? DEFAULT_MODEL_NAME,
      rerankModelName: embedder?.reranker?.rerankModelName ?? null,
      docsUrl,
      authenticated: !proxyMode && options.authenticate !== undefined,
      metered: !proxyMode && options.authenticate !== undefined && options.usage !== undefined,
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

/** Response headers of every answered operation: which weights answered. */
export const MODEL_ID_HEADER = 'x-lexembed-model-id';
export const FINGERPRINT_HEADER = 'x-lexembed-model-fingerprint';

/** The loaded model's id and fingerprint, where known (the Node loader sets both). */
function modelIdentity(embedder: Pick<Embedder, 'settings'>): { model_id?: string; fingerprint?: string } {
  const { id, fingerprint } = embedder.settings;
  return { ...(id ? { model_id: id } : {}), ...(fingerprint ? { fingerprint } : {}) };
}
