// The OpenAPI 3.1 document, generated from the contract's zod schemas and problem catalogue
// (no hand-written twin), for the routes the app serves in a given configuration.
import { z } from 'zod';
import {
  EmbeddingResponseSchema,
  InvocationRequestSchema,
  OpenAIEmbeddingResponseSchema,
  OpenAIErrorSchema,
  OpenAIModelListSchema,
  createOpenAIEmbeddingRequestSchema,
  createTokenizeRequestSchema,
  TokenizeResponseSchema,
  RerankResponseSchema,
  createRerankRequestSchema,
  createSparseRequestSchema,
  createSearchRequestSchema,
  SearchResponseSchema,
  SparseResponseSchema,
  PROBLEM_CATALOGUE,
  PROBLEM_CONTENT_TYPE,
  ProblemDocumentSchema,
  createEmbeddingRequestSchema,
  problemType,
  type ProblemCode,
} from '../contract/index.ts';
import type { RouteDoc } from './routes.ts';
import { INTERFACE_VERSION, LEXEMBED_VERSION } from '../version.ts';

export interface OpenApiOptions {
  readonly modelName: string;
  /** The reranker served at POST /v1/rerankings, or null where the model carries none. */
  readonly rerankModelName?: string | null;
  readonly docsUrl: string;
  /** API keys are checked: routes with a resource list the authentication problems and security. */
  readonly authenticated: boolean;
  /** Usage is metered: metered routes list the rate-limit and quota problems (429). */
  readonly metered?: boolean;
  /** The app's route table, in order (src/http/routes.ts). */
  readonly routes: readonly RouteDoc[];
}

type Json = Record<string, unknown>;

const AUTH_PROBLEMS: ProblemCode[] = ['incorrectKey', 'unauthorizedKey', 'accountOverdue', 'noSubscription', 'accessForbidden'];

/** A JSON schema of a zod schema, as OpenAPI 3.1 embeds it. */
function jsonSchema(s: z.ZodType, io: 'input' | 'output' = 'output'): Json {
  const { $schema: _, ...rest } = z.toJSONSchema(s, { io, target: 'draft-2020-12', unrepresentable: 'any' }) as Json;
  return rest;
}

/** One response object for problems sharing a status: their titles, and an example of each. */
function problemResponse(codes: readonly ProblemCode[], docsUrl: string) {
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
              value: { type: problemType(c, docsUrl), title: PROBLEM_CATALOGUE[c].title, status: PROBLEM_CATALOGUE[c].status, detail: '…', instance: null },
            },
          ]),
        ),
      },
    },
  };
}

/** Problem responses by status. */
function byStatus(codes: readonly ProblemCode[], docsUrl: string) {
  const out: Record<string, unknown> = {};
  for (const status of [...new Set(codes.map((c) => PROBLEM_CATALOGUE[c].status))]) {
    out[String(status)] = problemResponse(codes.filter((c) => PROBLEM_CATALOGUE[c].status === status), docsUrl);
  }
  return out;
}

/** The OpenAI-compatible routes answer errors in OpenAI's shape, at the same statuses. */
function openAIErrorsByStatus(codes: readonly ProblemCode[]) {
  const out: Record<string, unknown> = {};
  for (const status of [...new Set([...codes.map((c) => PROBLEM_CATALOGUE[c].status), 404, 405])]) {
    const titles = codes.filter((c) => PROBLEM_CATALOGUE[c].status === status).map((c) => PROBLEM_CATALOGUE[c].title);
    out[String(status)] = { description: titles.join(' | ') || (status === 404 ? 'Not found' : 'Method not allowed'), content: { 'application/json': { schema: { $ref: '#/components/schemas/OpenAIError' } } } };
  }
  return out;
}

const ROUTING = { '404': { $ref: '#/components/responses/NotFound' }, '405': { $ref: '#/components/responses/MethodNotAllowed' } };

function okResponse(ok: NonNullable<RouteDoc['ok']>) {
  if (ok.json) return { description: ok.description, content: { 'application/json': { schema: { $ref: `#/components/schemas/${ok.json}` } } } };
  if (ok.media) return { description: ok.description, content: { [ok.media]: { schema: ok.schema ?? { type: 'string' } } } };
  return { description: ok.description };
}

