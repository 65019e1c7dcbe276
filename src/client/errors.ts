// Typed errors of the lexembed client: one class per status, made by one factory.

export class LexembedError extends Error {
  override name = 'LexembedError';
}

/** An HTTP error answer. Carries the problem fields (spec 2.5) and the response headers. */
export class APIError extends LexembedError {
  override name = 'APIError';
  constructor(
    readonly status: number,
    readonly title: string | undefined,
    readonly detail: string | null | undefined,
    readonly type: string | undefined,
    readonly headers: Headers,
    /** The decoded body as received (a problem, or anything else). */
    readonly body: unknown,
  ) {
    super(`${status} ${title ?? 'error'}${detail ? `: ${detail}` : ''}`);
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
export class RateLimitError extends APIError {
  override name = 'RateLimitError';
}
export class InternalServerError extends APIError {
  override name = 'InternalServerError';
}

/** The request never got an HTTP answer (refused, reset, DNS…). */
export class APIConnectionError extends LexembedError {
  override name = 'APIConnectionError';
  constructor(message = 'Connection error.', options?: { cause?: unknown }) {
    super(message, options);
  }
}

export class APIConnectionTimeoutError extends APIConnectionError {
  override name = 'APIConnectionTimeoutError';
  constructor(message = 'Request timed out.') {
    super(message);
  }
}

const BY_STATUS: Record<number, typeof APIError> = {
  400: BadRequestError,
  401: AuthenticationError,
  402: PaymentRequiredError,
  403: PermissionDeniedError,
  404: NotFoundError,
  413: RequestTooLargeError,
  429: RateLimitError,
};

/** Maps a status and decoded body to the error class for it. */
export function makeAPIError(status: number, body: unknown, headers: Headers): APIError {
  const Class = BY_STATUS[status] ?? (status >= 500 ? InternalServerError : APIError);
  const p = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  return new Class(status, str(p.title), p.detail === null ? null : str(p.detail), str(p.type), headers, body);
}
