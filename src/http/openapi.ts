// The OpenAPI 3.1 document, generated from the contract's zod schemas and problem catalogue
// (no hand-written twin), for the routes the app serves in a given configuration.
import { z } from 'zod';
import {
  EmbeddingResponseSchema,
  InvocationRequestSchema,
  RerankResponseSchema,
  createRerankRequestSchema,
  PROBLEM_CATALOGUE,
  PROBLEM_CONTENT_TYPE,
  ProblemDocumentSchema,
  createEmbeddingRequestSchema,
  problemType,
  type ProblemCode,
} from '../contract/index.ts';

export interface OpenApiOptions {
  readonly modelName: string;
  /** The reranker served at POST /v1/rerankings, or null where the model carries none. */
  readonly rerankModelName?: string | null;
  readonly docsUrl: string;
  readonly deployment: 'api' | 'proxy';
  readonly authenticated: boolean;
  readonly metrics: boolean;
  readonly otherOperations: readonly string[];
}

type Json = Record<string, unknown>;

export function buildOpenApiDocument(options: OpenApiOptions): Json {
  const schema = (s: z.ZodType, io: 'input' | 'output' = 'output') => {
    const { $schema: _, ...rest } = z.toJSONSchema(s, { io, target: 'draft-2020-12', unrepresentable: 'any' }) as Json;
    return rest;
  };
  const problemResponse = (codes: ProblemCode[]) => {
    const entries = codes.map((c) => PROBLEM_CATALOGUE[c]);
    return {
      description: entries.map((e) => e.title).join(' | '),
      content: {
        [PROBLEM_CONTENT_TYPE]: {
          schema: { $ref: '#/components/schemas/Problem' },
          examples: Object.fromEntries(
            codes.map((c) => [
              c,
              {
                summary: PROBLEM_CATALOGUE[c].title,
                value: { type: problemType(c, options.docsUrl), title: PROBLEM_CATALOGUE[c].title, status: PROBLEM_CATALOGUE[c].status, detail: '…', instance: null },
              },
            ]),
          ),
        },
      },
    };
  };
  const byStatus = (codes: ProblemCode[]) => {
    const out: Record<string, unknown> = {};
    for (const status of [...new Set(codes.map((c) => PROBLEM_CATALOGUE[c].status))]) {
      out[String(status)] = problemResponse(codes.filter((c) => PROBLEM_CATALOGUE[c].status === status));
    }
    return out;
  };
  const routing = { '404': { $ref: '#/components/responses/NotFound' }, '405': { $ref: '#/components/responses/MethodNotAllowed' } };
  const auth = options.authenticated && options.deployment === 'api';
  const authCodes: ProblemCode[] = auth ? ['incorrectKey', 'unauthorizedKey', 'accountOverdue', 'noSubscription', 'accessForbidden'] : [];
  const html = { description: 'HTML page', content: { 'text/html': { schema: { type: 'string' } } } };

  const paths: Json = {
    '/v1/embeddings': {
      post: {
        operationId: 'createEmbeddings',
        summary: 'Vectorize one text or several texts',
        tags: ['embeddings'],
        ...(auth ? { security: [{ bearer: [] }] } : {}),
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/EmbeddingRequest' } } } },
        responses: {
          '200': { description: 'One embedding per input text, with its index', content: { 'application/json': { schema: { $ref: '#/components/schemas/EmbeddingResponse' } } } },
          ...byStatus(['validation', 'inputTooLarge', 'unsupportedDimension', 'unsupportedTask', ...authCodes, 'requestTooLarge', 'internal', 'unavailable']),
          ...routing,
        },
      },
    },
    ...(options.rerankModelName
      ? {
          '/v1/rerankings': {
            post: {
              operationId: 'createRerankings',
              summary: 'Rank texts by relevance to a query (embedding similarity and BM25 over the request, per chunk, calibrated to 0–1)',
              tags: ['rerankings'],
              ...(auth ? { security: [{ bearer: [] }] } : {}),
              requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/RerankRequest' } } } },
              responses: {
                '200': { description: 'The texts by score, highest first, with their indices', content: { 'application/json': { schema: { $ref: '#/components/schemas/RerankResponse' } } } },
                ...byStatus(['validation', ...authCodes, 'requestTooLarge', 'internal', 'unavailable']),
                ...routing,
              },
            },
          },
        }
      : {}),
    '/health': {
      get: {
        operationId: 'health',
        summary: 'Readiness: 200 once the model is loaded',
        responses: {
          '200': { description: 'Ready', content: { 'application/json': { schema: { type: 'object', properties: { status: { const: 'ok' }, model: { type: 'string' }, backend: { type: 'string' } }, required: ['status'] } } } },
          ...byStatus(['unavailable']),
        },
      },
    },
    '/openapi.json': { get: { operationId: 'openapi', summary: 'This document', responses: { '200': { description: 'OpenAPI 3.1 document', content: { 'application/json': { schema: { type: 'object' } } } } } } },
    '/docs': { get: { operationId: 'docs', summary: 'API reference page', responses: { '200': html } } },
    '/docs/api-reference/errors': { get: { operationId: 'errors', summary: 'The errors page every problem type links to', responses: { '200': html } } },
  };
  for (const path of options.otherOperations) {
    paths[path] = {
      post: {
        operationId: path.replace(/^\/v1\//, '').replace(/\W+(\w)/g, (_, c: string) => c.toUpperCase()),
        summary: 'Part of the API, not served by this deployment (embedding model only): authenticated, then 404',
        ...(auth ? { security: [{ bearer: [] }] } : {}),
        responses: { ...byStatus(authCodes), '404': { $ref: '#/components/responses/NotFound' } },
      },
    };
  }
  if (options.metrics) {
    paths['/metrics'] = { get: { operationId: 'metrics', summary: 'Prometheus metrics', responses: { '200': { description: 'Prometheus text exposition format', content: { 'text/plain': { schema: { type: 'string' } } } } } } };
  }
  if (options.deployment === 'proxy') {
    paths['/ping'] = {
      get: { operationId: 'ping', summary: 'Container health: 200 once the model is loaded, 503 before', responses: { '200': { description: 'Ready' }, '503': { description: 'Loading' } } },
    };
    paths['/invocations'] = {
      post: {
        operationId: 'invoke',
        summary: 'Proxy endpoint of private deployments: answers exactly what the named route answers',
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/InvocationRequest' } } } },
        responses: {
          '200': { description: "The proxied route's response", content: { 'application/json': { schema: { $ref: '#/components/schemas/EmbeddingResponse' } } } },
          ...byStatus(['validation', 'inputTooLarge', 'unsupportedDimension', 'unsupportedTask', 'requestTooLarge', 'internal', 'unavailable']),
          ...routing,
        },
      },
    };
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'lexembed embedding API',
      version: '0.8.3',
      description: `Legal text embeddings with model \`${options.modelName}\`. Errors are RFC 7807 problem details; see ${options.docsUrl.replace(/\/+$/, '')}/api-reference/errors.`,
    },
    servers: [{ url: '/' }],
    paths,
    components: {
      schemas: {
        EmbeddingRequest: schema(createEmbeddingRequestSchema(options.modelName), 'input'),
        EmbeddingResponse: schema(EmbeddingResponseSchema),
        Problem: schema(ProblemDocumentSchema),
        InvocationRequest: schema(InvocationRequestSchema, 'input'),
        ...(options.rerankModelName
          ? { RerankRequest: schema(createRerankRequestSchema(options.rerankModelName), 'input'), RerankResponse: schema(RerankResponseSchema) }
          : {}),
      },
      responses: {
        NotFound: problemResponse(['notFound']),
        MethodNotAllowed: { ...problemResponse(['methodNotAllowed']), headers: { Allow: { description: 'Methods the route takes', schema: { type: 'string' } } } },
      },
      ...(auth ? { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API key lxk_v1_<secret>_<checksum>' } } } : {}),
    },
  };
}
