// The checks issue "Shape III" asks anyone to be able to run, besides the import-graph test and
// Biome's function-length rule: request state is kept on Hono's context only by the pipeline;
// inference is planned once per load; the README stays a five-minute read.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
  });
}
const files = sources(join(ROOT, 'src')).map((path) => ({ path: relative(ROOT, path), text: readFileSync(path, 'utf8') }));

it('only the HTTP pipeline sets or reads request state on Hono\'s context (c.set / c.get)', () => {
  const users = files.filter((f) => /\bc\.(?:set|get)\(/.test(f.text)).map((f) => f.path);
  expect(users).toEqual(['src/http/pipeline.ts']);
});

it('inference is planned at one call site per load: the worker\'s, or the main thread\'s for --inference main', () => {
  const calls = files.flatMap((f) => [...f.text.matchAll(/\bplanInference\(/g)].map(() => f.path)).filter((p) => !p.endsWith('inference-plan.ts'));
  expect(calls.sort()).toEqual(['src/node/runtime/inference-worker-main.ts', 'src/node/runtime/load-model.ts']);
});

it('the README is at most 10 KB (the rest lives in docs/)', () => {
  expect(statSync(join(ROOT, 'README.md')).size).toBeLessThanOrEqual(10 * 1024);
});

it('one model loader: Node, the edge and the browser load through embedder/load.ts, the one place an Embedder is made', () => {
  const makers = files.filter((f) => /\bcreateEmbedder\(/.test(f.text) && !f.path.endsWith('embedder/embedder.ts')).map((f) => f.path);
  expect(makers).toEqual(['src/embedder/load.ts']);
  const loaders = files.filter((f) => /\bloadModel\(\s*\{/.test(f.text)).map((f) => f.path).sort();
  expect(loaders).toEqual(['src/edge/handler.ts', 'src/local/client.ts', 'src/node/runtime/load-model.ts']);
});
