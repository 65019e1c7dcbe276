// `npm run bench:cpu`: CPU time per text of the HTTP server against raw onnxruntime-node running
// the same model file on the same texts, at ~16, ~128 and ~512 tokens (issue "Server efficiency").
//   raw:    a process of its own: the texts pre-tokenised, sorted by length, batches of 32,
//           onnxruntime-node with the server's thread count; its process CPU (every thread) per text.
//   server: `lexembed serve --no-auth`; its process CPU (every thread, from /proc/<pid>/stat) while
//           a load generator in another process (so its CPU is not counted) sends requests of 16
//           texts from 8 keep-alive clients (node:http, the body drained unread: fetch took twice the CPU).
// Prints CPU-ms per text for both, efficiency (raw ÷ server: 1 means no overhead) and texts/s of
// each, per length, all in one run, and the load generator's own CPU per text (it shares the
// cores). Raw and server alternate for --rounds rounds per length and the figures sum them (on a
// shared machine raw alone moved by a quarter from one minute to the next); each round's
// efficiency is printed beside. Compare figures only within a run. Several server
// configurations (--serve-args "--lanes 1|--lanes 2") run side by side in the same rounds; one
// that starts with @<dir> is served by that checkout's CLI ("--serve-args=|@../main-before": this
// tree against another, e.g. a worktree of main before a refactor).
// --raw-graphs: raw onnxruntime on several graph files of the folder's onnx/ in the same rounds
// (default model.onnx, and model_quantized.onnx where the folder has it: the int8 graph of
// model/runtime/quantize.py), each with its texts/s, CPU-ms per text and speed-up over the first;
// efficiency is always against the first (the float32 graph). Typical comparison of today's
// default with int8: --raw-graphs model.onnx,model_quantized.onnx "--serve-args=--dtype fp32|--dtype auto".
// --profile: instead, where each server configuration's CPU goes per length (profile-summary.ts).
// Usage: npm run bench:cpu -- [--model <dir>] [--seconds 5] [--rounds 3] [--lengths 16,128,512] [--threads 2] [--raw-graphs a.onnx,b.onnx] ["--serve-args=…|@<checkout> …"] [--profile]
import { spawn } from 'node:child_process';
import http from 'node:http';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { BUNDLED_MODEL_DIR, PROJECT_ROOT } from '../src/node/runtime/load-model.ts';
import { postJson } from './http-client.ts';
import { startServerProcess } from './server-process.ts';
import { cpuSecondsOf } from './process-cpu.ts';
import { busyMs, CATEGORIES, profileClock, summariseFolder } from './profile-summary.ts';
import { makeTexts, wordsForTokens } from './texts.ts';

const SELF = fileURLToPath(import.meta.url);
const CLI = join(PROJECT_ROOT, 'bin', 'lexembed.js');

const { values } = parseArgs({
  options: {
    role: { type: 'string', default: 'main' },
    model: { type: 'string', default: BUNDLED_MODEL_DIR },
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    lengths: { type: 'string', default: '16,128,512' },
    threads: { type: 'string', default: String(availableParallelism()) },
    url: { type: 'string', default: '' },
    length: { type: 'string', default: '16' },
    'serve-args': { type: 'string', default: '' },
    'raw-graphs': { type: 'string', default: '' },
    graph: { type: 'string', default: 'model.onnx' },
    profile: { type: 'boolean', default: false },
  },
});
const modelDir = resolve(values.model!);
/** The server configurations: --serve-args, several separated by |. */
const configs = values['serve-args']!.split('|').map((a) => a.trim());
const seconds = Number(values.seconds);
const threads = Number(values.threads);
/** The graph files raw onnxruntime runs, the first being the one efficiency is measured against. */
const rawGraphs = values['raw-graphs']
  ? values['raw-graphs'].split(',').map((g) => g.trim())
  : ['model.onnx', ...(existsSync(join(modelDir, 'onnx', 'model_quantized.onnx')) ? ['model_quantized.onnx'] : [])];
for (const graph of rawGraphs) if (!existsSync(join(modelDir, 'onnx', graph))) throw new Error(`--raw-graphs: ${modelDir}/onnx/${graph} does not exist`);

