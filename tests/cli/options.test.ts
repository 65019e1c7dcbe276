// Each command's options are declared once (src/cli/options.ts): flag, environment, default, help
// and the rule its value passes, in one table. Here, every table's defaults pass their own rules,
// and what parseOptions gives is what the rule makes of the value (flags, environment, defaults).
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { EMBED_OPTIONS } from '../../src/cli/embed.ts';
import { MCP_OPTIONS } from '../../src/cli/mcp.ts';
import { flag, parseOptions, UsageError, type OptionSpecs } from '../../src/cli/options.ts';
import { SEARCH_OPTIONS } from '../../src/cli/search.ts';
import { SERVE_OPTIONS } from '../../src/cli/serve.ts';

describe('options declared once', () => {
  it.each([
    ['serve', SERVE_OPTIONS],
    ['embed', EMBED_OPTIONS],
    ['search', SEARCH_OPTIONS],
    ['mcp', MCP_OPTIONS],
  ] as [string, OptionSpecs][])("lexembed %s: every default passes its option's own rule", (command, specs) => {
    for (const [name, spec] of Object.entries(specs)) {
      if (spec.default === undefined) continue;
      const rule = spec.value ?? z.string();
      expect(rule.safeParse(spec.default).success, `lexembed ${command} --${name} default ${JSON.stringify(spec.default)}`).toBe(true);
    }
  });

  it('gives each value as its rule makes it: flag, then environment, then default', () => {
    const specs = {
      port: { env: 'T_PORT', default: '8080', value: z.coerce.number().int(), help: 'a number' },
      name: { default: 'x', help: 'a string' },
      quiet: flag({ env: 'T_QUIET', help: 'a flag' }),
    };
    expect(parseOptions('t', ['--port', '9'], specs, {}).values).toEqual({ port: 9, name: 'x', quiet: false });
    expect(parseOptions('t', [], specs, { T_PORT: '7', T_QUIET: 'yes' }).values).toEqual({ port: 7, name: 'x', quiet: true });
    expect(() => parseOptions('t', ['--port', 'abc'], specs, {})).toThrow(UsageError);
  });
});
