// npm run build: dist/ (ESM + .d.ts) from src/ with tsc. Relative imports in src end in .ts;
// tsc rewrites them to .js in the JavaScript it emits but not in declaration files, so this
// rewrites those too (a consumer's TypeScript must not see '.ts' specifiers).
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
rmSync(dist, { recursive: true, force: true });
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });

const RELATIVE_TS = /((?:from|import)\s*\(?\s*['"])(\.{1,2}\/[^'"]+?)\.ts(['"])/g;
let files = 0;
for (const entry of readdirSync(dist, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.d.ts')) continue;
  const path = join(entry.parentPath, entry.name);
  const text = readFileSync(path, 'utf8');
  const fixed = text.replace(RELATIVE_TS, '$1$2.js$3');
  if (fixed !== text) (writeFileSync(path, fixed), files++);
}
console.log(`dist/ built; .ts specifiers rewritten in ${files} declaration files`);
