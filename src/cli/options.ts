// One way to declare, document and validate command-line options: each option has a flag,
// an environment variable and a default; values go through one zod schema per command.
import { parseArgs } from 'node:util';
import type { z } from 'zod';
import { messageOf } from '../util/message-of.ts';

export interface OptionSpec {
  readonly env?: string;
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
      const meta = [o.env ? `env ${o.env}` : '', o.default !== undefined ? `default: ${o.default === '' ? '(none)' : o.default}` : ''].filter(Boolean).join('; ');
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
    throw new UsageError(`${command}: ${messageOf(error)}; run ${command} --help`);
  }
  const raw: Record<string, unknown> = {};
  for (const [name, o] of Object.entries(specs)) {
    const flag = parsed.values[name];
    const fromEnv = o.env ? env[o.env] : undefined;
    raw[name] = o.boolean ? flag === true || (fromEnv !== undefined && /^(1|true|yes)$/i.test(fromEnv)) : (flag ?? fromEnv ?? o.default);
  }
  const result = schema.safeParse(raw);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => {
      const name = String(issue.path[0]);
      const spec = specs[name];
      return `${command}: --${name}${spec?.env ? ` (${spec.env})` : ''} ${issue.message}; got ${JSON.stringify(raw[name] ?? null)}`;
    });
    throw new UsageError(lines.join('\n'));
  }
  return { values: result.data, positionals: parsed.positionals, help: parsed.values.help === true };
}
