#!/usr/bin/env node
// The `lexembed` command as installed from npm (@lexembed/server): the built CLI of the lexembed
// package, serving the models of @lexembed/legal-2-embedder unless --model says otherwise.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
process.env.LEXEMBED_MODELS_DIR ||= join(dirname(require.resolve('@lexembed/legal-2-embedder/package.json')), 'models');
const { main } = await import('lexembed/server');
// Exit explicitly: onnxruntime's thread pool must not keep a finished command alive.
process.exit(await main(process.argv.slice(2)));
