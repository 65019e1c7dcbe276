// What the HTTP layer knows of one request while serving it, in one object: observe.ts makes it
// first (the request id), register.ts fills in the meter's ticket, the answer's input tokens and
// whether the answer already carries the request id and common headers, and observe.ts logs from
// it at the end. The one Hono variable of a request; nothing outside src/http reads it.
import type { Context } from 'hono';
import type { Ticket } from '../usage/meter.ts';

export interface RequestState {
  /** The request id, given (x-request-id) or new. */
  readonly id: string;
  /** The usage meter's ticket, where the route meters and keys are on. */
  ticket?: Ticket;
  /** The answer's input tokens (an /invocations inner call's, carried back to the outer request); null: none. */
  inputTokens: number | null;
  /** The answer was built with the request id and the common headers. */
  headersWritten: boolean;
}

export type Env = { Variables: { request: RequestState } };

/** The request's state (set by observeRequests, the first middleware). */
export const requestOf = (c: Context<Env>): RequestState => c.get('request');
