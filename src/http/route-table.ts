// The route table as data (issue "Shape II"): each row is a route's documentation (routes.ts) and
// what answers it, grouped by job. The pipeline serves them (pipeline.ts) and /openapi.json is built
// from the same rows, so a route cannot be served undocumented or documented unserved.
import { MAX_OPENAI_INPUTS, MAX_TEXTS_PER_REQUEST, OPENAI_PREFIX, problem } from '../contract/index.ts';
import { createEmbeddings, createOpenAIEmbeddings, createRerankings, createSearch, createSparseEmbeddings, createTokenization, listOpenAIModels, type Searcher } from '../operations/index.ts';
import type { Resource } from '../auth/records.ts';
import { renderDocsPage } from './docs-page.ts';
import { renderErrorsPage } from './errors-page.ts';
import type { ModelState } from './model-state.ts';
import type { AppMetrics } from './observe.ts';
import type { buildOpenApiDocument } from './openapi.ts';
import { modelIdentity } from './pipeline.ts';
import type { HandlerRoute, Route } from './routes.ts';

/** Operations of the API this deployment does not serve: authenticated like every operation, then a 404. */
const OTHER_OPERATIONS: readonly { path: string; resource: Resource }[] = [
  { path: '/v1/enrichments', resource: 'enrichments' },
  { path: '/v1/extractions/qa', resource: 'extractions' },
  { path: '/v1/classifications/universal', resource: 'classifications' },
];

/** How long /readyz waits for the key store before calling it unreachable. */
const STORE_CHECK_MS = 1_000;

/** Problems of every route that reads a body. */
const BODY_PROBLEMS = ['requestTooLarge', 'internal', 'unavailable'] as const;

/** The API's operations: embeddings, rerankings, tokenize, the OpenAI-compatible routes, and those not served. */
export function operationRoutes(): Route[] {
  return [
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
      run: createEmbeddings,
      maxTexts: MAX_TEXTS_PER_REQUEST,
    },
    {
      method: 'POST',
      path: '/v1/embeddings/sparse',
      operationId: 'createSparseEmbeddings',
      meter: 'embeddings',
      summary: "Sparse vectors (an extension): each text's word pieces with BM25 weights, for the sparse field of a hybrid store; runs no model",
      tags: ['embeddings'],
      resource: 'embeddings',
      body: 'SparseEmbeddingRequest',
      ok: { description: 'One sparse vector per input text, with its index', json: 'SparseEmbeddingResponse' },
      problems: ['validation', 'inputTooLarge', 'unsupportedTask', ...BODY_PROBLEMS],
      operation: true,
      requires: 'sparse',
      run: createSparseEmbeddings,
      maxTexts: MAX_TEXTS_PER_REQUEST,
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
      run: createRerankings,
      maxTexts: null,
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
      run: createTokenization,
      maxTexts: null,
    },
    ...OTHER_OPERATIONS.map(({ path, resource }) => notServed(path, resource)),
    ...openaiRoutes(),
  ];
}

/** POST /v1/search: served where the server holds an index (lexembed serve --index). */
export function searchRoute(searcher: Searcher | Promise<Searcher>): Route {
  return {
    method: 'POST',
    path: '/v1/search',
    operationId: 'search',
    meter: 'embeddings',
    summary: "Search the server's index (an extension, with lexembed serve --index): the best passages for a query, hybrid by default, each with its file, page and matching sentences",
    tags: ['search'],
    resource: 'embeddings',
    body: 'SearchRequest',
    ok: { description: 'The passages, best first, and the offset of the next page', json: 'SearchResponse' },
    problems: ['validation', 'notFound', ...BODY_PROBLEMS],
    operation: true,
    run: createSearch(searcher),
    maxTexts: 1,
  };
}

/** The OpenAI-compatible routes: embeddings and the model list, errors in OpenAI's shape. */
function openaiRoutes(): Route[] {
  return [
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
      run: createOpenAIEmbeddings,
      maxTexts: MAX_OPENAI_INPUTS,
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
      run: async (_body, embedder) => listOpenAIModels(embedder),
      maxTexts: null,
    },
  ];
}

