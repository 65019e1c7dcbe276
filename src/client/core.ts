// Transport of the lexembed client: fetch with a timeout, retries with exponential backoff and
// jitter, honouring retry-after-ms, retry-after and x-should-retry. Zero runtime dependencies.
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError, LexembedError, makeAPIError } from './errors.ts';
import { messageWithCause } from '../util/message-of.ts';

export interface ClientOptions {
  /** Defaults to the LEXEMBED_API_KEY environment variable where one exists. */
  apiKey?: string | null;
  /** Base address ending in /v1; defaults to LEXEMBED_BASE_URL, else http://127.0.0.1:8080/v1. */
  baseURL?: string;
  /** Per-attempt timeout in ms (default 60 000). */
  timeout?: number;
  /** Retries after the first attempt (default 2). */
  maxRetries?: number;
  /** A fetch implementation (default: the global fetch). */
  fetch?: typeof fetch;
  /**
   * Send every call through a private deployment's proxy endpoint (spec 4.3) instead:
   * the URL of its `/invocations`. Platform-wrapped errors are unwrapped.
   */
  invocationsURL?: string;
  defaultHeaders?: Record<string, string>;
}

/** Options of one call; each overrides the client's own. */
export interface RequestOptions {
  signal?: AbortSignal;
  /** Per-attempt timeout in ms. */
  timeout?: number;
  maxRetries?: number;
  /** Extra headers for this call. */
  headers?: Record<string, string>;
}

/** The answer's promise, which can also give the raw `Response`: `await promise.withResponse()`. */
export type APIPromise<T> = Promise<T> & { withResponse(): Promise<{ data: T; response: Response }> };

export const DEFAULT_BASE_URL = 'http://127.0.0.1:8080/v1';
const INITIAL_RETRY_DELAY_MS = 500;
const MAX_RETRY_DELAY_MS = 8_000;

export function readEnv(name: string): string | undefined {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  const value = env?.[name]?.trim();
  return value ? value : undefined;
}

export class Transport {
  readonly apiKey: string | null;
  readonly baseURL: string;
  readonly timeout: number;
  readonly maxRetries: number;
  readonly invocationsURL: string | undefined;
  private readonly fetchImpl: typeof fetch;
  private readonly defaultHeaders: Record<string, string>;

