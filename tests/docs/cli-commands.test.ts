// The CLI commands the README and docs/ name run as written from a clone: each is `npx lexembed
// <command>` (a bare `lexembed …` is "command not found" there, as a new user found), and each
// named command exists (`npx lexembed <command> --help` answers).
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/node/runtime/load-model.ts';

const run = promisify(execFile);
const files = ['README.md', ...readdirSync(join(PROJECT_ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => join('docs', f))];
const texts = files.map((f) => [f, readFileSync(join(PROJECT_ROOT, f), 'utf8')] as const);

it('names no bare `lexembed <command>`: from a clone they are run with npx', () => {
  const bare = texts.flatMap(([file, text]) =>
    [...text.matchAll(/(?:`|^\s*|\$\(|: )lexembed (serve|embed|index|search|mcp|keys|accounts|usage)\b/gm)].map((m) => `${file}: ${m[0].trim()}`),
  );
  expect(bare).toEqual([]);
});

it('every `npx lexembed <command>` the docs name exists', async () => {
  const commands = new Set(texts.flatMap(([, text]) => [...text.matchAll(/npx lexembed ([a-z]+)/g)].map((m) => m[1]!)));
  expect([...commands]).toEqual(expect.arrayContaining(['serve', 'embed', 'index', 'search', 'keys', 'usage', 'accounts']));
  for (const command of commands) {
    const { stdout } = await run('npx', ['lexembed', command, '--help'], { cwd: PROJECT_ROOT });
    expect(stdout, command).toMatch(/Usage:\s+lexembed/);
  }
}, 120_000);

it('the library-from-a-clone recipe (docs/running.md) denies onnxruntime-node\'s install script before it installs, as the package test\'s projects do', () => {
  const recipe = /## Using the library from a clone\n[\s\S]*?```sh\n([\s\S]*?)```/.exec(readFileSync(join(PROJECT_ROOT, 'docs', 'running.md'), 'utf8'))![1]!;
  const lines = recipe.split('\n');
  const skip = lines.findIndex((l) => l.startsWith('npm pkg set allowScripts.onnxruntime-node=false --json'));
  const install = lines.findIndex((l) => l.startsWith('npm install '));
  expect(skip).toBeGreaterThanOrEqual(0);
  expect(skip).toBeLessThan(install);
  expect(readFileSync(join(PROJECT_ROOT, 'tests', 'package', 'package.test.ts'), 'utf8')).toContain("const allowScripts = { 'onnxruntime-node': false };");
});
