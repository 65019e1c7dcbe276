// Reads a JSON request body under a byte limit, streaming: an oversized body is refused
// from its Content-Length, or as soon as the bytes read pass the limit, never buffered whole.
import { problem, type Result } from '../contract/index.ts';
import { messageOf } from '../util/message-of.ts';

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;
/**
 * Deepest nesting a body may have. Every body of the API needs 4 at most ({data: {texts: [...]}}
 * through /invocations); code that walks a value recursively (JSON.stringify, validation) would
 * overflow the stack on thousands.
 */
export const MAX_JSON_DEPTH = 64;

const emptyBody = () => fail('validation', 'the request body is empty; send a JSON object with model and texts');

export async function readJsonBody(request: Request, maxBytes: number): Promise<Result<unknown>> {
  const declared = Number(request.headers.get('content-length') ?? NaN);
  // No body at all (e.g. an invocation with "data": null) is the problem to name, not its type. A
  // request that declares its length has a body (maybe empty); only otherwise is `.body` asked,
  // as on Node it makes the adapter build a whole Request (measured: ~65 µs a request).
  if (!Number.isFinite(declared) && !request.body) return emptyBody();
  const contentType = request.headers.get('content-type');
  if (!contentType || !JSON_TYPE.test(contentType)) {
    return fail('validation', `Content-Type must be application/json, got ${contentType ? `"${contentType.slice(0, 100)}"` : 'none'}`);
  }
  const tooLarge = () => fail('requestTooLarge', `the request body exceeds this server's limit of ${maxBytes} bytes; send fewer or shorter texts per request`);
  if (Number.isFinite(declared) && declared > maxBytes) return tooLarge();

  // A declared length within the limit is all the body can be (the HTTP parser holds it to that): read it in one go.
  if (Number.isFinite(declared)) return parseJson(new Uint8Array(await request.arrayBuffer()));
  if (!request.body) return emptyBody();
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      return tooLarge();
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) (bytes.set(chunk, offset), (offset += chunk.byteLength));
  return parseJson(bytes);
}

function parseJson(bytes: Uint8Array): Result<unknown> {
  if (bytes.byteLength === 0) return emptyBody();
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return fail('validation', 'the request body is not valid UTF-8');
  }
  let value: unknown;
  try {
    value = JSON.parse(text); // V8's parser is not recursive: any depth parses
  } catch (error) {
    return fail('validation', `the request body is not valid JSON (${messageOf(error)})`);
  }
  if (nestedDeeperThan(value, MAX_JSON_DEPTH)) {
    return fail('validation', `the request body nests arrays or objects more than ${MAX_JSON_DEPTH} levels deep; no field of this API needs more than a few`);
  }
  return { ok: true, value };
}

function fail(code: 'validation' | 'requestTooLarge', detail: string): Result<never> {
  return { ok: false, problem: problem(code, detail) };
}

/** Whether `value` nests arrays or objects deeper than `max`, walked without recursion (stopping there). */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth + 1 > max) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}
