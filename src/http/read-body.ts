// Reads a JSON request body under a byte limit, streaming: an oversized body is refused
// from its Content-Length, or as soon as the bytes read pass the limit, never buffered whole.
import { problem, type Result } from '../contract/index.ts';
import { messageOf } from '../util/message-of.ts';

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

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
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return fail('validation', `the request body is not valid JSON (${messageOf(error)})`);
  }
}

function fail(code: 'validation' | 'requestTooLarge', detail: string): Result<never> {
  return { ok: false, problem: problem(code, detail) };
}