/** The benchmark's texts of about `tokens` tokens for this model's tokenizer (the same in every process). */
async function textsOf(tokens: number) {
  const { AutoTokenizer, env } = await import('@huggingface/transformers');
  env.allowRemoteModels = false;
  env.localModelPath = dirname(modelDir) + '/';
  const tokenizer = await AutoTokenizer.from_pretrained(basename(modelDir));
  const encode = (t: string) => tokenizer.encode(t) as number[];
  const max = JSON.parse(readFileSync(join(modelDir, 'lexembed.json'), 'utf8')).max_input_tokens as number;
  const texts = makeTexts(512, wordsForTokens(encode, Math.min(tokens, max - 2)), tokens);
  return { texts, ids: texts.map((t) => encode(t).slice(0, max)) };
}

async function rawRole() {
  const ort = await import('onnxruntime-node');
  const { padBatch } = await import('../src/backend/padding.ts');
  const { ids } = await textsOf(Number(values.length));
  const session = await ort.InferenceSession.create(join(modelDir, 'onnx', values.graph!), { intraOpNumThreads: threads, interOpNumThreads: 1 });
  const sorted = [...ids].sort((a, b) => a.length - b.length);
  const batches: number[][][] = [];
  for (let i = 0; i < sorted.length; i += 32) batches.push(sorted.slice(i, i + 32));
  const run = async (batch: number[][]) => {
    const { dims, inputIds, attentionMask, tokenTypeIds } = padBatch(batch);
    const all = { input_ids: new ort.Tensor('int64', inputIds, dims), attention_mask: new ort.Tensor('int64', attentionMask, dims), token_type_ids: new ort.Tensor('int64', tokenTypeIds, dims) };
    await session.run(Object.fromEntries(session.inputNames.map((n) => [n, all[n as keyof typeof all]])));
  };
  for (const b of batches.slice(0, 4)) await run(b); // warm
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let texts = 0;
  while (performance.now() - t0 < seconds * 1000) for (const b of batches) (await run(b), (texts += b.length));
  const cpu = process.cpuUsage(cpu0);
  const wall = (performance.now() - t0) / 1000;
  console.log(JSON.stringify({ texts, wall, cpu: (cpu.user + cpu.system) / 1e6 }));
}

async function loadRole() {
  const { texts } = await textsOf(Number(values.length));
  const bodies = Array.from({ length: Math.ceil(texts.length / 16) }, (_, i) => JSON.stringify({ model: 'legal-2-embedder', texts: texts.slice(i * 16, i * 16 + 16) }));
  let sent = 0;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const url = new URL('/v1/embeddings', values.url!).href;
  const post = async (body: string) => {
    const { status, text } = await postJson(agent, url, body);
    if (status !== 200) throw new Error(`status ${status}: ${text}`);
  };
  const client = async (until: number, count: boolean) => {
    let done = 0;
    while (performance.now() < until) {
      await post(bodies[sent++ % bodies.length]!);
      if (count) done += 16;
    }
    return done;
  };
  await Promise.all(Array.from({ length: 8 }, () => client(performance.now() + 2000, false))); // warm
  console.log('measure');
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const done = (await Promise.all(Array.from({ length: 8 }, () => client(t0 + seconds * 1000, true)))).reduce((a, b) => a + b, 0);
  const cpu = process.cpuUsage(cpu0);
  console.log(JSON.stringify({ texts: done, wall: (performance.now() - t0) / 1000, loadCpu: (cpu.user + cpu.system) / 1e6 }));
}

/** Runs this file in a role, in a process of its own; `onLine` sees its output lines. */
function child(role: string, extra: string[], onLine: (line: string) => void = () => {}): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', SELF, '--role', role, '--model', modelDir, '--seconds', String(seconds), '--threads', String(threads), ...extra], { stdio: ['ignore', 'pipe', 'inherit'] });
    let last = '';
    let buffer = '';
    p.stdout.on('data', (d: Buffer) => {
      buffer += d;
      for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
        const line = buffer.slice(0, i);
        buffer = buffer.slice(i + 1);
        last = line;
        onLine(line);
      }
    });
    p.on('exit', (code) => (code === 0 ? resolvePromise(last) : reject(new Error(`${role} exited with ${code}`))));
  });
}

