// The OpenAI-compatible embeddings API, served under /openai/v1 beside the spec's /v1: the
// request and response shapes the `openai` client, LangChain's OpenAIEmbeddings, the AI SDK's
// OpenAI-compatible provider and similar tools send and expect, mapped onto the same embedder,
// with errors in OpenAI's shape ({error: {message, type, param, code}}) at the same statuses.
import { z } from 'zod';
import { perModel } from './schema-cache.ts';
import { PROBLEM_CATALOGUE, problem, type Problem, type ProblemCode } from './problems.ts';
import { formatIssues, type ModelCapabilities, type Task } from './request.ts';
import { finiteNumbersOf } from './float-json.ts';
import { OUTPUT_DTYPES, quantizeVector, type OutputDtype } from './vectors.ts';
import { dimensionProblem, fieldsOf, integerAtLeast, nonBlankText, oneOf, required, taskProblem } from './rules.ts';
import type { Result } from './result.ts';

/** The prefix of the OpenAI-compatible routes. */
export const OPENAI_PREFIX = '/openai/v1';
/** Inputs per request (OpenAI's own limit); the batching queue splits them into model calls. */
export const MAX_OPENAI_INPUTS = 2048;
export const INPUT_TYPES = ['query', 'document'] as const;
export const ENCODING_FORMATS = ['float', 'base64'] as const;
/** `model` suffixes that choose the task for clients that cannot add a field. */
const ALIAS_TASKS: Readonly<Record<string, Task>> = { query: 'retrieval/query', document: 'retrieval/document' };
const INPUT_TYPE_TASKS: Readonly<Record<(typeof INPUT_TYPES)[number], Task>> = { query: 'retrieval/query', document: 'retrieval/document' };

/** The model ids /openai/v1/models lists: the model, and one alias per task. */
export function openAIModelIds(modelName: string): string[] {
  return [modelName, ...Object.keys(ALIAS_TASKS).map((suffix) => `${modelName}:${suffix}`)];
}

export function createOpenAIEmbeddingRequestSchema(modelName: string) {
  const ids = openAIModelIds(modelName);
  const text = nonBlankText();
  return z.strictObject(
    {
      input: z
        .union([text, z.array(text).min(1, { error: 'must hold at least 1 string' }).max(MAX_OPENAI_INPUTS, { error: `must hold at most ${MAX_OPENAI_INPUTS} strings` })], {
          error: required(`must be a string or an array of 1 to ${MAX_OPENAI_INPUTS} strings`),
        })
        .describe(`The text or texts to embed: a string, or 1 to ${MAX_OPENAI_INPUTS} strings. Token-id arrays are not accepted.`),
      model: z
        .enum(ids as [string, ...string[]], { error: required(`must be one of ${ids.map((m) => `"${m}"`).join(', ')}`) })
        .describe(`"${modelName}", or "${modelName}:query" / "${modelName}:document" to embed queries or documents for retrieval.`),
      encoding_format: z
        .enum(ENCODING_FORMATS, { error: 'must be "float" or "base64"' })
        .default('float')
        .describe('float: arrays of numbers; base64: each vector as little-endian float32 bytes, base64-encoded (what the openai client asks for by default).'),
      dimensions: integerAtLeast(1, 'must be an integer of at least 1')
        .optional()
        .describe("Keep the first d components (renormalised); at most the model's maximum."),
      user: z.string({ error: 'must be a string' }).optional().describe('Accepted and ignored.'),
      input_type: z
        .enum(INPUT_TYPES, { error: 'must be "query" or "document"' })
        .optional()
        .describe('An extension: "query" for search queries, "document" for the texts searched (the bundled models embed documents in their document form); absent: no task.'),
      output_dtype: oneOf(OUTPUT_DTYPES)
        .default('float')
        .describe('An extension, as on /v1/embeddings: float, int8, uint8, binary or ubinary; with encoding_format "base64" the integers are sent as one byte each.'),
    },
    { error: 'must be a JSON object' },
  );
}

export const OPENAI_FIELDS = fieldsOf(createOpenAIEmbeddingRequestSchema('any'));
export type OpenAIEmbeddingRequest = z.output<ReturnType<typeof createOpenAIEmbeddingRequestSchema>>;
/** The request as sent (defaults optional; `input` may be a readonly array). */
export type OpenAIEmbeddingRequestInput = Omit<z.input<ReturnType<typeof createOpenAIEmbeddingRequestSchema>>, 'input'> & { input: string | readonly string[] };

/** A validated request, in the embedder's terms. */
export interface OpenAIEmbeddingCall {
  readonly texts: string[];
  readonly task: Task | null;
  readonly dimensions: number | null;
  readonly encoding: (typeof ENCODING_FORMATS)[number];
  readonly dtype: OutputDtype;
  /** The `model` value as sent, echoed in the response. */
  readonly model: string;
}

