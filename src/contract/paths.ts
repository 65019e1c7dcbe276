// One spelling per route: a request path names a route only as written, never through
// percent-escapes, "." or ".." segments or empty segments. The HTTP app (on the raw request
// target where the adapter knows it) and the /invocations proxy apply the same rule.

/**
 * Why `target` (a request target: path, optionally with a query) is not a plain path, or null when
 * it is one.
 * @example pathSpellingFault('/v1/%65mbeddings') // 'a percent-escape ("%65")'
 */
export function pathSpellingFault(target: string): string | null {
  const path = target.split('?')[0]!;
  if (!path.startsWith('/')) return 'not an absolute path';
  const percent = /%[\s\S]{0,2}/.exec(path);
  if (percent) return `a percent-escape ("${percent[0]}")`;
  if (path.includes('\\')) return 'a backslash';
  const segments = path.slice(1).split('/');
  if (segments.some((s) => s === '.' || s === '..')) return 'a "." or ".." segment';
  if (segments.slice(0, -1).some((s) => s === '')) return 'an empty segment ("//")';
  return null;
}

/** The detail that explains the rule, for the 404 (routes) or 400 (/invocations) that applies it. */
export function pathSpellingDetail(target: string, fault: string): string {
  return `the path "${target.split('?')[0]!.slice(0, 200)}" has ${fault}; routes are matched only as written, without percent-escapes, "." or ".." segments or "//" (use e.g. /v1/embeddings)`;
}