async function startServer(args: string, profileDir?: string): Promise<{ pid: number; url: string; stop: () => Promise<void> }> {
  const words = args.split(' ').filter(Boolean);
  // "@<checkout> args": served by another checkout's CLI (e.g. a worktree of main before a change), in the same rounds.
  const other = words[0]?.startsWith('@') ? words.shift()!.slice(1) : null;
  const cli = other ? join(resolve(other), 'bin', 'lexembed.js') : CLI;
  if (!existsSync(cli)) throw new Error(`--serve-args: ${cli} does not exist (name a checkout with "@<dir>")`);
  const extra = words;
  const server = await startServerProcess(
    [...(profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []), cli, 'serve', '--no-auth', '--port', '0', '--model', modelDir, '--threads', String(threads), ...extra],
    /listening on (http:\/\/[^\s)"]+)/,
    /model .* loaded/,
  );
  // Under --cpu-prof, SIGINT: the server exits through its own shutdown and the profile is written.
  return { pid: server.pid, url: server.url, stop: () => server.stop(profileDir ? 'SIGINT' : 'SIGTERM') };
}

interface Totals {
  texts: number;
  wall: number;
  cpu: number;
  loadCpu: number;
  rounds: string[];
}

async function main() {
  // Each server configuration runs beside the others and raw, rounds alternating.
  console.log(`CPU per text — model ${modelDir}, ${threads} onnxruntime threads, ${values.rounds} rounds of ${seconds} s per measurement, ${availableParallelism()} cores`);
  const servers = [];
  for (const args of configs) servers.push(await startServer(args));
  // The server column is as wide as the longest configuration, so two that share a prefix stay apart.
  const labelWidth = Math.max(20, ...configs.map((c) => c.length));
  console.log(`tokens  ${'server'.padEnd(labelWidth)}   raw cpu-ms/text  server cpu-ms/text  efficiency   raw texts/s  server texts/s  server÷raw texts/s  load-gen cpu-ms/text   efficiency by round`);
  try {
    for (const length of values.lengths!.split(',').map(Number)) {
      const empty = (): Totals => ({ texts: 0, wall: 0, cpu: 0, loadCpu: 0, rounds: [] });
      const raws = rawGraphs.map(empty);
      const raw = raws[0]!;
      const served = servers.map(empty);
      for (let round = 0; round < Number(values.rounds); round++) {
        let r = { texts: 0, wall: 0, cpu: 0 };
        for (const [g, graph] of rawGraphs.entries()) {
          const one = JSON.parse(await child('raw', ['--length', String(length), '--graph', graph])) as { texts: number; wall: number; cpu: number };
          (raws[g]!.texts += one.texts), (raws[g]!.wall += one.wall), (raws[g]!.cpu += one.cpu);
          if (g === 0) r = one;
        }
        for (const [i, server] of servers.entries()) {
          let cpu0 = 0;
          const load = JSON.parse(await child('load', ['--length', String(length), '--url', server.url], (line) => line === 'measure' && (cpu0 = cpuSecondsOf(server.pid)))) as { texts: number; wall: number; loadCpu: number };
          const cpu = cpuSecondsOf(server.pid) - cpu0;
          const sum = served[i]!;
          (sum.texts += load.texts), (sum.wall += load.wall), (sum.cpu += cpu), (sum.loadCpu += load.loadCpu);
          sum.rounds.push((r.cpu / r.texts / (cpu / load.texts)).toFixed(2));
        }
      }
      const rawPer = (raw.cpu / raw.texts) * 1000;
      const rawRate = raw.texts / raw.wall;
      for (const [i, sum] of served.entries()) {
        const serverPer = (sum.cpu / sum.texts) * 1000;
        const serverRate = sum.texts / sum.wall;
        console.log(
          `${String(length).padStart(6)}  ${(configs[i] || 'defaults').padEnd(labelWidth)}  ${rawPer.toFixed(2).padStart(15)}  ${serverPer.toFixed(2).padStart(18)}  ${(rawPer / serverPer).toFixed(2).padStart(10)}   ${rawRate.toFixed(0).padStart(11)}  ${serverRate.toFixed(0).padStart(14)}  ${(serverRate / rawRate).toFixed(2).padStart(18)}  ${((sum.loadCpu / sum.texts) * 1000).toFixed(2).padStart(20)}   ${sum.rounds.join(' ')}`,
        );
      }
      for (const [g, graph] of rawGraphs.entries()) {
        if (g === 0 && rawGraphs.length === 1) break;
        const t = raws[g]!;
        console.log(
          `${String(length).padStart(6)}  raw ${graph.padEnd(labelWidth - 4)}  ${((t.cpu / t.texts) * 1000).toFixed(2).padStart(15)}  ${''.padStart(18)}  ${''.padStart(10)}   ${(t.texts / t.wall).toFixed(0).padStart(11)}  ${`×${(t.texts / t.wall / rawRate).toFixed(2)} texts/s of raw ${rawGraphs[0]}`.padStart(14)}`,
        );
      }
    }
    if (servers.length > 1) await latencyAtOne(servers.map((s) => s.url));
    console.log('(targets: efficiency ≥ 0.90 at every length; server texts/s ≥ 0.90 × raw for short texts)');
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
  }
}

/**
 * One short text per request at concurrency 1, the server configurations taking turns request by
 * request (so a busy moment of the shared machine falls on all of them): p50 and p90 of each, and
 * each p50 against the first configuration's.
 */
async function latencyAtOne(urls: string[]) {
  const { texts } = await textsOf(16);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const times: number[][] = urls.map(() => []);
  const requests = 300;
  for (let i = 0; i < requests + 20; i++) {
    for (const [k, url] of urls.entries()) {
      const body = JSON.stringify({ model: 'legal-2-embedder', texts: [texts[i % texts.length]!] });
      const t0 = performance.now();
      const { status, text } = await postJson(agent, new URL('/v1/embeddings', url).href, body);
      if (status !== 200) throw new Error(`status ${status}: ${text}`);
      if (i >= 20) times[k]!.push(performance.now() - t0); // the first 20 warm up
    }
  }
  agent.destroy();
  const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))]!;
  const base = quantile(times[0]!, 0.5);
  console.log(`one ~16-token text per request, concurrency 1, ${requests} requests each, configurations taking turns:`);
  for (const [k, xs] of times.entries()) {
    const p50 = quantile(xs, 0.5);
    console.log(`  ${(configs[k] || 'defaults').padEnd(24)} p50 ${p50.toFixed(2)} ms  p90 ${quantile(xs, 0.9).toFixed(2)} ms  p50 ÷ first's ${(p50 / base).toFixed(2)}`);
  }
}

