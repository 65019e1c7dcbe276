// The errors page every problem `type` points to: one anchor per catalogue status.
import { PROBLEM_CATALOGUE } from '../contract/index.ts';

const MEANINGS: Record<string, string> = {
  '400-validation-error': 'The request was invalid or could not be processed. The detail names the field and the rule it broke.',
  '401-not-authenticated': 'The API key is missing, malformed, unknown, expired or revoked, or not authorised for the resource.',
  '402-payment-required': 'The account has overdue invoices; pay them to restore access.',
  '403-access-forbidden': 'Access is not allowed: the account is inactive, its e-mail is unverified, or it has no subscription to the usage-based plan.',
  '404-not-found':
    "No route exists at this path, or the route is part of the API but this deployment does not serve it: the detail says which and why (e.g. POST /v1/rerankings for a model folder without a reranking fit, POST /v1/embeddings/sparse for one without a lexical table).",
  '405-method-not-allowed': 'The route exists but not for this HTTP method; the Allow header lists the methods it takes.',
  '413-request-too-large': 'The request body is larger than the server accepts.',
  '429-too-many-requests':
    "A limit was reached: the key's requests or input tokens per minute (Rate limit exceeded error; retry after the Retry-After delay, and see the RateLimit and RateLimit-Policy headers), or the account's monthly token quota (Quota exceeded error; it renews on the 1st of the month, UTC).",
  '500-internal-server-error': 'An unexpected error occurred while processing the request. Retry; if it persists, report it.',
  '503-service-unavailable': 'The server cannot take the request now (model loading or overloaded); retry after the Retry-After delay.',
};

export function renderErrorsPage(): string {
  const byAnchor = new Map<string, { status: number; titles: string[] }>();
  for (const entry of Object.values(PROBLEM_CATALOGUE)) {
    const group = byAnchor.get(entry.anchor) ?? { status: entry.status, titles: [] };
    group.titles.push(entry.title);
    byAnchor.set(entry.anchor, group);
  }
  const sections = [...byAnchor]
    .map(
      ([anchor, { status, titles }]) =>
        `<section id="${anchor}"><h2>${status}</h2><p>${MEANINGS[anchor] ?? ''}</p><ul>${titles.map((t) => `<li>${t}</li>`).join('')}</ul></section>`,
    )
    .join('\n');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>lexembed API errors</title></head>
<body><h1>Errors</h1><p>Every error is an RFC 7807 problem detail (<code>application/problem+json</code>) whose <code>type</code> links to a section below.</p>
${sections}</body></html>`;
}
