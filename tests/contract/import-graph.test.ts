// Guard: nothing on the browser or edge path imports Node built-ins or Node-only packages.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const NODE_ONLY = new Set(['onnxruntime-node', '@hono/node-server', 'prom-client', 'ioredis', 'tsx', 'autocannon', 'webgpu', ...builtinModules]);
const ENTRIES = ['src/local/client.ts', 'src/documents/extract.ts', 'src/client/index.ts', 'src/contract/index.ts', 'src/edge/handler.ts', 'src/adapters/langchain.ts', 'src/adapters/ai-sdk.ts', 'src/adapters/llamaindex.ts', 'web-demo/src/main.ts', 'web-demo/src/worker.ts', 'edge/worker.ts'];

function walk(entry: string): { files: string[]; packages: Map<string, string> } {
  const files: string[] = [];
  const packages = new Map<string, string>();
  const queue = [resolve(ROOT, entry)];
  const seen = new Set<string>();
  while (queue.length) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    files.push(file);
    const source = readFileSync(file, 'utf8');
    for (const m of source.matchAll(/(?:^|\n)\s*(import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)) {
      if (m[2]) continue; // type-only imports vanish at run time
      const specifier = m[3] ?? m[4] ?? '';
      if (specifier.startsWith('.')) {
        const target = resolve(dirname(file), specifier.replace(/\?.*$/, ''));
        if (/\.(ts|mjs|js)$/.test(target) && existsSync(target)) queue.push(target);
      } else {
        packages.set(specifier.replace(/\?.*$/, ''), file.slice(ROOT.length + 1));
      }
    }
  }
  return { files, packages };
}

it('every entry the checks name exists (a renamed entry fails here instead of leaving the checks)', () => {
  expect(ENTRIES.filter((e) => !existsSync(join(ROOT, e)))).toEqual([]);
});

it.each(ENTRIES)('%s imports no Node built-in or Node-only package', (entry) => {
  const { files, packages } = walk(entry);
  expect(files.length).toBeGreaterThan(0);
  for (const [pkg, from] of packages) {
    const name = pkg.startsWith('node:') ? pkg : pkg.split('/').slice(0, pkg.startsWith('@') ? 2 : 1).join('/');
    expect(pkg.startsWith('node:') || NODE_ONLY.has(name), `${from} imports ${pkg}`).toBe(false);
  }
});

it('the walk sees through the local client to transformers.js and the contract', () => {
  const { files, packages } = walk('src/local/client.ts');
  expect([...packages.keys()]).toContain('@huggingface/transformers');
  expect(files.some((f) => f.endsWith('src/contract/request.ts'))).toBe(true);
  expect(files.some((f) => f.endsWith('src/embedder/scheduler.ts'))).toBe(true);
});

// What each published entry may import at run time: zod is lexembed's one dependency; the rest
// are optional peers that only the entries below need (scripts/build.mjs writes the manifest).
it.each([
  ['src/client/index.ts', []],
  ['src/contract/index.ts', ['zod']],
  ['src/index.ts', ['zod']],
  ['src/local/client.ts', ['zod', '@huggingface/transformers']],
  ['src/documents/extract.ts', ['pdfjs-dist', 'mammoth']],
  ['src/edge/handler.ts', ['zod', '@huggingface/transformers', 'hono']],
  ['src/adapters/langchain.ts', ['zod', '@langchain/core']],
  ['src/adapters/ai-sdk.ts', ['zod', '@ai-sdk/provider']],
  ['src/adapters/llamaindex.ts', ['zod', '@llamaindex/core']],
] as const)('%s imports only %j', (entry, allowed) => {
  const names = [...walk(entry).packages.keys()].map((p) => p.split('/').slice(0, p.startsWith('@') ? 2 : 1).join('/'));
  expect([...new Set(names)].filter((n) => !(allowed as readonly string[]).includes(n))).toEqual([]);
});

it('src/ has no import cycle (type-only imports included)', () => {
  const files = readdirSync(join(ROOT, 'src'), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name));
  const edges = new Map<string, string[]>();
  for (const file of files) {
    const source = readFileSync(file, 'utf8');
    const deps = [...source.matchAll(/(?:^|\n)\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g)]
      .map((m) => resolve(dirname(file), m[1] ?? m[2] ?? ''))
      .filter((t) => existsSync(t));
    edges.set(file, deps);
  }
  const state = new Map<string, 'open' | 'done'>();
  const cycles: string[] = [];
  const visit = (file: string, path: string[]) => {
    state.set(file, 'open');
    for (const dep of edges.get(file) ?? []) {
      if (state.get(dep) === 'open') cycles.push([...path.slice(path.indexOf(dep)), dep].map((f) => f.slice(ROOT.length + 1)).join(' → '));
      else if (!state.has(dep)) visit(dep, [...path, dep]);
    }
    state.set(file, 'done');
  };
  for (const file of files) if (!state.has(file)) visit(file, [file]);
  expect(files.length).toBeGreaterThan(40);
  expect(cycles).toEqual([]);
});

// The layers: what each folder of src/ may not import (relative imports, type-only included).
const LAYERS: readonly [string, readonly string[]][] = [
  ['src/contract', ['src/embedder', 'src/backend', 'src/operations', 'src/auth', 'src/http', 'src/client', 'src/local', 'src/edge', 'src/node', 'src/cli', 'src/adapters']],
  ['src/embedder', ['src/backend', 'src/operations', 'src/auth', 'src/http', 'src/local', 'src/edge', 'src/node', 'src/cli', 'src/adapters']],
  ['src/operations', ['src/backend', 'src/auth', 'src/http', 'src/local', 'src/edge', 'src/node', 'src/cli']],
  ['src/backend', ['src/operations', 'src/auth', 'src/http', 'src/node', 'src/cli']],
  ['src/auth', ['src/embedder', 'src/backend', 'src/operations', 'src/http', 'src/node', 'src/cli']],
  ['src/http', ['src/node', 'src/cli', 'src/backend']],
  ['src/client', ['src/embedder', 'src/backend', 'src/operations', 'src/auth', 'src/http', 'src/node', 'src/cli']],
];

it.each(LAYERS)('%s imports none of %j (core never reaches transports, auth never reaches node)', (layer, forbidden) => {
  const files = readdirSync(join(ROOT, layer), { recursive: true, withFileTypes: true }).filter((e) => e.isFile() && e.name.endsWith('.ts'));
  expect(files.length).toBeGreaterThan(0);
  const offending: string[] = [];
  for (const entry of files) {
    const file = join(entry.parentPath, entry.name);
    for (const m of readFileSync(file, 'utf8').matchAll(/(?:^|\n)\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g)) {
      const target = resolve(dirname(file), m[1] ?? m[2] ?? '').slice(ROOT.length + 1);
      if (forbidden.some((f) => target === f || target.startsWith(`${f}/`))) offending.push(`${file.slice(ROOT.length + 1)} → ${target}`);
    }
  }
  expect(offending).toEqual([]);
});
