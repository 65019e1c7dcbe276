// What the HTTP layer knows of one request while serving it, in one object: the pipeline's first
// stage makes it (pipeline.ts trackRequests: the request id), the stages fill in the answer's input
// tokens and whether the answer already carries the request id and common headers, and the last
// stage logs from it. Only pipeline.ts keeps it on Hono's context; /invocations passes it on to the
// route it dispatches to, so the inner answer's tokens are the outer request's.
export interface RequestState {
  /** The request id, given (x-request-id) or new. */
  readonly id: string;
  /** The answer's input tokens; null: none. */
  inputTokens: number | null;
  /** The answer was built with the request id and the common headers. */
  headersWritten: boolean;
}

export type Env = { Variables: { request: RequestState } };
