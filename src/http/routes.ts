// The route table's shape: each route as data (method, path, the key resource it needs, its
// request and response schemas, the problems it answers with) beside what answers it: an
// operation over the model, which the request pipeline runs through its stages (pipeline.ts), or a
// plain handler of the request. The app registers the table and /openapi.json is generated from
// the same rows, so a route cannot be served undocumented or documented unserved.
import type { Resource } from '../auth/records.ts';
import type { EmbedOptions, Embedder } from '../embedder/types.ts';
import type { ProblemCode } from '../contract/index.ts';
import type { Outcome } from '../operations/index.ts';
import type { RequestState } from './request-state.ts';
import type { MeteredOperation } from '../usage/meter.ts';

export type Method = 'GET' | 'POST';

/** What /openapi.json says of a route. */
export interface RouteDoc {
  readonly method: Method;
  readonly path: string;
  readonly operationId: string;
  readonly summary: string;
  readonly tags?: readonly string[];
  /** The API-key resource the route needs; absent for open routes (health, docs). */
  readonly resource?: Resource;
  /** Name of the components.schemas entry its JSON body follows. */
  readonly body?: string;
  /** Its success response: a JSON schema by components name, or a media type with a schema. */
  readonly ok?: { readonly description: string; readonly json?: string; readonly media?: string; readonly schema?: Record<string, unknown> };
  /** Problems it answers with, besides authentication's (added where keys are on). */
  readonly problems?: readonly ProblemCode[];
  /** An API operation: 404 and 405 problems for wrong paths and methods are documented with it. */
  readonly operation?: boolean;
  /** A route of the API this deployment does not serve (authenticated, then 404). */
  readonly unserved?: true;
  /** Served only when the loaded model has this (documented as not served otherwise). */
  readonly requires?: 'reranker' | 'sparse';
  /** What usage records count a 200 of this route as (with AppOptions.usage: metered, rate-limited, quota-checked). */
  readonly meter?: MeteredOperation;
  /** `openai`: errors in OpenAI's shape ({error: {message, type, param, code}}), not problem details. */
  readonly errors?: 'openai';
  /** Other responses, as OpenAPI response objects by status. */
  readonly responses?: Readonly<Record<string, unknown>>;
}

/** An operation over a decoded body (src/operations), as the pipeline runs it. */
export type Operation = (body: unknown, embedder: Embedder, options: EmbedOptions) => Promise<Outcome<unknown>>;

/**
 * A route whose answer comes from the model: the pipeline authenticates, waits for the model,
 * opens the request's lease, reads the body (where the row names one), runs `run`, answers and
 * settles (pipeline.ts).
 */
export interface OperationRoute extends RouteDoc {
  readonly run: Operation;
  /** The most texts the operation takes (what the lease reserves room for at most), null for no cap. */
  readonly maxTexts: number | null;
}

/** Any other route (probes, pages, not-served operations, the proxy): an outcome, or a Response of its own. */
export interface HandlerRoute extends RouteDoc {
  readonly handler: (request: Request, state: RequestState) => Response | Outcome<unknown> | Promise<Response | Outcome<unknown>>;
}

export type Route = OperationRoute | HandlerRoute;

export const isOperationRoute = (route: Route): route is OperationRoute => 'run' in route;