/**
 * --profile: per server configuration and length, a fresh server under `node --cpu-prof` takes
 * one round of the load; its threads' samples within the load are put in categories
 * (profile-summary.ts) and printed as thread time per text, beside raw onnxruntime's CPU per text.
 */
async function profileMain() {
  const root = mkdtempSync(join(tmpdir(), 'lexembed-profile-'));
  console.log(`Where the server's CPU goes — model ${modelDir}, ${threads} onnxruntime threads, one ${seconds} s round under node --cpu-prof (which adds its own cost), ${availableParallelism()} cores`);
  try {
    for (const length of values.lengths!.split(',').map(Number)) {
      const raw = JSON.parse(await child('raw', ['--length', String(length)])) as { texts: number; cpu: number };
      for (const [i, args] of configs.entries()) {
        const dir = join(root, `${length}-${i}`);
        const server = await startServer(args, dir);
        let from = 0;
        const load = JSON.parse(await child('load', ['--length', String(length), '--url', server.url], (line) => line === 'measure' && (from = profileClock()))) as { texts: number };
        const to = profileClock();
        await server.stop();
        const threads = summariseFolder(dir, [from, to]);
        const perText = (ms: number) => (ms / load.texts).toFixed(3).padStart(10);
        console.log(`\n~${length} tokens, ${args || 'defaults'}: ms per text by thread and category (raw onnxruntime: ${((raw.cpu / raw.texts) * 1000).toFixed(3)} CPU-ms a text in all)`);
        console.log(`${'category'.padEnd(20)}${threads.map((t) => t.thread.padStart(12)).join('')}${'all'.padStart(12)}`);
        for (const category of CATEGORIES) {
          const all = threads.reduce((n, t) => n + t.ms.get(category)!, 0);
          if (all / load.texts < 0.0005) continue;
          console.log(`${category.padEnd(20)}${threads.map((t) => `  ${perText(t.ms.get(category)!)}`).join('')}  ${perText(all)}`);
        }
        console.log(`${'busy (all but idle)'.padEnd(20)}${threads.map((t) => `  ${perText(busyMs(t.ms))}`).join('')}  ${perText(threads.reduce((n, t) => n + busyMs(t.ms), 0))}`);
      }
    }
    console.log(
      "\n(the profiler samples each thread's time while it runs or waits for a core, so these are not CPU time, which bench:cpu without --profile measures; onnxruntime's own pool threads have no profile: their share of the model shows in bench:cpu's process CPU)",
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

if (values.role === 'raw') await rawRole();
else if (values.role === 'load') await loadRole();
else if (values.profile) await profileMain();
else await main();
