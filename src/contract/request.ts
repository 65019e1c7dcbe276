// The embedding request of spec 2.1 with every rule of sections 2.1 and 8, as a zod schema
// plus one pure validation function that returns the parsed request or a problem.
import { z } from 'zod';
import { perModel } from './schema-cache.ts';
import { problem } from './problems.ts';
import type { Result } from './result.ts';
import { OUTPUT_DTYPES } from './vectors.ts';
import { dimensionProblem, fieldsOf, integerAtLeast, nonBlankText, oneOf, required, taskProblem, TASKS, type ModelCapabilities } from './rules.ts';

export const DEFAULT_MODEL_NAME = 'legal-2-embedder';
export const MAX_TEXTS_PER_REQUEST = 128;
export const OVERFLOW_STRATEGIES = ['drop_end'] as const;

export { TASKS, type ModelCapabilities, type Task } from './rules.ts';

const TextSchema = nonBlankText(required('must be a string'));

const TextsSchema = z.union(
  [
    TextSchema,
    z
      .array(TextSchema)
      .min(1, { error: 'must hold at least 1 text' })
      .max(MAX_TEXTS_PER_REQUEST, { error: `must hold at most ${MAX_TEXTS_PER_REQUEST} texts` }),
  ],
  { error: required(`must be a string or an array of 1 to ${MAX_TEXTS_PER_REQUEST} strings`) },
);

/** Builds the request schema for a served model name (the wire rule is `model` = that name). */
export function createEmbeddingRequestSchema(modelName: string = DEFAULT_MODEL_NAME) {
  return z.strictObject(
    {
      model: z.literal(modelName, { error: required(`must be "${modelName}"`) }).describe('The embedding model to use.'),
      texts: TextsSchema.describe(`The text or texts to embed: a string, or an array of 1 to ${MAX_TEXTS_PER_REQUEST} strings, each with a non-whitespace character.`),
      task: oneOf(TASKS, ' or null')
        .nullable()
        .default(null)
        .describe(
          'retrieval/query for searches, retrieval/document for the texts searched (a model folder may give documents their own form at full width: the bundled models do, and rank better for it); null: neither (the query form).',
        ),
      overflow_strategy: z
        .enum(OVERFLOW_STRATEGIES, { error: 'must be "drop_end" or null' })
        .nullable()
        .default('drop_end')
        .describe("drop_end drops tokens from the end of over-long texts; null makes an over-long text an error."),
      dimensions: integerAtLeast(1, 'must be an integer of at least 1, or null')
        .nullable()
        .default(null)
        .describe("Keep the first d components (renormalised); at most the model's maximum; null for the default."),
      // An extension beside the spec's fields: compact vectors for cheap storage.
      output_dtype: oneOf(OUTPUT_DTYPES)
        .default('float')
        .describe(
          'float (default); int8: round(x·16√d) in [-128, 127]; uint8: int8 + 128; ubinary: 8 components a byte, first in the highest bit, 1 where > 0 (numpy.packbits); binary: that byte − 128.',
        ),
    },
    { error: 'must be a JSON object' },
  );
}

export const EmbeddingRequestSchema = createEmbeddingRequestSchema();
export const REQUEST_FIELDS = fieldsOf(EmbeddingRequestSchema);
/** The request as sent on the wire (defaults optional). */
export type EmbeddingRequestInput = z.input<typeof EmbeddingRequestSchema>;
/** The request after validation, defaults filled in. */
export type EmbeddingRequest = z.output<typeof EmbeddingRequestSchema>;


/**
 * Validates a decoded JSON body against spec 2.1 for the served model.
 * @example validateEmbeddingRequest({ model: 'legal-2-embedder', texts: 'Lease' }, caps)
 */
export function validateEmbeddingRequest(body: unknown, caps: ModelCapabilities): Result<EmbeddingRequest> {
  const parsed = schemaFor(caps.modelName).safeParse(body);
  if (!parsed.success) return { ok: false, problem: problem('validation', formatIssues(parsed.error.issues)) };
  const request = parsed.data as EmbeddingRequest;
  const refusal = dimensionProblem(request.dimensions, caps, 'null for the default') ?? taskProblem(request.task, caps);
  if (refusal) return { ok: false, problem: refusal };
  return { ok: true, value: request };
}

/** The texts of a request as an array, in input order. */
export function textsOf(request: Pick<EmbeddingRequest, 'texts'>): string[] {
  return typeof request.texts === 'string' ? [request.texts] : request.texts;
}

const schemaFor = perModel(createEmbeddingRequestSchema);

export interface IssueFormat {
  /** The fields an object at the top level (or at a path, by its dotted name) allows. */
  readonly fields: Readonly<Record<string, readonly string[]>>;
  /** How the whole body is named, e.g. "the request body" or "the invocation body". */
  readonly body?: string;
}

const EMBEDDING_FORMAT: IssueFormat = { fields: { '': REQUEST_FIELDS } };

/** One place that turns zod issues into a `detail` sentence, e.g. `texts[3] must contain …`. */
export function formatIssues(issues: readonly z.core.$ZodIssue[], format: IssueFormat = EMBEDDING_FORMAT, prefix: PropertyKey[] = []): string {
  return issues.map((issue) => formatIssue(issue, format, prefix)).join('; ');
}

function formatIssue(issue: z.core.$ZodIssue, format: IssueFormat, prefix: PropertyKey[]): string {
  const path = [...prefix, ...issue.path];
  const body = format.body ?? 'the request body';
  if (issue.code === 'unrecognized_keys') {
    const where = path.length ? `${formatPath(path)} has` : `${body.replace(/ body$/, '')} has`;
    const names = issue.keys.map((k) => `"${k}"`).join(', ');
    const allowed = format.fields[path.map(String).join('.')];
    return `${where} unknown field${issue.keys.length > 1 ? 's' : ''} ${names}` + (allowed ? `; allowed fields are ${allowed.join(', ')}` : '');
  }
  if (issue.code === 'invalid_union') {
    // Report the branch that got past the type check (e.g. an array with one bad element).
    const deeper = issue.errors.find((branch) => branch.length > 0 && branch.every((i) => i.path.length > 0 || i.code !== 'invalid_type'));
    if (deeper) return formatIssues(deeper, format, path);
  }
  return path.length ? `${formatPath(path)} ${issue.message}` : `${body} ${issue.message}`;
}

function formatPath(path: PropertyKey[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join('');
}
