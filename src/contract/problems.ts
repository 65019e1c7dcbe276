// The problem catalogue of spec section 7 (RFC 7807), as data: every problem's status, title and
// type anchor are here. The HTTP layer serialises these values; the status numbers elsewhere are
// probes' own answers (GET /health's 503 while loading, route-table.ts) and the drain's 503 for a
// request cut off at shutdown (node/server.ts), which are not API problems.
import { z } from 'zod';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
export const ERRORS_PAGE_PATH = '/api-reference/errors';

/** Every problem the service can answer with, keyed by a stable code. */
export const PROBLEM_CATALOGUE = {
  validation: { status: 400, anchor: '400-validation-error', title: 'Validation error' },
  inputTooLarge: { status: 400, anchor: '400-validation-error', title: 'Embedding input too large error' },
  unsupportedDimension: { status: 400, anchor: '400-validation-error', title: 'Unsupported embedding dimension error' },
  unsupportedTask: { status: 400, anchor: '400-validation-error', title: 'Unsupported embedding task error' },
  unauthorizedKey: { status: 401, anchor: '401-not-authenticated', title: 'Unauthorized API key error' },
  incorrectKey: { status: 401, anchor: '401-not-authenticated', title: 'Incorrect API key error' },
  accountOverdue: { status: 402, anchor: '402-payment-required', title: 'Account overdue error' },
  accessForbidden: { status: 403, anchor: '403-access-forbidden', title: 'Access forbidden error' },
  noSubscription: { status: 403, anchor: '403-access-forbidden', title: 'No subscription error' },
  notFound: { status: 404, anchor: '404-not-found', title: 'Not found error' },
  methodNotAllowed: { status: 405, anchor: '405-method-not-allowed', title: 'Method not allowed error' },
  requestTooLarge: { status: 413, anchor: '413-request-too-large', title: 'Request too large error' },
  rateLimited: { status: 429, anchor: '429-too-many-requests', title: 'Rate limit exceeded error' },
  quotaExceeded: { status: 429, anchor: '429-too-many-requests', title: 'Quota exceeded error' },
  internal: { status: 500, anchor: '500-internal-server-error', title: 'Internal server error' },
  unavailable: { status: 503, anchor: '503-service-unavailable', title: 'Service unavailable error' },
} as const satisfies Record<string, { status: number; anchor: string; title: string }>;

export type ProblemCode = keyof typeof PROBLEM_CATALOGUE;

/** A problem as a value: which catalogue entry, and what exactly was wrong this time. */
export interface Problem {
  readonly code: ProblemCode;
  readonly detail: string | null;
  /** Extra response headers the problem implies (e.g. Allow, Retry-After). */
  readonly headers?: Readonly<Record<string, string>>;
  /** The request field it concerns, where one does (the OpenAI error shape's `param`). */
  readonly param?: string | null;
}

/** The wire shape of section 2.5. */
export const ProblemDocumentSchema = z.object({
  type: z.string().min(1),
  title: z.string().min(1),
  status: z.number().int(),
  detail: z.string().min(1).nullable(),
  instance: z.string().min(1).nullable(),
});
export type ProblemDocument = z.infer<typeof ProblemDocumentSchema>;

export function problem(code: ProblemCode, detail: string | null, headers?: Record<string, string>): Problem {
  return headers ? { code, detail, headers } : { code, detail };
}

export function problemStatus(p: Problem): number {
  return PROBLEM_CATALOGUE[p.code].status;
}

/** `{docs_url}/api-reference/errors#<anchor>` for a catalogue entry. */
export function problemType(code: ProblemCode, docsUrl: string): string {
  return `${docsUrl.replace(/\/+$/, '')}${ERRORS_PAGE_PATH}#${PROBLEM_CATALOGUE[code].anchor}`;
}

export function toProblemDocument(p: Problem, docsUrl: string): ProblemDocument {
  const entry = PROBLEM_CATALOGUE[p.code];
  return { type: problemType(p.code, docsUrl), title: entry.title, status: entry.status, detail: p.detail, instance: null };
}
