// One way to declare, document and validate command-line options: each option is declared once,
// with its flag name, environment variable(s), default, help and the zod rule its value must pass;
// `parseOptions` reads flags, then environment, then defaults, through those rules.
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { messageOf } from '../util/message-of.ts';

export interface OptionSpec {
  /** The environment variable(s) read when the flag is absent, first set wins (e.g. LEXEMBED_PORT, then PORT). */
  readonly env?: string | readonly string[];
  readonly default?: string;
  readonly help: string;
  /** A flag without a value (e.g. --no-auth): declare it with flag(). */
  readonly boolean?: boolean;
  /** The rule the value passes (and what it becomes); absent: any string. */
  readonly value?: z.ZodType;
}
export type OptionSpecs = Record<string, OptionSpec>;

/** A flag without a value (true when given, or when its environment variable is 1, true or yes). */
export const flag = (spec: Omit<OptionSpec, 'boolean' | 'value' | 'default'>) => ({ ...spec, boolean: true, value: z.boolean() }) as const;

const POSITIVE = 'must be a positive integer';
const NON_NEGATIVE = 'must be a non-negative integer';
/** Rules many options share. */
export const positiveInteger = z.coerce.number({ error: POSITIVE }).int({ error: POSITIVE }).positive({ error: POSITIVE });
export const nonNegativeInteger = z.coerce.number({ error: NON_NEGATIVE }).int({ error: NON_NEGATIVE }).min(0, { error: NON_NEGATIVE });
export const integerIn = (min: number, max: number) => {
  const error = `must be an integer from ${min} to ${max}`;
  return z.coerce.number({ error }).int({ error }).min(min, { error }).max(max, { error });
};

/** A lexembed server's API base (--remote): empty (none) or an http(s) URL. */
export const remoteUrl = z.string().refine((v) => v === '' || /^https?:\/\//.test(v), { error: 'must be an http(s) URL ending in /v1' });

/** What parseOptions gives for each option: its rule's output, else the string. */
export type OptionValues<S extends OptionSpecs> = { [K in keyof S]: S[K] extends { readonly value: infer V extends z.ZodType } ? z.output<V> : string };

/** The zod object the options' rules make: what parseOptions checks values with. */
function optionsSchema<S extends OptionSpecs>(specs: S): z.ZodType<OptionValues<S>> {
  return z.object(Object.fromEntries(Object.entries(specs).map(([name, o]) => [name, o.value ?? z.string()]))) as unknown as z.ZodType<OptionValues<S>>;
}

export class UsageError extends Error {}

export function describeOptions(specs: OptionSpecs): string {
  return Object.entries(specs)
    .map(([name, o]) => {
      const flag = `--${name}${o.boolean ? '' : ' <value>'}`;
      // An empty default is "not set": said once, by the help text where it names its default, else as "none".
      const shownDefault = o.default === undefined || (o.default === '' && /\bdefault\b/.test(o.help)) ? '' : `default: ${o.default === '' ? 'none' : o.default}`;
      const meta = [o.env ? `env ${envNames(o).join(' or ')}` : '', shownDefault].filter(Boolean).join('; ');
      return `  ${flag.padEnd(26)} ${o.help}${meta ? `\n  ${' '.repeat(27)}(${meta})` : ''}`;
    })
    .join('\n');
}

/** Parses flags (then environment, then defaults) through each option's rule; throws UsageError naming the option. */
export function parseOptions<S extends OptionSpecs>(
  command: string,
  args: string[],
  specs: S,
  env: NodeJS.ProcessEnv = process.env,
): { values: OptionValues<S>; positionals: string[]; help: boolean } {
  // --help wins over everything else on the line (a missing required option, an unknown flag).
  if (args.some((a) => a === '--help' || a === '-h')) return { values: undefined as never, positionals: [], help: true };
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args,
      options: {
        ...Object.fromEntries(Object.entries(specs).map(([k, o]) => [k, { type: o.boolean ? ('boolean' as const) : ('string' as const) }])),
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    const unknown = /Unknown option '(--?[^']+)'/.exec(messageOf(error))?.[1];
    if (unknown) {
      const guess = closest(unknown.replace(/^-+/, '').split('=')[0]!, Object.keys(specs));
      throw new UsageError(`${command}: unknown option ${unknown}${guess ? `; did you mean --${guess}?` : ''} (run ${command} --help for the options)`);
    }
    throw new UsageError(`${command}: ${messageOf(error)}; run ${command} --help`);
  }
  const raw: Record<string, unknown> = {};
  for (const [name, o] of Object.entries(specs)) {
    const flag = parsed.values[name];
    const fromEnv = envNames(o).map((n) => env[n]).find((v) => v !== undefined);
    raw[name] = o.boolean ? flag === true || (fromEnv !== undefined && /^(1|true|yes)$/i.test(fromEnv)) : (flag ?? fromEnv ?? o.default);
  }
  const result = optionsSchema(specs).safeParse(raw);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => {
      const name = String(issue.path[0]);
      const spec = specs[name];
      // The variable the value came from, else the ones that could have set it.
      const names = spec ? envNames(spec) : [];
      const from = names.find((n) => env[n] !== undefined && parsed.values[name] === undefined);
      const label = from ?? names.join(' or ');
      // A missing option is said to be missing, not "got null".
      const got = raw[name] === undefined || raw[name] === '' ? '' : `; got ${JSON.stringify(raw[name])}`;
      return `${command}: --${name}${label ? ` (${label})` : ''} ${issue.message}${got}`;
    });
    throw new UsageError(lines.join('\n'));
  }
  return { values: result.data, positionals: parsed.positionals, help: parsed.values.help === true };
}

/** The option name nearest to `name` (edit distance at most a third of its length, min 2), or null. */
export function closest(name: string, candidates: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Math.max(2, Math.floor(name.length / 3)) + 1;
  for (const c of candidates) {
    const d = editDistance(name, c);
    if (d < bestDistance || (c.startsWith(name) && name.length >= 3 && d < bestDistance + 4)) (best = c), (bestDistance = Math.min(d, bestDistance));
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}

const envNames = (o: OptionSpec): readonly string[] => (o.env === undefined ? [] : typeof o.env === 'string' ? [o.env] : o.env);