export function validateOpenAIEmbeddingRequest(body: unknown, caps: ModelCapabilities): Result<OpenAIEmbeddingCall> {
  const refused = (p: Problem, param: string | null) => ({ ok: false as const, problem: { ...p, param } });
  const input = (body as { input?: unknown } | null)?.input;
  if (Array.isArray(input) && input.some((i) => typeof i === 'number' || Array.isArray(i))) {
    return refused(problem('validation', 'input as token ids is not supported: send the text itself, a string or an array of strings (this server tokenises with its own model)'), 'input');
  }
  const parsed = schemaFor(caps.modelName).safeParse(body);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    return refused(problem('validation', formatIssues(parsed.error.issues, { fields: { '': OPENAI_FIELDS } })), first?.path.length ? String(first.path[0]) : null);
  }
  const request = parsed.data;
  const alias = request.model.startsWith(`${caps.modelName}:`) ? ALIAS_TASKS[request.model.slice(caps.modelName.length + 1)] ?? null : null;
  const typed = request.input_type ? INPUT_TYPE_TASKS[request.input_type] : null;
  if (alias && typed && alias !== typed) {
    return refused(problem('validation', `model "${request.model}" and input_type "${request.input_type}" name different tasks; send one of them`), 'input_type');
  }
  const task = typed ?? alias;
  const taskRefusal = taskProblem(task, caps, typed ? `the task of input_type "${request.input_type}"` : `the task of model "${request.model}"`);
  if (taskRefusal) return refused(taskRefusal, typed ? 'input_type' : 'model');
  const dimensionRefusal = dimensionProblem(request.dimensions, caps, 'leave it out');
  if (dimensionRefusal) return refused(dimensionRefusal, 'dimensions');
  return {
    ok: true,
    value: { texts: typeof request.input === 'string' ? [request.input] : request.input, task, dimensions: request.dimensions ?? null, encoding: request.encoding_format, dtype: request.output_dtype, model: request.model },
  };
}

export const OpenAIEmbeddingResponseSchema = z.object({
  object: z.literal('list'),
  data: z.array(
    z.object({
      object: z.literal('embedding'),
      index: z.number().int().min(0).describe('Position of the input.'),
      embedding: z.union([z.array(z.number()), z.string()]).describe('The unit-length vector: numbers, or base64 of little-endian float32 with encoding_format "base64".'),
    }),
  ),
  model: z.string().describe('The model value of the request.'),
  usage: z.object({ prompt_tokens: z.number().int(), total_tokens: z.number().int() }).describe('Tokens input to the model (both fields equal).'),
});
export type OpenAIEmbeddingResponse = z.infer<typeof OpenAIEmbeddingResponseSchema>;

export const OpenAIModelListSchema = z.object({
  object: z.literal('list'),
  data: z.array(z.object({ id: z.string(), object: z.literal('model'), created: z.number().int(), owned_by: z.string() })),
});

export function buildOpenAIEmbeddingResponse(vectors: readonly Float32Array[], inputTokens: number, call: Pick<OpenAIEmbeddingCall, 'encoding' | 'model'> & { dtype?: OutputDtype }): OpenAIEmbeddingResponse {
  const dtype = call.dtype ?? 'float';
  const encode = (v: Float32Array) => {
    if (dtype === 'float') return call.encoding === 'base64' ? float32Base64(v) : finiteNumbersOf(v);
    const values = quantizeVector(v, dtype);
    // base64: one byte per integer (int8 and binary as two's complement, as numpy's int8 reads them).
    return call.encoding === 'base64' ? bytesBase64(Uint8Array.from(values, (x) => x & 0xff)) : values;
  };
  return {
    object: 'list',
    data: vectors.map((v, index) => ({ object: 'embedding', index, embedding: encode(v) })),
    model: call.model,
    usage: { prompt_tokens: inputTokens, total_tokens: inputTokens },
  };
}

/** The vector as little-endian float32 bytes, base64-encoded (what the openai client decodes). */
export function float32Base64(vector: ArrayLike<number>): string {
  const bytes = new Uint8Array(vector.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < vector.length; i++) view.setFloat32(i * 4, vector[i]!, true);
  return bytesBase64(bytes);
}

function bytesBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

export const OpenAIErrorSchema = z.object({
  error: z.object({
    message: z.string().describe('What was wrong and how to fix it.'),
    type: z.string().describe('invalid_request_error, authentication_error, permission_error, not_found_error, requests (a rate limit), insufficient_quota or server_error.'),
    param: z.string().nullable().describe('The request field at fault, where one is.'),
    code: z.string().describe('A stable code, e.g. invalid_api_key, context_length_exceeded, service_unavailable.'),
  }),
});
export type OpenAIErrorBody = z.infer<typeof OpenAIErrorSchema>;

const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'insufficient_quota',
  403: 'permission_error',
  404: 'not_found_error',
  405: 'invalid_request_error',
  413: 'invalid_request_error',
  429: 'requests',
  500: 'server_error',
  503: 'server_error',
};
const ERROR_CODES: Readonly<Record<ProblemCode, string>> = {
  validation: 'invalid_request',
  inputTooLarge: 'context_length_exceeded',
  unsupportedDimension: 'unsupported_dimensions',
  unsupportedTask: 'unsupported_input_type',
  unauthorizedKey: 'unauthorized_api_key',
  incorrectKey: 'invalid_api_key',
  accountOverdue: 'account_overdue',
  accessForbidden: 'access_forbidden',
  noSubscription: 'no_subscription',
  notFound: 'not_found',
  methodNotAllowed: 'method_not_allowed',
  requestTooLarge: 'request_too_large',
  rateLimited: 'rate_limit_exceeded',
  quotaExceeded: 'insufficient_quota',
  internal: 'internal_error',
  unavailable: 'service_unavailable',
};

/** A problem in OpenAI's error shape: same status, the detail as the message. */
export function toOpenAIError(p: Problem): OpenAIErrorBody {
  const { status, title } = PROBLEM_CATALOGUE[p.code];
  // OpenAI answers a spent quota as type insufficient_quota, a rate limit as type requests (or tokens).
  const type = p.code === 'quotaExceeded' ? 'insufficient_quota' : (ERROR_TYPES[status] ?? 'invalid_request_error');
  return { error: { message: p.detail ?? title, type, param: p.param ?? null, code: ERROR_CODES[p.code] } };
}

const schemaFor = perModel(createOpenAIEmbeddingRequestSchema);