  constructor(options: ClientOptions = {}) {
    const apiKey = options.apiKey !== undefined ? options.apiKey : readEnv('LEXEMBED_API_KEY');
    if (apiKey === undefined && !options.invocationsURL) {
      throw new LexembedError(
        'The LEXEMBED_API_KEY environment variable is missing or empty; set it, or pass apiKey: new Lexembed({ apiKey: "lxk_v1_…" }) ' +
          '(apiKey: null for a server run with --no-auth).',
      );
    }
    this.apiKey = apiKey ?? null;
    this.baseURL = (options.baseURL ?? readEnv('LEXEMBED_BASE_URL') ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
    this.timeout = options.timeout ?? 60_000;
    this.maxRetries = options.maxRetries ?? 2;
    this.invocationsURL = options.invocationsURL;
    this.fetchImpl = options.fetch ?? ((...args) => fetch(...args));
    this.defaultHeaders = options.defaultHeaders ?? {};
  }

  /** POSTs JSON to `path` under the base URL (or through /invocations) and decodes the answer. */
  post<T>(path: string, body: unknown, options: RequestOptions = {}): APIPromise<T> {
    const raw = this.request<T>(path, body, options);
    const data = raw.then((r) => r.data);
    void data.catch(() => {}); // a caller who only uses withResponse() handles the rejection there
    return Object.assign(data, { withResponse: () => raw });
  }

  private async request<T>(path: string, body: unknown, options: RequestOptions): Promise<{ data: T; response: Response }> {
    const { url, init } = this.buildRequest(path, body, options.headers);
    const maxRetries = options.maxRetries ?? this.maxRetries;
    const timeout = options.timeout ?? this.timeout;
    for (let attempt = 0; ; attempt++) {
      if (options.signal?.aborted) throw new APIUserAbortError();
      const retriesLeft = maxRetries - attempt;
      let response: Response;
      try {
        response = await this.fetchWithTimeout(url, init, timeout, options.signal);
      } catch (error) {
        if (options.signal?.aborted) throw new APIUserAbortError();
        if (retriesLeft > 0) {
          await sleep(backoff(attempt));
          continue;
        }
        if (error instanceof APIConnectionTimeoutError) throw error;
        throw new APIConnectionError(`Connection error: ${init.method ?? 'GET'} ${url} failed: ${messageWithCause(error)}`, { cause: error });
      }
      if (response.ok) return { data: await parseSuccess<T>(response), response };
      const delay = retriesLeft > 0 && shouldRetry(response) ? retryDelay(response, attempt) : null;
      if (delay !== null) {
        await response.body?.cancel().catch(() => {});
        await sleep(delay);
        continue;
      }
      throw await this.toError(response);
    }
  }

  private buildRequest(path: string, body: unknown, extraHeaders: Record<string, string> = {}): { url: string; init: RequestInit } {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json', ...this.defaultHeaders, ...extraHeaders };
    if (this.invocationsURL) {
      // The proxied call: the API path as the service knows it (e.g. /v1/embeddings).
      const apiPath = new URL(this.baseURL).pathname.replace(/\/+$/, '') + path;
      return { url: this.invocationsURL, init: { method: 'POST', headers, body: JSON.stringify({ path: apiPath, method: 'POST', headers: null, data: body }) } };
    }
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    return { url: this.baseURL + path, init: { method: 'POST', headers, body: JSON.stringify(body) } };
  }

  private async fetchWithTimeout(url: string, init: RequestInit, timeout: number, signal?: AbortSignal): Promise<Response> {
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    let timedOut = false;
    const timer = setTimeout(() => ((timedOut = true), controller.abort()), timeout);
    try {
      return await this.fetchImpl(url, { ...init, signal: controller.signal });
    } catch (error) {
      if (timedOut) throw new APIConnectionTimeoutError(`Request timed out after ${timeout} ms.`);
      throw error;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  private async toError(response: Response): Promise<APIError> {
    const text = await response.text().catch(() => '');
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {}
    if (this.invocationsURL) {
      const unwrapped = unwrapPlatformError(body);
      if (unwrapped) return makeAPIError(unwrapped.status, unwrapped.problem, response.headers);
    }
    return makeAPIError(response.status, body, response.headers);
  }
}

/**
 * A hosting platform wraps a container's error as {OriginalStatusCode, OriginalMessage} with the
 * original body as a JSON string (spec 4.3 rule 3). Returns the original problem, or null when
 * the body is not such a wrapper around a problem.
 */
export function unwrapPlatformError(body: unknown): { status: number; problem: Record<string, unknown> } | null {
  if (typeof body !== 'object' || body === null) return null;
  const { OriginalStatusCode: status, OriginalMessage: message } = body as Record<string, unknown>;
  if (typeof status !== 'number' || typeof message !== 'string') return null;
  try {
    const problem = JSON.parse(message);
    if (typeof problem === 'object' && problem !== null && ('title' in problem || 'status' in problem || 'type' in problem)) return { status, problem };
  } catch {}
  return null;
}

/**
 * A 2xx body as JSON; anything else (an HTML page from a proxy, a truncated body) is an APIError
 * that says what came back, not a bare SyntaxError.
 */
async function parseSuccess<T>(response: Response): Promise<T> {
  const text = await response.text();
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    const type = response.headers.get('content-type') ?? 'no content type';
    throw new APIError({
      status: response.status,
      headers: response.headers,
      body: text,
      message: `the server answered ${response.status} with a body that is not JSON (${type}, ${text.length} characters: ${JSON.stringify(text.slice(0, 80))}); check the base URL points at a lexembed API`,
      cause: error,
    });
  }
}

function shouldRetry(response: Response): boolean {
  const hint = response.headers.get('x-should-retry');
  if (hint === 'true') return true;
  if (hint === 'false') return false;
  return response.status === 408 || response.status === 409 || response.status === 429 || response.status >= 500;
}

/** The longest wait a retry honours: a server asking for more (a spent monthly quota) gets its error thrown. */
const MAX_HONOURED_WAIT_MS = 60_000;

/** Milliseconds to wait before retrying, or null when the server asks for longer than a retry waits. */
function retryDelay(response: Response, attempt: number): number | null {
  const ms = Number(response.headers.get('retry-after-ms'));
  if (Number.isFinite(ms) && ms >= 0 && response.headers.has('retry-after-ms')) return ms <= MAX_HONOURED_WAIT_MS ? ms : null;
  const after = response.headers.get('retry-after');
  if (after) {
    const seconds = Number(after);
    const delay = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(after) - Date.now();
    if (Number.isFinite(delay) && delay > MAX_HONOURED_WAIT_MS) return null;
    if (Number.isFinite(delay) && delay >= 0) return delay;
  }
  return backoff(attempt);
}

/** Exponential backoff with up to 25 % jitter: ~0.5 s, 1 s, 2 s … capped at 8 s. */
function backoff(attempt: number): number {
  const base = Math.min(INITIAL_RETRY_DELAY_MS * 2 ** attempt, MAX_RETRY_DELAY_MS);
  return base * (1 - Math.random() * 0.25);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
