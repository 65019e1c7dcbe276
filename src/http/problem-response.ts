// The one place a Problem becomes an HTTP response: application/problem+json, or OpenAI's error
// shape on the OpenAI-compatible routes.
import { PROBLEM_CONTENT_TYPE, problemStatus, toOpenAIError, toProblemDocument, type Problem } from '../contract/index.ts';

export function problemResponse(p: Problem, docsUrl: string): Response {
  return new Response(JSON.stringify(toProblemDocument(p, docsUrl)), {
    status: problemStatus(p),
    headers: { 'content-type': PROBLEM_CONTENT_TYPE, ...p.headers },
  });
}

/** The same problem in OpenAI's error shape, for the /openai/v1 routes (same status and headers). */
export function openAIErrorResponse(p: Problem): Response {
  return new Response(JSON.stringify(toOpenAIError(p)), {
    status: problemStatus(p),
    headers: { 'content-type': 'application/json', ...p.headers },
  });
}
