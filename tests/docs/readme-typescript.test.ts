// The README's TypeScript examples run, as written, against a real `lexembed serve` on the bundled
// model: each ```ts block becomes a module in a folder of this checkout (the server's URL for
// 127.0.0.1:8080, the names a fragment leaves to the reader — contract, query, texts, clauses,
// client — defined first) and runs with `npx tsx`, as the README tells a reader of a clone to.
// Its `lexembed/…` imports are left as written: they resolve to this checkout's sources through the
// root package.json's `exports` (a package importing itself by name); an example that stops
// compiling or working fails here.
// Browser-only lines (createLocalClient: it needs a browser or web worker) are the one thing
// left out, and the README says so beside them.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR, PROJECT_ROOT } from '../../src/node/runtime/load-model.ts';
import { useServer } from '../support/cli.ts';

const run = promisify(execFile);
/** The README and the docs pages that carry its examples onwards, as one text. */
const README = ['README.md', 'docs/api.md', 'docs/documents.md'].map((f) => readFileSync(join(PROJECT_ROOT, f), 'utf8')).join('\n');
/** What a fragment uses without defining it, defined when it does not. */
const CONTEXT: Record<string, string> = {
  contract: "const contract = 'SUBLEASE AGREEMENT. The Sublessee shall pay rent monthly. '.repeat(40);",
  query: "const query = 'return of a security deposit';",
  texts: "const texts = ['The landlord shall return the deposit within 30 days.', 'Overtime is paid at 1.5 times.'];",
  clauses: "const clauses = ['The landlord shall return the deposit within 30 days.', 'Overtime is paid at 1.5 times.'];",
  client: "import { Lexembed as __Lexembed } from 'lexembed/client';\nconst client = new __Lexembed({ baseURL: 'http://127.0.0.1:8080/v1' });",
};

function blocks(): string[] {
  return [...README.matchAll(/^( *)```ts\n([\s\S]*?)^\1```/gm)].map((m) => m[2]!.split('\n').map((l) => l.slice(m[1]!.length)).join('\n'));
}

function moduleOf(block: string, url: string): string {
  const kept = block.split('\n').filter((l) => !l.includes('createLocalClient')).join('\n');
  // Declared by the block itself: `const name =`, `const { …name… } =`, or an import of it.
  const defined = (name: string) =>
    new RegExp(`(const|let)\\s+(${name}|\\{[^}=]*\\b${name}\\b[^}=]*\\})\\s*=|import\\s+(${name}\\b|\\{[^}]*\\b${name}\\b[^}]*\\})`).test(kept);
  const preamble = Object.entries(CONTEXT).filter(([name]) => new RegExp(`\\b${name}\\b`).test(kept) && !defined(name)).map(([, code]) => code);
  const code = [...preamble, kept].join('\n').replaceAll('http://127.0.0.1:8080', url);
  // The examples are statements; awaited, so a rejected call fails the run.
  return `${code}\nexport {};\n`;
}

describe("README's TypeScript examples against the real server", () => {
  const server = useServer(BUNDLED_MODEL_DIR);
  // Inside the checkout (where a reader of a clone puts a script), outside node_modules: a package
  // resolves its own name only from files of its own (Node's self-reference rule).
  let modules: string;
  beforeAll(() => void (modules = mkdtempSync(join(PROJECT_ROOT, '.readme-ts-'))));
  afterAll(() => modules && rmSync(modules, { recursive: true, force: true }));

  it('finds them', () => expect(blocks().length).toBeGreaterThanOrEqual(5));

  it.each(blocks().map((b, i) => [i + 1, b.split('\n').find((l) => l.trim() && !l.trim().startsWith('//'))!.trim().slice(0, 70), b] as const))(
    'block %i (%s) runs',
    async (i, _, block) => {
      const file = join(modules, `example-${i}.ts`);
      writeFileSync(file, moduleOf(block, server.url));
      const result = await run('npx', ['--no-install', 'tsx', file], { cwd: PROJECT_ROOT, env: { ...process.env, LEXEMBED_API_KEY: server.key } }).catch((e: { stderr: string; code: number }) => e);
      expect('code' in result && result.code ? `${readFileSync(file, 'utf8')}\n---\n${(result as { stderr: string }).stderr}` : '').toBe('');
    },
    60_000,
  );
});
