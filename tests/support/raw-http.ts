// Sends bytes over a plain TCP socket and reads the answer until the server closes it: for
// requests fetch() would tidy or refuse to send (raw paths, odd methods, huge headers).
import { connect } from 'node:net';

export interface RawAnswer {
  /** The status code, or null when the connection ended with no answer (a reset or a bare close). */
  readonly status: number | null;
  readonly headers: Record<string, string>;
  readonly body: string;
  /** The socket error, if the connection failed (e.g. ECONNRESET). */
  readonly error?: string;
}

export function rawRequest(url: string, bytes: string | Buffer): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    let error: string | undefined;
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
    socket.on('close', () => resolve({ ...parseAnswer(Buffer.concat(chunks).toString('utf8')), ...(error ? { error } : {}) }));
    socket.write(bytes);
  });
}

/** An HTTP/1.1 request with Connection: close, so the answer ends with the connection. */
export function httpMessage(method: string, target: string, headers: Record<string, string> = {}, body = ''): string {
  const lines = [`${method} ${target} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (body) lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}

function parseAnswer(text: string): Omit<RawAnswer, 'error'> {
  const end = text.indexOf('\r\n\r\n');
  if (!text.startsWith('HTTP/1.1 ') || end < 0) return { status: null, headers: {}, body: text };
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = text.slice(end + 4);
  if (headers['transfer-encoding'] === 'chunked') body = unchunk(body);
  return { status: Number(statusLine!.split(' ')[1]), headers, body };
}

function unchunk(body: string): string {
  let out = '';
  for (let at = 0; ; ) {
    const lineEnd = body.indexOf('\r\n', at);
    const size = parseInt(body.slice(at, lineEnd), 16);
    if (!size) return out;
    out += body.slice(lineEnd + 2, lineEnd + 2 + size);
    at = lineEnd + 2 + size + 2;
  }
}
