// Every relative link in the project's Markdown points at a file or folder that exists (a moved
// file must not leave a dead link in the docs a newcomer follows).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/node/runtime/load-model.ts';

const SKIP = new Set(['node_modules', '.git', 'dist', 'work', 'test-results', 'playwright-report', 'bench-results', 'build']);

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (SKIP.has(name) || name.startsWith('.')) return [];
    if (statSync(path).isDirectory()) return markdownFiles(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

it('relative links in README.md, docs/, model/, models/, bench/, edge/ and web-demo/ resolve', () => {
  const files = markdownFiles(PROJECT_ROOT);
  expect(files.map((f) => relative(PROJECT_ROOT, f))).toContain('docs/architecture.md');
  const dead: string[] = [];
  for (const file of files) {
    const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      if (/^(https?:|mailto:|#)/.test(target!)) continue;
      const path = decodeURIComponent(target!.split('#')[0]!);
      if (!existsSync(join(dirname(file), path))) dead.push(`${relative(PROJECT_ROOT, file)} → ${target}`);
    }
  }
  expect(dead).toEqual([]);
});
