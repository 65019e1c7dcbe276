// Typed errors of the lexembed client: one class per status, made by one factory.

export class LexembedError extends Error {
  override name = 'LexembedError';
}

/**
 * An API error: an HTTP error answer (status, the problem fields of spec 2.5, headers), or, in the
 * subclasses with no status, no answer at all (connection, timeout, abort), as the official SDKs do.
 */
export class APIError extends LexembedError {
  override name = 'APIError';

  constructor(
    readonly status: number | undefined,
    readonly title: string | undefined,
    readonly detail: string | null | undefined,
    readonly type: string | undefined,
    readonly headers: Headers | undefined,
    /** The decoded body as received (a problem, or anything else). */
    readonly body: unknown,
    message?: string,
    options?: { cause?: unknown },
  ) {
    super(message ?? `${status} ${title ?? 'error'}${detail ? `: ${detail}` : ''}`, options);
  }

  /** The parsed problem document (or other JSON object) the server answered with. */
  get error(): Record<string, unknown> | undefined {
    const body = this.body;
    return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
  }

  /** The server's `x-request-id`, to quote when reporting a problem. */
  get requestID(): string | null {
    return this.headers?.get('x-request-id') ?? null;
  }
}

export class BadRequestError extends APIError {
  override name = 'BadRequestError';
}
export class AuthenticationError extends APIError {
  override name = 'AuthenticationError';
}
export class PaymentRequiredError extends APIError {
  override name = 'PaymentRequiredError';
}
export class PermissionDeniedError extends APIError {
  override name = 'PermissionDeniedError';
}
export class NotFoundError extends APIError {
  override name = 'NotFoundError';
}
export class RequestTooLargeError extends APIError {
  override name = 'RequestTooLargeError';
}
export class ConflictError extends APIError {
  override name = 'ConflictError';
}
export class UnprocessableEntityError extends APIError {
  override name = 'UnprocessableEntityError';
}
export class RateLimitError extends APIError {
  override name = 'RateLimitError';
}
export class InternalServerError extends APIError {
  override name = 'InternalServerError';
}

/** The request never got an HTTP answer (refused, reset, DNS…). */
export class APIConnectionError extends APIError {
  override name = 'APIConnectionError';
  constructor(message = 'Connection error.', options?: { cause?: unknown }) {
    super(undefined, undefined, undefined, undefined, undefined, undefined, message, options);
  }
}

export class APIConnectionTimeoutError extends APIConnectionError {
  override name = 'APIConnectionTimeoutError';
  constructor(message = 'Request timed out.') {
    super(message);
  }
}

/** The caller's AbortSignal cancelled the request. */
export class APIUserAbortError extends APIError {
  override name = 'APIUserAbortError';
  constructor(message = 'Request was aborted.') {
    super(undefined, undefined, undefined, undefined, undefined, undefined, message);
  }
}

const BY_STATUS: Record<number, typeof APIError> = {
  400: BadRequestError,
  401: AuthenticationError,
  402: PaymentRequiredError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  413: RequestTooLargeError,
  422: UnprocessableEntityError,
  429: RateLimitError,
};

/** Maps a status and decoded body to the error class for it. */
export function makeAPIError(status: number, body: unknown, headers: Headers): APIError {
  const Class = BY_STATUS[status] ?? (status >= 500 ? InternalServerError : APIError);
  const p = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  return new Class(status, str(p.title), p.detail === null ? null : str(p.detail), str(p.type), headers, body);
}
