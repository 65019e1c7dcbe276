// The contract stays pure: it imports only zod and its own modules (no Hono, transformers.js, node:*).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';

const dir = join(import.meta.dirname, '../../src/contract');

it('src/contract imports only zod and sibling modules', () => {
  const files = readdirSync(dir).filter((f) => f.endsWith('.ts'));
  expect(files.length).toBeGreaterThan(2);
  for (const file of files) {
    const source = readFileSync(join(dir, file), 'utf8');
    const specifiers = [...source.matchAll(/(?:import|export)[^'"]*from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]/g)].map((m) => m[1] ?? m[2] ?? '');
    for (const s of specifiers) expect(s === 'zod' || /^\.\/[\w-]+\.ts$/.test(s), `${file} imports ${s}`).toBe(true);
  }
});

it('src/client has no runtime dependencies: only its own modules, dependency-free src/util helpers, and types from the contract', () => {
  const clientDir = join(import.meta.dirname, '../../src/client');
  for (const file of readdirSync(clientDir).filter((f) => f.endsWith('.ts'))) {
    const source = readFileSync(join(clientDir, file), 'utf8');
    for (const m of source.matchAll(/^(import|export)\s+(type\s+)?[^'"]*from\s+['"]([^'"]+)['"]/gm)) {
      const [, , typeOnly, specifier = ''] = m;
      const ok = /^\.\/[\w-]+\.ts$/.test(specifier) || (typeOnly && specifier.startsWith('../contract/')) || /^\.\.\/util\/[\w-]+\.ts$/.test(specifier);
      expect(ok, `${file}: ${m[0]}`).toBeTruthy();
    }
  }
});

it('src/util imports nothing: its helpers are safe for every entry, the client included', () => {
  const utilDir = join(import.meta.dirname, '../../src/util');
  for (const file of readdirSync(utilDir).filter((f) => f.endsWith('.ts'))) {
    expect(readFileSync(join(utilDir, file), 'utf8'), file).not.toMatch(/^\s*(import|export)\s[^;]*from\s/m);
  }
});
