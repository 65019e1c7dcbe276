// The README's curl examples (and docs/api.md's, docs/documents.md's) run, as written, against a real `lexembed serve` on the bundled
// model, and answer what the README shows: the same shape, the same counts (usage, indices) and
// the same figures at the precision printed. An example that stops working, or a figure that
// goes stale when the model changes, fails here.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR, PROJECT_ROOT } from '../../src/node/runtime/load-model.ts';
import { useServer } from '../support/cli.ts';

const run = promisify(execFile);
/** The README and the docs pages that carry its examples onwards, as one text. */
const README = ['README.md', 'docs/api.md', 'docs/documents.md'].map((f) => readFileSync(join(PROJECT_ROOT, f), 'utf8')).join('\n');

/** Each ```sh block that calls the server, with the ```json block that follows it (its output). */
function examples(): { command: string; expected: string }[] {
  const blocks = [...README.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, body: m[2]! }));
  return blocks.flatMap((b, i) =>
    b.lang === 'sh' && b.body.includes('curl -s http://127.0.0.1:8080/') && blocks[i + 1]?.lang === 'json' ? [{ command: b.body, expected: blocks[i + 1]!.body.trim() }] : [],
  );
}

/** Same keys, same array nesting; integers equal; other numbers equal at the decimals shown. */
function expectLike(actual: unknown, expected: unknown, path = '$'): void {
  if (typeof expected === 'number') {
    expect(typeof actual, path).toBe('number');
    if (Number.isInteger(expected) && !String(expected).includes('.')) expect(actual, path).toBe(expected);
    else {
      const decimals = String(expected).split('.')[1]?.length ?? 0;
      expect(Math.abs((actual as number) - expected), `${path}: ${actual} shown as ${expected}`).toBeLessThanOrEqual(0.5 * 10 ** -decimals + 1e-12);
    }
  } else if (Array.isArray(expected)) {
    expect(Array.isArray(actual), path).toBe(true);
    expected.forEach((e, i) => expectLike((actual as unknown[])[i], e, `${path}[${i}]`));
  } else if (expected && typeof expected === 'object') {
    expect(Object.keys(actual as object).sort(), path).toEqual(Object.keys(expected).sort());
    for (const [k, v] of Object.entries(expected)) expectLike((actual as Record<string, unknown>)[k], v, `${path}.${k}`);
  } else {
    expect(actual, path).toEqual(expected);
  }
}

describe("README's curl examples against the real server", () => {
  // The first start makes ./.lexembed/dev-key.txt, which the README's export reads.
  const server = useServer(BUNDLED_MODEL_DIR);

  it('finds the examples', () => expect(examples().length).toBeGreaterThanOrEqual(2));

  it.each(examples().map((e) => [e.command.split('\n').find((l) => l.includes('curl'))!.trim(), e] as const))('%s', async (_, { command, expected }) => {
    const script = `set -e\nexport LEXEMBED_API_KEY=$(cat .lexembed/dev-key.txt)\n${command.replaceAll('http://127.0.0.1:8080', server.url)}`;
    const { stdout } = await run('bash', ['-c', script], { cwd: server.dir });
    // The README elides long arrays with "…": compare what it shows.
    expectLike(JSON.parse(stdout), JSON.parse(expected.replace(/,\s*…/g, '')));
  });
});
