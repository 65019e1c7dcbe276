// The OpenAI-compatible routes (/openai/v1) through app.request(), on the deterministic fake
// backend: the request and response shapes, base64, tasks by input_type and by model alias,
// errors in OpenAI's shape at the spec's statuses, the models list, and proxy mode.
import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/http/app.ts';
import { createEmbedder } from '../../src/embedder/embedder.ts';
import { problem } from '../../src/contract/index.ts';
import { createFakeBackend, fakeSettings } from '../support/fake-backend.ts';

const MODEL = 'legal-2-embedder';
const post = (app: ReturnType<typeof createApp>, body: unknown, headers: Record<string, string> = {}) =>
  app.request('/openai/v1/embeddings', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
const decode = (b64: string) => {
  const bytes = Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
  const view = new DataView(bytes.buffer);
  return Array.from({ length: bytes.length / 4 }, (_, i) => view.getFloat32(i * 4, true));
};
async function expectError(res: Response, status: number, code: string, type: string, param: string | null, message?: RegExp) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = (await res.json()) as { error: { message: string; type: string; param: string | null; code: string } };
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error).toMatchObject({ code, type, param });
  if (message) expect(body.error.message).toMatch(message);
  return body.error;
}

describe('POST /openai/v1/embeddings', () => {
  const app = createApp({ embedder: createEmbedder(fakeSettings(), createFakeBackend()) });

  it("answers OpenAI's shape: list of embeddings by index, the model as sent, usage in prompt and total tokens", async () => {
    const res = await post(app, { input: ['a b', 'c'], model: MODEL });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({ object: 'list', model: MODEL, usage: { prompt_tokens: 4 + 3, total_tokens: 4 + 3 } });
    expect(body.data.map((d: { object: string; index: number; embedding: number[] }) => [d.object, d.index, d.embedding.length])).toEqual([['embedding', 0, 6], ['embedding', 1, 6]]);
    // The same vectors as the spec's route.
    const spec = await (await app.request('/v1/embeddings', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: MODEL, texts: ['a b', 'c'] }) })).json();
    expect(body.data.map((d: { embedding: number[] }) => d.embedding)).toEqual(spec.embeddings.map((e: { embedding: number[] }) => e.embedding));
  });

  it('base64 is little-endian float32 of the same vector; dimensions truncate and renormalise', async () => {
    const floats = (await (await post(app, { input: 'lease term', model: MODEL, dimensions: 4 })).json()).data[0].embedding as number[];
    const b64 = (await (await post(app, { input: 'lease term', model: MODEL, dimensions: 4, encoding_format: 'base64' })).json()).data[0].embedding as string;
    expect(typeof b64).toBe('string');
    expect(Array.from(decode(b64))).toEqual(floats.map(Math.fround)); // the JSON floats are float32 shortest decimals: the same float32s
    expect(Math.hypot(...floats)).toBeCloseTo(1, 5);
  });

  it('the task comes from input_type or a model alias (same vectors), and the alias is echoed', async () => {
    const vec = async (body: object) => (await (await post(app, { input: 'notice', ...body })).json()).data[0].embedding;
    const query = await vec({ model: MODEL, input_type: 'query' });
    expect(await vec({ model: `${MODEL}:query` })).toEqual(query);
    expect(await vec({ model: MODEL })).not.toEqual(query); // no task: no query prompt
    expect((await (await post(app, { input: 'x', model: `${MODEL}:document` })).json()).model).toBe(`${MODEL}:document`);
    await expectError(await post(app, { input: 'x', model: `${MODEL}:query`, input_type: 'document' }), 400, 'invalid_request', 'invalid_request_error', 'input_type', /name different tasks/);
  });

  it('refuses what OpenAI-style clients get wrong, each as an OpenAI error naming the field', async () => {
    await expectError(await post(app, { input: [[1, 2, 3]], model: MODEL }), 400, 'invalid_request', 'invalid_request_error', 'input', /^input as token ids is not supported/);
    await expectError(await post(app, { input: [1, 2], model: MODEL }), 400, 'invalid_request', 'invalid_request_error', 'input', /token ids/);
    await expectError(await post(app, { input: 'x', model: 'text-embedding-3-small' }), 400, 'invalid_request', 'invalid_request_error', 'model', /model must be one of "legal-2-embedder", "legal-2-embedder:query", "legal-2-embedder:document"/);
    await expectError(await post(app, { input: '  ', model: MODEL }), 400, 'invalid_request', 'invalid_request_error', 'input', /input must contain at least one non-whitespace character/);
    await expectError(await post(app, { input: Array(2049).fill('a'), model: MODEL }), 400, 'invalid_request', 'invalid_request_error', 'input', /at most 2048/);
    await expectError(await post(app, { input: 'x', model: MODEL, encoding_format: 'int8' }), 400, 'invalid_request', 'invalid_request_error', 'encoding_format');
    await expectError(await post(app, { input: 'x', model: MODEL, dimensions: 9 }), 400, 'unsupported_dimensions', 'invalid_request_error', 'dimensions', /exceeds the maximum of 8/);
    await expectError(await post(app, { input: 'x', model: MODEL, temperature: 1 }), 400, 'invalid_request', 'invalid_request_error', null, /unknown field "temperature"; allowed fields are input, model, encoding_format, dimensions, user, input_type/);
    await expectError(await post(app, '{"input": '), 400, 'invalid_request', 'invalid_request_error', null, /not valid JSON/);
    expect((await post(app, { input: 'x', model: MODEL, user: 'u-1' })).status).toBe(200);
  });

  it('takes 2,048 inputs in one request (split over the batching queue), in order', async () => {
    const input = Array.from({ length: 2048 }, (_, i) => `clause ${i}`);
    const body = await (await post(app, { input, model: MODEL })).json();
    expect(body.data).toHaveLength(2048);
    expect(body.data.every((d: { index: number }, i: number) => d.index === i)).toBe(true);
  });

  it('authentication failures, unknown routes and wrong methods under /openai/v1 are OpenAI errors at the spec statuses', async () => {
    const guarded = createApp({ embedder: createEmbedder(fakeSettings(), createFakeBackend()), authenticate: async () => problem('incorrectKey', 'the API key does not exist') });
    await expectError(await post(guarded, { input: 'x', model: MODEL }), 401, 'invalid_api_key', 'authentication_error', null, /does not exist/);
    await expectError(await guarded.request('/openai/v1/models'), 401, 'invalid_api_key', 'authentication_error', null);
    const overdue = createApp({ embedder: createEmbedder(fakeSettings(), createFakeBackend()), authenticate: async () => problem('accountOverdue', 'pay') });
    await expectError(await post(overdue, { input: 'x', model: MODEL }), 402, 'account_overdue', 'insufficient_quota', null);
    await expectError(await app.request('/openai/v1/completions', { method: 'POST' }), 404, 'not_found', 'not_found_error', null);
    await expectError(await app.request('/openai/v1/embeddings'), 405, 'method_not_allowed', 'invalid_request_error', null, /use POST/);
    // The spec's routes keep problem details.
    expect((await app.request('/v1/nothing')).headers.get('content-type')).toBe('application/problem+json');
  });

  it('GET /openai/v1/models lists the model and its task aliases', async () => {
    const body = await (await app.request('/openai/v1/models')).json();
    expect(body).toEqual({
      object: 'list',
      data: [MODEL, `${MODEL}:query`, `${MODEL}:document`].map((id) => ({ id, object: 'model', created: 0, owned_by: 'lexembed' })),
    });
  });

  it('is served through /invocations in proxy mode, errors included', async () => {
    const proxy = createApp({ embedder: createEmbedder(fakeSettings(), createFakeBackend()), deployment: 'proxy' });
    const invoke = (data: unknown) => proxy.request('/invocations', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ path: '/openai/v1/embeddings', data }) });
    const ok = await (await invoke({ input: 'x', model: MODEL, encoding_format: 'base64' })).json();
    expect(typeof ok.data[0].embedding).toBe('string');
    await expectError(await invoke({ input: [[1]], model: MODEL }), 400, 'invalid_request', 'invalid_request_error', 'input');
  });

  it('is in /openapi.json with its schemas and OpenAI error responses', async () => {
    const doc = await (await app.request('/openapi.json')).json();
    const op = doc.paths['/openai/v1/embeddings'].post;
    expect(op.requestBody.content['application/json'].schema.$ref).toBe('#/components/schemas/OpenAIEmbeddingRequest');
    expect(op.responses['400'].content['application/json'].schema.$ref).toBe('#/components/schemas/OpenAIError');
    expect(Object.keys(doc.components.schemas.OpenAIEmbeddingRequest.properties)).toEqual(['input', 'model', 'encoding_format', 'dimensions', 'user', 'input_type', 'output_dtype']);
    expect(doc.paths['/openai/v1/models'].get.responses['200'].content['application/json'].schema.$ref).toBe('#/components/schemas/OpenAIModelList');
  });
});
