#!/usr/bin/env node
// The lexembed CLI. Installed from npm it runs the built JavaScript in dist/; in a checkout of
// the repository (src/ present, tsx installed as a dev dependency) it runs the TypeScript source,
// so development and tests never run a stale build.
import { existsSync } from 'node:fs';

const source = new URL('../src/cli/index.ts', import.meta.url);
let cli;
if (existsSync(source) && !process.env.LEXEMBED_USE_DIST) {
  const { register } = await import('tsx/esm/api').catch(() => {
    console.error('lexembed: running from a source checkout needs its dev dependencies: run `npm ci` first');
    process.exit(1);
  });
  register();
  cli = await import(source.href);
} else {
  cli = await import('../dist/cli/index.js').catch((error) => {
    console.error(`lexembed: dist/ is missing or broken (${error.message}); run \`npm run build\``);
    process.exit(1);
  });
}
const code = await cli.main(process.argv.slice(2));
// A pipe takes stdout's writes asynchronously: exiting at once cut a piped 350 KB --json at 64 KB.
// An empty write's callback runs once the writes before it are out (or the reader is gone).
await Promise.all([process.stdout, process.stderr].map((stream) => new Promise((resolve) => stream.write('', () => resolve()))));
// Exit explicitly: onnxruntime's thread pool must not keep a finished command alive.
process.exit(code);
