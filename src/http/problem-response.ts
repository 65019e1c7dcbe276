// The one place a Problem becomes an HTTP response (application/problem+json).
import { PROBLEM_CONTENT_TYPE, problemStatus, toProblemDocument, type Problem } from '../contract/index.ts';

export function problemResponse(p: Problem, docsUrl: string): Response {
  return new Response(JSON.stringify(toProblemDocument(p, docsUrl)), {
    status: problemStatus(p),
    headers: { 'content-type': PROBLEM_CONTENT_TYPE, ...p.headers },
  });
}
