// The proxy endpoint of private deployments (spec 4.3): `POST /invocations` carries
// {path, method, headers, data} and answers exactly what the named route answers.
import { z } from 'zod';
import { problem } from './problems.ts';
import { pathSpellingDetail, pathSpellingFault } from './paths.ts';
import { formatIssues } from './request.ts';
import { fieldsOf, required } from './rules.ts';
import type { Result } from './result.ts';

/**
 * Methods an invocation may carry (fetch refuses CONNECT, TRACE and TRACK). Not HEAD: its answer
 * has no body, so a proxied problem would arrive as a bare status with nothing to say why.
 */
export const INVOCATION_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/; // an RFC 9110 token
const BAD_HEADER_VALUE = /[\0\r\n]/;

export const InvocationRequestSchema = z.strictObject(
  {
    path: z
      .string({ error: required('must be a string such as "/v1/embeddings"') })
      .regex(/^\/[^\s?#]*(?:\?[^\s#]*)?$/, { error: 'must be an absolute path such as "/v1/embeddings"' }),
    method: z
      .string({ error: 'must be an HTTP method such as "POST"' })
      .regex(/^[A-Za-z]{3,7}$/, { error: 'must be an HTTP method such as "POST"' })
      .transform((m) => m.toUpperCase())
      .default('POST'),
    headers: z.record(z.string(), z.string({ error: 'must map header names to string values' }), { error: 'must be an object of string values, or null' }).nullable().default(null),
    data: z.unknown().default(null),
  },
  { error: 'must be a JSON object with path, method, headers and data' },
);
export const INVOCATION_FIELDS = fieldsOf(InvocationRequestSchema);
export type InvocationRequest = z.output<typeof InvocationRequestSchema>;

/** Headers that describe one connection, never forwarded by a proxy (RFC 9110 7.6.1), plus framing. */
export const HOP_BY_HOP_HEADERS = [
  'connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade',
  'host', 'content-length',
] as const;

export function validateInvocationRequest(body: unknown): Result<InvocationRequest> {
  const parsed = InvocationRequestSchema.safeParse(body);
  if (!parsed.success) {
    const detail = formatIssues(parsed.error.issues, { fields: { '': INVOCATION_FIELDS }, body: 'the invocation body' });
    return { ok: false, problem: problem('validation', detail) };
  }
  const { path, method, headers } = parsed.data;
  const pathname = path.split('?')[0]!;
  // The routes' own rule, so neither "/x/../invocations" nor "/%69nvocations" reaches a route by another spelling.
  const fault = pathSpellingFault(path);
  if (fault) return { ok: false, problem: problem('validation', `path must be a plain absolute path: ${pathSpellingDetail(path, fault)}`) };
  if (pathname === '/invocations') {
    return { ok: false, problem: problem('validation', 'path must name an API route such as "/v1/embeddings", not /invocations itself') };
  }
  if (method === 'HEAD') {
    return { ok: false, problem: problem('validation', 'method HEAD is not proxied: its answer has no body to carry back through /invocations; send "GET" for the same status and headers with the body') };
  }
  if (!(INVOCATION_METHODS as readonly string[]).includes(method)) {
    return { ok: false, problem: problem('validation', `method must be one of ${INVOCATION_METHODS.join(', ')}, got "${method}"`) };
  }
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (!HEADER_NAME.test(name)) return { ok: false, problem: problem('validation', `headers has an invalid header name ${JSON.stringify(name.slice(0, 100))}`) };
    if (BAD_HEADER_VALUE.test(value)) return { ok: false, problem: problem('validation', `headers[${JSON.stringify(name)}] has an invalid value (a line break or NUL)`) };
  }
  return { ok: true, value: parsed.data };
}
