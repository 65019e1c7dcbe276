// The Node adapter: serves the Hono app over node:http, hands it the raw request target, answers
// requests Node's own parser refuses as problems, and drains without dropping received requests.
import { getRequestListener } from '@hono/node-server';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { Server as NetServer, type AddressInfo, type Socket } from 'node:net';
import { PROBLEM_CATALOGUE, PROBLEM_CONTENT_TYPE, problem, problemStatus, toProblemDocument, type Problem } from '../contract/index.ts';
import { problemResponse } from '../http/problem-response.ts';
import { RAW_TARGET } from '../http/raw-target.ts';

/** Anything with a fetch handler, e.g. the Hono app. */
export interface FetchApp {
  fetch(request: Request, env?: Record<string, unknown>): Response | Promise<Response>;
}

export interface ServerOptions {
  readonly port: number;
  readonly host: string;
  /** Base of problem `type` URIs for the answers this adapter writes itself (default: the server's /docs). */
  readonly docsUrl?: string;
  /** Largest request head (request line and headers) in bytes; larger ones get a 413. Node's default: 16 KiB. */
  readonly maxHeaderBytes?: number;
}

export interface DrainOutcome {
  /** Requests received before the drain that had no answer at its limit: each got a 503. */
  readonly unfinished: number;
}

export interface RunningServer {
  readonly url: string;
  readonly port: number;
  /**
   * Stops accepting connections and answers every request already received (those waiting in
   * the listen backlog and socket buffers included, with `Connection: close`); after `drainMs`,
   * whatever is still unanswered gets a 503 problem, then the connections close. Resolves once all
   * are closed.
   */
  close(drainMs?: number): Promise<DrainOutcome>;
  /** Drops every open connection. */
  closeAllConnections(): void;
}

const DEFAULT_MAX_HEADER_BYTES = 16 * 1024;
/** Longest a drain spends taking in connections that were waiting when it began… */
const SETTLE_MS = 3_000;
/** …and how long without a new connection counts as the backlog being empty. */
const SETTLE_QUIET_MS = 100;
/**
 * How long a connection with no request in flight is kept during a drain: a request whose bytes
 * had already arrived is read well within it, so only really idle connections are closed.
 */
const IDLE_GRACE_MS = 1_000;
/**
 * …and how long a connection that has not yet sent a request is kept: one accepted in the
 * drain's first moments may be a request whose bytes this process has not had the time to read
 * (on a loaded machine the event loop can fall a second behind), and closing it resets the client.
 */
const FIRST_REQUEST_GRACE_MS = 5_000;
/** How long a refused connection may go on sending before it is dropped. */
const REFUSED_LINGER_MS = 5_000;

