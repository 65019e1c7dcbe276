// bench:cpu --profile's summary: each sample's time goes to the category of the function it was
// in, and only samples inside the load's window count.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { categorise, summariseFolder } from '../../bench/profile-summary.ts';

const frame = (id: number, functionName: string, url: string) => ({ id, callFrame: { functionName, url } });
const NODES = [
  frame(1, '(idle)', ''),
  frame(2, 'run', 'file:///x/node_modules/onnxruntime-node/dist/backend.js'),
  frame(3, 'float32JsonBytes', 'file:///x/src/contract/float-json.ts'),
  frame(4, 'encode', 'file:///x/node_modules/@huggingface/transformers/dist/transformers.node.mjs'),
  frame(5, 'somethingElse', 'file:///x/src/cli/serve.ts'),
];
/** Samples 1 ms apart from t = 1000 µs: idle, run, run, JSON, tokenising, other. */
const profile = { startTime: 0, nodes: NODES, samples: [1, 2, 2, 3, 4, 5], timeDeltas: [1000, 1000, 1000, 1000, 1000, 1000] };

describe('profile summary', () => {
  it('puts each sample in its category, within the window only', () => {
    const all = categorise(profile, [0, 1e9]);
    expect(all.get('idle')).toBe(1);
    expect(all.get('model run')).toBe(2);
    expect(all.get('JSON out')).toBe(1);
    expect(all.get('tokenising')).toBe(1);
    expect(all.get('other JavaScript')).toBe(1);
    // Samples at 3000…5000 µs: the second run, JSON and tokenising.
    const window = categorise(profile, [3000, 5000]);
    expect([window.get('model run'), window.get('JSON out'), window.get('tokenising'), window.get('idle'), window.get('other JavaScript')]).toEqual([1, 1, 1, 0, 0]);
  });

  const dir = mkdtempSync(join(tmpdir(), 'profile-summary-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  it('names thread 0 the event loop and the threads that run the model lanes, leaving out idle ones', () => {
    const busy = (id: number) => ({ startTime: 0, nodes: NODES, samples: Array(100).fill(id), timeDeltas: Array(100).fill(1000) });
    writeFileSync(join(dir, 'CPU.20261125.170000.42.0.001.cpuprofile'), JSON.stringify(busy(3)));
    writeFileSync(join(dir, 'CPU.20261125.170000.42.1.002.cpuprofile'), JSON.stringify(busy(1)));
    writeFileSync(join(dir, 'CPU.20261125.170000.42.2.003.cpuprofile'), JSON.stringify(busy(2)));
    writeFileSync(join(dir, 'CPU.20261125.170000.42.3.004.cpuprofile'), JSON.stringify(busy(2)));
    const threads = summariseFolder(dir, [0, 1e9]);
    expect(threads.map((t) => t.thread)).toEqual(['event loop', 'lane 0', 'lane 1']);
    expect(threads[0]!.ms.get('JSON out')).toBe(100);
    expect(threads[2]!.ms.get('model run')).toBe(100);
  });
});
