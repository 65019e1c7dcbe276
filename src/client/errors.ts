// Typed errors of the lexembed client: one class per status, made by one factory.

export class LexembedError extends Error {
  override name = 'LexembedError';
}

/** What an APIError is made of (all optional: an error with no answer has no status). */
export interface APIErrorOptions {
  readonly status?: number;
  readonly title?: string;
  readonly detail?: string | null;
  /** The problem's `type` URI. */
  readonly type?: string;
  readonly headers?: Headers;
  /** The decoded body as received (a problem, or anything else). */
  readonly body?: unknown;
  /** Default: "<status> <title>: <detail>". */
  readonly message?: string;
  readonly cause?: unknown;
}

/**
 * An API error: an HTTP error answer (status, the problem fields of spec 2.5, headers), or, in the
 * subclasses with no status, no answer at all (connection, timeout, abort), as the official SDKs do.
 * @example new APIError({ status: 400, title: 'Validation error', detail: 'texts must …', headers, body })
 */
export class APIError extends LexembedError {
  override name = 'APIError';
  readonly status: number | undefined;
  readonly title: string | undefined;
  readonly detail: string | null | undefined;
  readonly type: string | undefined;
  readonly headers: Headers | undefined;
  /** The decoded body as received (a problem, or anything else). */
  readonly body: unknown;

  constructor(options: APIErrorOptions = {}) {
    const { status, title, detail } = options;
    super(options.message ?? `${status} ${title ?? 'error'}${detail ? `: ${detail}` : ''}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = status;
    this.title = title;
    this.detail = detail;
    this.type = options.type;
    this.headers = options.headers;
    this.body = options.body;
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
  declare readonly status: 400;
}
export class AuthenticationError extends APIError {
  override name = 'AuthenticationError';
  declare readonly status: 401;
}
export class PaymentRequiredError extends APIError {
  override name = 'PaymentRequiredError';
  declare readonly status: 402;
}
export class PermissionDeniedError extends APIError {
  override name = 'PermissionDeniedError';
  declare readonly status: 403;
}
export class NotFoundError extends APIError {
  override name = 'NotFoundError';
  declare readonly status: 404;
}
export class RequestTooLargeError extends APIError {
  override name = 'RequestTooLargeError';
  declare readonly status: 413;
}
export class ConflictError extends APIError {
  override name = 'ConflictError';
  declare readonly status: 409;
}
export class UnprocessableEntityError extends APIError {
  override name = 'UnprocessableEntityError';
  declare readonly status: 422;
}
export class RateLimitError extends APIError {
  override name = 'RateLimitError';
  declare readonly status: 429;
}
export class InternalServerError extends APIError {
  override name = 'InternalServerError';
  declare readonly status: number;
}

/** The request never got an HTTP answer (refused, reset, DNS…). */
export class APIConnectionError extends APIError {
  override name = 'APIConnectionError';
  declare readonly status: undefined;
  constructor(message = 'Connection error.', options?: { cause?: unknown }) {
    super({ message, cause: options?.cause });
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
  declare readonly status: undefined;
  constructor(message = 'Request was aborted.') {
    super({ message });
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
  return new Class({ status, title: str(p.title), detail: p.detail === null ? null : str(p.detail), type: str(p.type), headers, body });
}