export function buildOpenApiDocument(options: OpenApiOptions): Json {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of options.routes) {
    const keyed = options.authenticated && route.resource !== undefined;
    const metered: ProblemCode[] = keyed && options.metered && route.meter ? (route.meter === 'tokenize' ? ['rateLimited'] : ['rateLimited', 'quotaExceeded']) : [];
    const problems = [...(route.problems ?? []), ...(keyed ? AUTH_PROBLEMS : []), ...metered];
    (paths[route.path] ??= {})[route.method.toLowerCase()] = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.tags ? { tags: route.tags } : {}),
      ...(keyed ? { security: [{ bearer: [] }] } : {}),
      ...(route.body ? { requestBody: { required: true, content: { 'application/json': { schema: { $ref: `#/components/schemas/${route.body}` } } } } } : {}),
      responses: {
        ...(route.ok ? { '200': okResponse(route.ok) } : {}),
        ...(route.errors === 'openai' ? openAIErrorsByStatus(problems) : { ...byStatus(problems, options.docsUrl), ...(route.operation ? ROUTING : {}) }),
        ...(route.responses ?? {}),
      },
    };
  }

  const reranker = options.rerankModelName ? ` and reranking with \`${options.rerankModelName}\`` : '';
  return {
    openapi: '3.1.0',
    info: {
      title: 'lexembed embedding API',
      version: LEXEMBED_VERSION,
      'x-interface-version': INTERFACE_VERSION,
      description: `Legal text embeddings with model \`${options.modelName}\`${reranker}, following version ${INTERFACE_VERSION} of the embedding service interface. Errors are RFC 7807 problem details; see ${options.docsUrl.replace(/\/+$/, '')}/api-reference/errors.`,
    },
    servers: [{ url: '/' }],
    paths,
    components: {
      schemas: {
        EmbeddingRequest: jsonSchema(createEmbeddingRequestSchema(options.modelName), 'input'),
        EmbeddingResponse: jsonSchema(EmbeddingResponseSchema),
        Problem: jsonSchema(ProblemDocumentSchema),
        InvocationRequest: jsonSchema(InvocationRequestSchema, 'input'),
        TokenizeRequest: jsonSchema(createTokenizeRequestSchema(options.modelName), 'input'),
        TokenizeResponse: jsonSchema(TokenizeResponseSchema),
        OpenAIEmbeddingRequest: jsonSchema(createOpenAIEmbeddingRequestSchema(options.modelName), 'input'),
        OpenAIEmbeddingResponse: jsonSchema(OpenAIEmbeddingResponseSchema),
        OpenAIModelList: jsonSchema(OpenAIModelListSchema),
        OpenAIError: jsonSchema(OpenAIErrorSchema),
        ...(options.rerankModelName
          ? { RerankRequest: jsonSchema(createRerankRequestSchema(options.rerankModelName), 'input'), RerankResponse: jsonSchema(RerankResponseSchema) }
          : {}),
        ...(options.routes.some((r) => r.body === 'SearchRequest')
          ? { SearchRequest: jsonSchema(createSearchRequestSchema(options.modelName), 'input'), SearchResponse: jsonSchema(SearchResponseSchema) }
          : {}),
        ...(options.routes.some((r) => r.body === 'SparseEmbeddingRequest')
          ? { SparseEmbeddingRequest: jsonSchema(createSparseRequestSchema(options.modelName), 'input'), SparseEmbeddingResponse: jsonSchema(SparseResponseSchema) }
          : {}),
      },
      responses: {
        NotFound: problemResponse(['notFound'], options.docsUrl),
        MethodNotAllowed: { ...problemResponse(['methodNotAllowed'], options.docsUrl), headers: { Allow: { description: 'Methods the route takes', schema: { type: 'string' } } } },
      },
      ...(options.authenticated ? { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API key lxk_v1_<secret>_<checksum>' } } } : {}),
    },
  };
}