export function startServer(app: FetchApp, options: ServerOptions): Promise<RunningServer> {
  const maxHeaderBytes = options.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES;
  let docsUrl = options.docsUrl ?? '/docs';
  const pending = new Set<ServerResponse>();
  /** Per open connection: requests in flight, and since when it has had none. */
  const connections = new Map<Socket, { inFlight: number; idleSince: number; requests: number }>();
  let lastConnectionAt = 0;
  let accepted = 0;
  let draining = false;
  const listener = getRequestListener((request: Request, env: { incoming: { url?: string } }) => app.fetch(request, { [RAW_TARGET]: env.incoming.url }), {
    // A request target the URL parser rejects (e.g. "*"): the client's mistake, said as a problem.
    errorHandler: () => problemResponse(problem('validation', 'the request target is not a path (such as /v1/embeddings) or the Host header is invalid'), docsUrl),
  });
  const http: HttpServer = createServer({ maxHeaderSize: maxHeaderBytes }, listener);
  http.on('connection', (socket: Socket) => {
    lastConnectionAt = performance.now();
    accepted++;
    connections.set(socket, { inFlight: 0, idleSince: lastConnectionAt, requests: 0 });
    socket.once('close', () => connections.delete(socket));
  });
  // Runs before the app's listener: every received request is tracked until its answer is sent.
  http.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    pending.add(res);
    const connection = connections.get(req.socket);
    if (connection) (connection.inFlight++, connection.requests++);
    res.once('close', () => {
      pending.delete(res);
      if (connection) (connection.inFlight--, (connection.idleSince = performance.now()));
    });
    if (draining) res.setHeader('connection', 'close');
  });
  /** Ends connections with no request in flight for IDLE_GRACE_MS, or FIRST_REQUEST_GRACE_MS if none has come on them yet. */
  const closeQuietConnections = () => {
    const now = performance.now();
    for (const [socket, c] of connections) if (c.inFlight === 0 && now - c.idleSince >= (c.requests ? IDLE_GRACE_MS : FIRST_REQUEST_GRACE_MS)) socket.destroy();
  };
  http.on('clientError', (error: Error & { code?: string }, socket: Socket) => refuseMalformed(error, socket, maxHeaderBytes, docsUrl));

  return new Promise((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port, options.host, () => {
      http.off('error', reject);
      const info = http.address() as AddressInfo;
      const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
      const url = `http://${host}:${info.port}`;
      docsUrl = options.docsUrl ?? `${url}/docs`;
      resolve({
        url,
        port: info.port,
        async close(drainMs = Infinity) {
          draining = true;
          for (const res of pending) if (!res.headersSent) res.setHeader('connection', 'close');
          // Connections waiting in the listen backlog are requests clients have sent, and closing
          // the listener would reset them: keep accepting until none has come for SETTLE_QUIET_MS
          // (at most SETTLE_MS), then stop listening.
          // Quiet is judged after an event-loop turn (a timer can fire late, after a busy stretch,
          // before the loop has polled the listener again).
          const settleUntil = performance.now() + SETTLE_MS;
          for (let seen = accepted; performance.now() < settleUntil; seen = accepted) {
            await delay(10);
            await new Promise<void>((resolve) => setImmediate(resolve));
            if (accepted === seen && performance.now() - lastConnectionAt >= SETTLE_QUIET_MS) break;
          }
          const closed = new Promise<void>((done) => NetServer.prototype.close.call(http, () => done()));
          closeQuietConnections();
          // Answers sent during the drain carry Connection: close, so their connections end themselves.
          let timer: NodeJS.Timeout | undefined;
          const timedOut = new Promise<'timeout'>((done) => {
            if (Number.isFinite(drainMs)) timer = setTimeout(() => done('timeout'), drainMs);
          });
          const quiet = setInterval(closeQuietConnections, 50);
          try {
            if ((await Promise.race([closed, timedOut])) !== 'timeout') return { unfinished: 0 };
            let unfinished = 0;
            for (const res of pending) {
              if (res.headersSent) continue;
              unfinished++;
              const p = problem('unavailable', `the server is shutting down and could not finish this request within its ${drainMs / 1000} s drain; retry it`, { 'retry-after': '1' });
              res.writeHead(problemStatus(p), { 'content-type': PROBLEM_CONTENT_TYPE, connection: 'close', ...p.headers });
              res.end(JSON.stringify(toProblemDocument(p, docsUrl)));
            }
            // What is left is mid-answer (a streamed body) or idle: nothing more can be said on it.
            setTimeout(() => http.closeAllConnections(), 1_000).unref();
            await closed;
            return { unfinished };
          } finally {
            clearTimeout(timer);
            clearInterval(quiet);
          }
        },
        closeAllConnections: () => http.closeAllConnections(),
      });
    });
  });
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Node's parser refused the request before the app saw it: answer a problem instead of a bare
 * "400 Bad Request", and keep reading what the client still sends (closing on unread bytes would
 * reset the connection before the client reads the answer).
 */
function refuseMalformed(error: Error & { code?: string }, socket: Socket, maxHeaderBytes: number, docsUrl: string) {
  if (error.code === 'ECONNRESET' || !socket.writable) return socket.destroy();
  const p: Problem =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? problem('requestTooLarge', `the request line and headers exceed this server's limit of ${maxHeaderBytes} bytes; send a shorter Authorization header (API keys are about 60 characters) and fewer headers`)
      : error.code === 'HPE_INVALID_METHOD'
        ? problem('methodNotAllowed', 'the request method is not one this server knows; the API uses POST (and GET for /health, /docs, /openapi.json)')
        : error.code === 'HPE_HEADER_TIMEOUT' || error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? problem('validation', 'the request headers did not arrive in time; send the whole request promptly')
          : problem('validation', `the request is not valid HTTP/1.1 (${error.code ?? error.message}); check the request line and headers`);
  const body = JSON.stringify(toProblemDocument(p, docsUrl));
  const status = problemStatus(p);
  const reason = { 400: 'Bad Request', 405: 'Method Not Allowed', 413: 'Content Too Large' }[status] ?? PROBLEM_CATALOGUE[p.code].title;
  const head = [`HTTP/1.1 ${status} ${reason}`, `Content-Type: ${PROBLEM_CONTENT_TYPE}`, `Content-Length: ${Buffer.byteLength(body)}`, 'Connection: close'];
  if (p.code === 'methodNotAllowed') head.push('Allow: GET, POST');
  socket.on('data', () => {}); // discard the rest of the request
  socket.setTimeout(REFUSED_LINGER_MS, () => socket.destroy());
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
}
