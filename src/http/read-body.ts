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

export async function readJsonBody(request: Request, maxBytes: number): Promise<Result<unknown>> {
  // No body at all (e.g. an invocation with "data": null) is the problem to name, not its type.
  if (!request.body) return fail('validation', 'the request body is empty; send a JSON object with model and texts');
  const contentType = request.headers.get('content-type');
  if (!contentType || !JSON_TYPE.test(contentType)) {
    return fail('validation', `Content-Type must be application/json, got ${contentType ? `"${contentType.slice(0, 100)}"` : 'none'}`);
  }
  const tooLarge = () => fail('requestTooLarge', `the request body exceeds this server's limit of ${maxBytes} bytes; send fewer or shorter texts per request`);
  const declared = Number(request.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) return tooLarge();

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
  if (size === 0) return fail('validation', 'the request body is empty; send a JSON object with model and texts');
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) (bytes.set(chunk, offset), (offset += chunk.byteLength));
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return fail('validation', 'the request body is not valid UTF-8');
  }
  const depth = nestingDepthOver(text, MAX_JSON_DEPTH);
  if (depth) {
    return fail('validation', `the request body nests arrays or objects more than ${MAX_JSON_DEPTH} levels deep (at character ${depth.at}); no field of this API needs more than a few`);
  }
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return fail('validation', `the request body is not valid JSON (${messageOf(error)})`);
  }
}

function fail(code: 'validation' | 'requestTooLarge', detail: string): Result<never> {
  return { ok: false, problem: problem(code, detail) };
}

/** Where `json` first nests deeper than `max` (outside strings), scanning without recursion; null if never. */
export function nestingDepthOver(json: string, max: number): { at: number } | null {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const ch = json.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c) i++; // backslash: skip the escaped character
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x5b || ch === 0x7b) {
      if (++depth > max) return { at: i };
    } else if (ch === 0x5d || ch === 0x7d) depth--;
  }
  return null;
}
