// The pieces every request schema of the contract is built from, and the rules that depend on the
// served model (dimensions, task), written once for both API shapes (/v1 and /openai/v1) and the
// tokenize route.
import { z } from 'zod';
import { problem, type Problem } from './problems.ts';

export const TASKS = ['retrieval/query', 'retrieval/document'] as const;
export type Task = (typeof TASKS)[number];

/** What the served model supports; the request rules that depend on the model read it. */
export interface ModelCapabilities {
  readonly modelName: string;
  readonly maxDimensions: number;
  readonly tasks: readonly Task[];
}

/** A zod error message that says "is required" when the field is absent, else `what`. */
export const required = (what: string) => (iss: { input?: unknown }) => (iss.input === undefined ? 'is required' : what);

// Non-blank means a character outside Unicode White_Space: JavaScript's \s lacks U+0085 NEXT LINE.
const NON_BLANK = /[^\s\u0085]/u;

/** A string with at least one non-whitespace character. */
export const nonBlankText = (typeError: string | ((iss: { input?: unknown }) => string) = 'must be a string') =>
  z.string({ error: typeError }).regex(NON_BLANK, { error: 'must contain at least one non-whitespace character' });

/**
 * An integer of at least `min`, with one message for every way to miss it. Any integer, not only
 * safe ones (zod's .int()), so 1e20 gets the model's dimension error, as 385 does.
 */
export const integerAtLeast = (min: number, what: string) =>
  z.number({ error: what }).refine(Number.isInteger, { error: what }).min(min, { error: what });

/** An integer from `min` to `max`, one message for every way to miss it (`tail` added to it, e.g. how to page). */
export const integerFromTo = (min: number, max: number, tail = '') => {
  const what = `must be an integer from ${min} to ${max}${tail}`;
  return integerAtLeast(min, what).max(max, { error: what });
};

/** One of `values`, the message listing them quoted (e.g. `must be one of "a", "b" or null`). */
export const oneOf = <const T extends readonly [string, ...string[]]>(values: T, tail = '') =>
  z.enum(values, { error: `must be one of ${values.map((v) => `"${v}"`).join(', ')}${tail}` });

/** The fields a strict object schema allows, in declaration order (what "unknown field" lists). */
export const fieldsOf = (schema: { readonly shape: object }): readonly string[] => Object.keys(schema.shape);

/**
 * The 400 for dimensions above the model's maximum, or null. `otherwise` says how to ask for the
 * default in the caller's shape ("null for the default", "leave it out").
 */
export function dimensionProblem(dimensions: number | null | undefined, caps: ModelCapabilities, otherwise: string): Problem | null {
  if (dimensions === null || dimensions === undefined || dimensions <= caps.maxDimensions) return null;
  return problem(
    'unsupportedDimension',
    `dimensions ${dimensions} exceeds the maximum of ${caps.maxDimensions} for model "${caps.modelName}"; pass an integer from 1 to ${caps.maxDimensions}, or ${otherwise}`,
  );
}

/** The 400 for a task the model has no prompt for, or null. `subject` names what asked for it. */
export function taskProblem(task: Task | null, caps: ModelCapabilities, subject = `task "${task}"`): Problem | null {
  if (task === null || caps.tasks.includes(task)) return null;
  const allowed = caps.tasks.length ? caps.tasks.map((t) => `"${t}"`).join(', ') + ' or null' : 'only null';
  return problem('unsupportedTask', `${subject} is not supported by model "${caps.modelName}"; allowed tasks: ${allowed}`);
}
