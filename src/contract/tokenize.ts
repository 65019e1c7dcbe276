// POST /v1/tokenize, an extension: token counts (and, on request, each token with its character
// offsets) of texts, as the embedding route would read them, without running the model; so
// clients can plan chunks and costs. Same auth, limits and problems as /v1/embeddings.
import { z } from 'zod';
import { perModel } from './schema-cache.ts';
import { problem } from './problems.ts';
import { formatIssues, MAX_TEXTS_PER_REQUEST, TASKS, type ModelCapabilities } from './request.ts';
import { fieldsOf, oneOf, required, taskProblem } from './rules.ts';
import type { Result } from './result.ts';

export function createTokenizeRequestSchema(modelName: string) {
  const text = z.string({ error: 'must be a string' });
  return z.strictObject(
    {
      model: z.literal(modelName, { error: required(`must be "${modelName}"`) }).describe('The embedding model whose tokenizer counts.'),
      texts: z
        .union([text, z.array(text).min(1, { error: 'must hold at least 1 text' }).max(MAX_TEXTS_PER_REQUEST, { error: `must hold at most ${MAX_TEXTS_PER_REQUEST} texts` })], {
          error: required(`must be a string or an array of 1 to ${MAX_TEXTS_PER_REQUEST} strings`),
        })
        .describe(`A text or 1 to ${MAX_TEXTS_PER_REQUEST} texts (any length: nothing is truncated here).`),
      task: oneOf(TASKS, ' or null').nullable().default(null).describe('Counts as /v1/embeddings would with this task (its prompt included).'),
      return_offsets: z.boolean({ error: 'must be true or false' }).default(false).describe("Also return each of the text's own tokens with its character offsets."),
    },
    { error: 'must be a JSON object' },
  );
}
export type TokenizeRequest = z.output<ReturnType<typeof createTokenizeRequestSchema>>;

export const TokenSchema = z.object({
  token: z.string().describe('The token as the model reads it (WordPiece continuations start with ##).'),
  start: z.number().int().describe('Offset of its first character in the text (UTF-16 code units).'),
  end: z.number().int().describe('Offset just past its last character.'),
});
export type Token = z.infer<typeof TokenSchema>;

export const TokenizeResponseSchema = z.object({
  results: z.array(
    z.object({
      index: z.number().int().min(0),
      input_tokens: z.number().int().describe('Tokens /v1/embeddings would feed the model for this text and task, before truncation (prompt and special tokens included).'),
      tokens: z.array(TokenSchema).optional().describe("With return_offsets: the text's own tokens (no prompt, no special tokens) with offsets."),
    }),
  ),
  max_input_tokens: z.number().int().describe('The most the model reads; longer texts are truncated (drop_end) or refused (null).'),
});
export type TokenizeResponse = z.infer<typeof TokenizeResponseSchema>;

const schemaFor = perModel(createTokenizeRequestSchema);
export const TOKENIZE_FIELDS = fieldsOf(createTokenizeRequestSchema('any'));

export function validateTokenizeRequest(body: unknown, caps: ModelCapabilities): Result<TokenizeRequest & { texts: string[] }> {
  const parsed = schemaFor(caps.modelName).safeParse(body);
  if (!parsed.success) return { ok: false, problem: problem('validation', formatIssues(parsed.error.issues, { fields: { '': TOKENIZE_FIELDS } })) };
  const request = parsed.data;
  const refusal = taskProblem(request.task, caps);
  if (refusal) return { ok: false, problem: refusal };
  return { ok: true, value: { ...request, texts: typeof request.texts === 'string' ? [request.texts] : request.texts } };
}
