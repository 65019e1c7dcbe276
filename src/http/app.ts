// The lexembed HTTP app (Hono): one route table, authentication before validation, every
// failure answered as a problem through problemResponse().
import { Hono, type Context } from 'hono';
import {
  buildEmbeddingResponse,
  HOP_BY_HOP_HEADERS,
  problem,
  validateInvocationRequest,
  textsOf,
  validateEmbeddingRequest,
  type Problem,
} from '../contract/index.ts';
import type { Embedder } from '../embedder/types.ts';
import { renderErrorsPage } from './errors-page.ts';
import { problemResponse } from './problem-response.ts';
import { readJsonBody } from './read-body.ts';

export type { Resource } from '../auth/records.ts';
import type { Resource } from '../auth/records.ts';

/** The authentication seam: return a problem to refuse, null to allow. */
export type Authenticate = (request: { authorization: string | null; resource: Resource }) => Problem | null | Promise<Problem | null>;

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
}

export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;

/** The routes the app serves, with their methods (405 for others). */
const OTHER_OPERATIONS = ['/v1/enrichments', '/v1/rerankings', '/v1/extractions/qa', '/v1/classifications/universal'];

/**
 * Builds the app. Adapters (Node, edge) only hand it requests.
 * @example const app = createApp({ embedder: await loadModelFolder(dir) }); await app.request('/health')
 */
export function createApp(options: AppOptions): Hono {
  const docsUrl = options.docsUrl ?? '/docs';
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
  const fail = (p: Problem) => problemResponse(p, docsUrl);
  const routes = new Map<string, string[]>();
  const app = new Hono();

  const route = (method: 'GET' | 'POST', path: string, handler: (c: Context) => Promise<Response> | Response) => {
    routes.set(path, [...(routes.get(path) ?? []), method]);
    app.on(method, path, handler);
  };

  route('POST', '/v1/embeddings', async (c) => {
    const refused = await authenticate({ authorization: c.req.header('authorization') ?? null, resource: 'embeddings' });
    if (refused) return fail(refused);
    const body = await readJsonBody(c.req.raw, maxBodyBytes);
    if (!body.ok) return fail(body.problem);
    const embedder = await embedderPromise;
    const request = validateEmbeddingRequest(body.value, embedder);
    if (!request.ok) return fail(request.problem);
    const { task, overflow_strategy, dimensions } = request.value;
    const result = await embedder.embed({ texts: textsOf(request.value), task, overflowStrategy: overflow_strategy, dimensions });
    if (!result.ok) return fail(result.problem);
    return c.json(buildEmbeddingResponse(result.value.vectors, result.value.inputTokens));
  });

  for (const path of OTHER_OPERATIONS) {
    route('POST', path, () =>
      fail(problem('notFound', `POST ${path} is part of the API, but this server serves only the embedding model; use POST /v1/embeddings`)),
    );
  }

  route('GET', '/health', (c) => {
    if (loaded) return c.json({ status: 'ok', model: loaded.modelName, backend: loaded.backendName });
    const detail = loadError ? 'the model failed to load; see the server log' : 'the model is loading; retry shortly';
    return fail(problem('unavailable', detail, { 'retry-after': '1' }));
  });

  if (proxyMode) {
    route('GET', '/ping', (c) => (loaded ? c.json({ status: 'ok' }) : c.json({ status: loadError ? 'failed' : 'loading' }, 503)));

    // Dispatches to the same routes in-process and returns their status, type and body as-is.
    // Registered only in proxy mode, where no route needs a key: it cannot bypass authentication.
    route('POST', '/invocations', async (c) => {
      const body = await readJsonBody(c.req.raw, maxBodyBytes);
      if (!body.ok) return fail(body.problem);
      const invocation = validateInvocationRequest(body.value);
      if (!invocation.ok) return fail(invocation.problem);
      const { path, method, headers, data } = invocation.value;
      const forwarded = new Headers();
      for (const [name, value] of Object.entries(headers ?? {})) {
        if (!(HOP_BY_HOP_HEADERS as readonly string[]).includes(name.toLowerCase())) forwarded.set(name, value);
      }
      const hasBody = data !== null && method !== 'GET' && method !== 'HEAD';
      if (hasBody && !forwarded.has('content-type')) forwarded.set('content-type', 'application/json');
      const inner = await app.fetch(new Request(new URL(path, 'http://invocation.local'), { method, headers: forwarded, body: hasBody ? JSON.stringify(data) : undefined }));
      const responseHeaders = new Headers(inner.headers);
      for (const name of HOP_BY_HOP_HEADERS) responseHeaders.delete(name);
      return new Response(inner.body, { status: inner.status, headers: responseHeaders });
    });
  }

  route('GET', '/docs/api-reference/errors', (c) => c.html(renderErrorsPage()));
  route('GET', '/docs', (c) =>
    c.html('<!doctype html><title>lexembed API</title><h1>lexembed API</h1><p>POST /v1/embeddings. <a href="/docs/api-reference/errors">Errors</a>.</p>'),
  );

  app.notFound((c) => {
    const allowed = routes.get(c.req.path);
    if (allowed) {
      return fail(problem('methodNotAllowed', `${c.req.method} is not allowed on ${c.req.path}; use ${allowed.join(' or ')}`, { allow: allowed.join(', ') }));
    }
    return fail(problem('notFound', `no route at ${c.req.path.slice(0, 200)}; the embeddings endpoint is POST /v1/embeddings`));
  });

  app.onError((error) => {
    (options.onUnexpectedError ?? ((e) => console.error('lexembed: unexpected error:', e)))(error);
    return fail(problem('internal', 'an unexpected error occurred while processing the request; retry, and report it if it persists'));
  });

  return app;
}
