// One way to declare, document and validate command-line options: each option has a flag,
// an environment variable and a default; values go through one zod schema per command.
import { parseArgs } from 'node:util';
import type { z } from 'zod';
import { messageOf } from '../util/message-of.ts';

export interface OptionSpec {
  /** The environment variable(s) read when the flag is absent, first set wins (e.g. LEXEMBED_PORT, then PORT). */
  readonly env?: string | readonly string[];
  readonly default?: string;
  readonly help: string;
  /** A flag without a value (e.g. --no-auth). */
  readonly boolean?: boolean;
}
export type OptionSpecs = Record<string, OptionSpec>;

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

/** Parses flags (then environment, then defaults) through `schema`; throws UsageError naming the option. */
export function parseOptions<S extends z.ZodType>(
  command: string,
  args: string[],
  specs: OptionSpecs,
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): { values: z.output<S>; positionals: string[]; help: boolean } {
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
  const result = schema.safeParse(raw);
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
