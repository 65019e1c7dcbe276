#!/usr/bin/env node
// Runs the TypeScript CLI through tsx's loader, so no build step is needed.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/index.ts');
// Exit explicitly: onnxruntime's thread pool must not keep a finished command alive.
process.exit(await main(process.argv.slice(2)));
