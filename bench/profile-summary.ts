// Where a server's CPU went, from the V8 CPU profiles `node --cpu-prof` writes (one per thread):
// each sample's self time put in one category by the function it was in, per thread. Used by
// `npm run bench:cpu -- --profile` to say, per text length, what the server spends beside the model.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string };
}
interface CpuProfile {
  /** µs on the monotonic clock process.hrtime reads, in every process of the machine. */
  readonly startTime: number;
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** The categories, in the order they are printed; the first rule that matches a sample names it. */
export const CATEGORIES = ['model run', 'JSON out', 'tokenising', 'HTTP and streams', 'request handling', 'usage and keys', 'scheduling', 'pooling and batches', 'garbage collection', 'other JavaScript', 'idle'] as const;
export type Category = (typeof CATEGORIES)[number];

const RULES: [Category, (name: string, url: string) => boolean][] = [
  ['idle', (n) => n === '(idle)'],
  ['garbage collection', (n) => n === '(garbage collector)'],
  ['model run', (_n, u) => /onnxruntime-node\/dist\/backend\.js$/.test(u)],
  ['JSON out', (_n, u) => /float-json\.ts$|problem-response\.ts$/.test(u)],
  ['tokenising', (_n, u) => /@huggingface\/transformers|@huggingface\/tokenizers|tokenize/.test(u)],
  ['pooling and batches', (_n, u) => /transformers-backend\.ts$|padding\.ts$|inference-worker-main\.ts$|worker-backend\.ts$/.test(u)],
  ['scheduling', (_n, u) => /scheduler\.ts$/.test(u)],
  ['usage and keys', (_n, u) => /\/usage\/|\/auth\//.test(u)],
  ['request handling', (_n, u) => /\/src\/(http|operations|contract|embedder)\//.test(u)],
  ['HTTP and streams', (n, u) => /@hono\/node-server|\/hono\/|^node:(_http|http|net|stream|internal\/streams|internal\/http)/.test(u) || /^(writev|writeBuffer|writeUtf8String|read|onStreamRead)$/.test(n)],
];

/** A thread's time in every category but idle (ms). */
export const busyMs = (ms: ReadonlyMap<Category, number>) => [...ms].reduce((n, [c, v]) => n + (c === 'idle' ? 0 : v), 0);

/** Now on the clock the profiles' times are on (µs), to mark a window from another process. */
export const profileClock = () => Number(process.hrtime.bigint() / 1000n);

/** A profile's self time per category (ms), of the samples taken within `window` (µs, profileClock). */
export function categorise(profile: CpuProfile, window: readonly [number, number]): Map<Category, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const memo = new Map<number, Category>();
  const out = new Map<Category, number>(CATEGORIES.map((c) => [c, 0]));
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i]!;
    if (t < window[0] || t > window[1]) continue;
    const id = profile.samples[i]!;
    let category = memo.get(id);
    if (!category) {
      const frame = byId.get(id)!;
      category = RULES.find(([, test]) => test(frame.functionName, frame.url))?.[0] ?? 'other JavaScript';
      memo.set(id, category);
    }
    out.set(category, out.get(category)! + profile.timeDeltas[i]! / 1000);
  }
  return out;
}

/**
 * Each thread's categories from a folder of .cpuprofile files (CPU.<date>.<time>.<pid>.<thread>.<n>):
 * thread 0 is the event loop; a thread that runs the model is an inference lane.
 */
export function summariseFolder(dir: string, window: readonly [number, number]): { thread: string; ms: Map<Category, number> }[] {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => ({ f, thread: Number(f.split('.')[4]) }))
    .sort((a, b) => a.thread - b.thread);
  let lane = 0;
  return files
    .map(({ f, thread }) => ({ thread, ms: categorise(JSON.parse(readFileSync(join(dir, f), 'utf8')) as CpuProfile, window) }))
    .filter(({ thread, ms }) => thread === 0 || busyMs(ms) > 50) // loader threads that did next to nothing
    .map(({ thread, ms }) => ({ thread: thread === 0 ? 'event loop' : ms.get('model run')! > 0 ? `lane ${lane++}` : `thread ${thread}`, ms }));
}