/** Health and readiness: what load balancers, Kubernetes and people ask. */
export function probeRoutes(state: ModelState, readiness?: { readonly draining: () => boolean; readonly checkStore?: () => Promise<void> }): Route[] {
  return [
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
        if (loaded) return { ok: true, value: { body: { status: 'ok', model: loaded.modelName, ...modelIdentity(loaded), backend: loaded.runtime.backendName }, inputTokens: null } };
        const failure = state.failure();
        if (failure) return { ok: false, problem: failure };
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
      handler: () => Response.json({ status: 'alive' }),
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
        if (readiness?.draining()) return unready('the server is shutting down: it finishes the requests it has and takes no new ones; send them to another replica');
        const loaded = state.loaded();
        if (!loaded) return unready(state.failed() ? 'the model failed to load; see the server log' : 'the model is loading; retry shortly');
        if (readiness?.checkStore) {
          let timer: ReturnType<typeof setTimeout> | undefined;
          const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${STORE_CHECK_MS} ms`)), STORE_CHECK_MS)));
          try {
            await Promise.race([readiness.checkStore(), timeout]);
          } catch (error) {
            return unready(`the key store cannot be reached (${error instanceof Error ? error.message : String(error)}), so no API key can be checked`);
          } finally {
            clearTimeout(timer);
          }
        }
        return { ok: true, value: { body: { status: 'ready', model: loaded.modelName, ...modelIdentity(loaded) }, inputTokens: null } };
      },
    },
  ];
}

/** What a model-hosting platform asks of a private deployment (spec 4.3): /ping and /invocations. */
export function proxyRoutes(state: ModelState, invocations: HandlerRoute['handler']): Route[] {
  return [
      {
        method: 'GET',
        path: '/ping',
        operationId: 'ping',
        summary: 'Container health: 200 once the model is loaded, 503 before',
        ok: { description: 'Ready' },
        responses: { '503': { description: 'Loading' } },
        handler: () => (state.loaded() ? Response.json({ status: 'ok' }) : Response.json({ status: state.failed() ? 'failed' : 'loading' }, { status: 503 })),
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
        handler: invocations,
      },
  ];
}

/** The OpenAPI document, the pages made from it, and the metrics. */
export function documentRoutes(openApi: () => Promise<ReturnType<typeof buildOpenApiDocument>>, metrics?: AppMetrics): Route[] {
  return [
    { method: 'GET', path: '/openapi.json', operationId: 'openapi', summary: 'This document', ok: { description: 'OpenAPI 3.1 document', media: 'application/json', schema: { type: 'object' } }, handler: async () => Response.json(await openApi()) },
    { method: 'GET', path: '/docs', operationId: 'docs', summary: 'API reference page', ok: { description: 'HTML page', media: 'text/html' }, handler: async () => html(renderDocsPage(await openApi(), '/docs/api-reference/errors')) },
    {
      method: 'GET',
      path: '/docs/api-reference/errors',
      operationId: 'errors',
      summary: 'The errors page every problem type links to',
      ok: { description: 'HTML page', media: 'text/html' },
      handler: () => html(renderErrorsPage()),
    },
    ...(metrics
      ? [
          {
            method: 'GET',
            path: '/metrics',
            operationId: 'metrics',
            summary: 'Prometheus metrics',
            ok: { description: 'Prometheus text exposition format', media: 'text/plain' },
            async handler() {
              const { contentType, body } = await metrics.render();
              return new Response(body, { headers: { 'content-type': contentType } });
            },
          } satisfies Route,
        ]
      : []),
  ];
}

/** An HTML page (the content type Hono's c.html gives). */
const html = (page: string) => new Response(page, { headers: { 'content-type': 'text/html; charset=UTF-8' } });

/** A route of the API this deployment does not serve: authenticated like every operation, then a 404. */
export function notServed(path: string, resource: Resource): Route {
  const operationId = path.replace(/^\/v1\//, '').replace(/\W+(\w)/g, (_, ch: string) => ch.toUpperCase());
  return {
    method: 'POST',
    path,
    operationId,
    summary: 'Part of the API, not served by this deployment: authenticated, then 404',
    resource,
    operation: true,
    unserved: true,
    handler: () => ({ ok: false, problem: problem('notFound', `POST ${path} is part of the API, but this deployment does not serve it (embedding model only); use POST /v1/embeddings`) }),
  };
}
