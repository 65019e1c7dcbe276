// The README's TypeScript examples run, as written, against a real `lexembed serve` on the
// bundled model (the examples name its legal-2-embedder): each ```ts
// block becomes a module (package imports mapped to this checkout's sources, the server's URL for
// 127.0.0.1:8080, the names a fragment leaves to the reader — contract, query, texts, clauses,
// client — defined first) and runs under tsx; an example that stops compiling or working fails here.
// Browser-only lines (createLocalClient: it needs a browser or web worker) are the one thing
// left out, and the README says so beside them.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR, PROJECT_ROOT } from '../../src/node/runtime/load-model.ts';
import { useServer } from '../support/cli.ts';

const run = promisify(execFile);
const MODULES = join(PROJECT_ROOT, 'node_modules', '.cache', 'readme-ts');
/** The README and the docs pages that carry its examples onwards, as one text. */
const README = ['README.md', 'docs/api.md', 'docs/documents.md'].map((f) => readFileSync(join(PROJECT_ROOT, f), 'utf8')).join('\n');
const ENTRIES: Record<string, string> = {
  'lexembed/client': 'src/client/index.ts',
  'lexembed/langchain': 'src/adapters/langchain.ts',
  'lexembed/ai-sdk': 'src/adapters/ai-sdk.ts',
  'lexembed/llamaindex': 'src/adapters/llamaindex.ts',
};
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
  let code = [...preamble, kept].join('\n');
  for (const [pkg, file] of Object.entries(ENTRIES)) code = code.replaceAll(`'${pkg}'`, `'${join(PROJECT_ROOT, file)}'`);
  code = code.replaceAll('http://127.0.0.1:8080', url);
  // The examples are statements; awaited, so a rejected call fails the run.
  return `${code}\nexport {};\n`;
}

describe("README's TypeScript examples against the real server", () => {
  const server = useServer(BUNDLED_MODEL_DIR);
  // The modules live inside the checkout, so their imports resolve in its node_modules.
  beforeAll(() => void mkdirSync(MODULES, { recursive: true }));

  it('finds them', () => expect(blocks().length).toBeGreaterThanOrEqual(5));

  it.each(blocks().map((b, i) => [i + 1, b.split('\n').find((l) => l.trim() && !l.trim().startsWith('//'))!.trim().slice(0, 70), b] as const))(
    'block %i (%s) runs',
    async (i, _, block) => {
      const file = join(MODULES, `example-${i}.mts`);
      writeFileSync(file, moduleOf(block, server.url));
      const tsx = join(PROJECT_ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs');
      const result = await run(process.execPath, [tsx, file], { cwd: PROJECT_ROOT, env: { ...process.env, LEXEMBED_API_KEY: server.key } }).catch((e: { stderr: string; code: number }) => e);
      expect('code' in result && result.code ? `${readFileSync(file, 'utf8')}\n---\n${(result as { stderr: string }).stderr}` : '').toBe('');
    },
    60_000,
  );
});
