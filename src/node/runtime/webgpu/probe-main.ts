// Entry of a child process: lists the WebGPU adapters Dawn offers and prints them as JSON. A
// server with --device auto asks here first, so when it ends up on the CPU it has never loaded
// Dawn itself (Dawn writes its warnings, e.g. "Couldn't load Vulkan", straight to stderr).
import { openWebGPU } from './detect.ts';

const handle = await openWebGPU(process.argv[2] ?? '');
process.stdout.write(JSON.stringify({ adapters: handle.adapters, errors: handle.errors }));
handle.release();
process.exit(0);
