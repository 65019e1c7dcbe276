// Lists the WebGPU adapters Dawn offers on this machine (what `--device webgpu` can use), as JSON.
// Usage: tsx bench/gpu/adapters.ts [--gpu-adapter NVIDIA]
// Exits 0 when Dawn offers an adapter whose name contains --gpu-adapter (software ones too, e.g.
// llvmpipe), or without --gpu-adapter, a hardware adapter; else 1.
import { parseArgs } from 'node:util';
import { openWebGPU } from '../../src/node/runtime/webgpu/detect.ts';

const { values } = parseArgs({ options: { 'gpu-adapter': { type: 'string', default: '' } } });
const handle = await openWebGPU(values['gpu-adapter']);
const wanted = values['gpu-adapter'].toLowerCase();
const usable = handle.adapters.filter((a) => (wanted ? a.name.toLowerCase().includes(wanted) : !a.fallback));
console.log(JSON.stringify({ adapters: handle.adapters, errors: handle.errors }, null, 2));
handle.release();
process.exit(usable.length > 0 ? 0 : 1);
