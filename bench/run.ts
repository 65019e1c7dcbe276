// `npm run bench`: the throughput benchmark of issue "Throughput", all paths on the same texts in one run:
//   (a) raw onnxruntime-node on pre-tokenised, length-sorted batches (the ceiling)
//   (b) the lexembed Embedder library (tokenising, scheduler, pooling)
//   (c) the lexembed HTTP server under concurrent load from autocannon (at concurrency 1, one
//       keep-alive client timing each request to the microsecond)
//   (d) a naive server calling the transformers.js pipeline once per request
//   (e) the server with and without usage metering, rate limits and quotas (bench/metering.ts)
// Workloads short (~16 tokens), medium (~128), long (~512), mixed; concurrency 1 and 64.
// With --devices cpu,webgpu, (b) and (c) also run on the WebGPU path (src/node/runtime/webgpu/) beside
// onnxruntime-node, on the same texts.
// Usage: npm run bench -- [--model <dir>] [--duration 10] [--workloads short,medium,long,mixed] [--skip-naive] [--skip-metering]
//        [--devices cpu,webgpu] [--gpu-adapter NVIDIA] [--webgpu-max-batch-tokens auto|N]
//        [--webgpu-graph auto|plain|fused] [--webgpu-dtype auto|fp32|fp16]
import autocannon from 'autocannon';
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import { AutoTokenizer, env } from '@huggingface/transformers';
import { PROJECT_ROOT, loadModelFolder } from '../src/node/runtime/load-model.ts';
import { truncateToMaxTokens } from '../src/contract/index.ts';
import { padBatch } from '../src/backend/padding.ts';
import { postJson } from './http-client.ts';
import { benchMetering } from './metering.ts';
import { startServerProcess, type ServerProcess } from './server-process.ts';
import { workloadTexts, workloads } from './texts.ts';

const DEFAULT_MODEL = join(PROJECT_ROOT, 'bench-results', 'minilm-l6-h384');
const { values } = parseArgs({
  options: {
    model: { type: 'string', default: DEFAULT_MODEL },
    duration: { type: 'string', default: '10' },
    workloads: { type: 'string', default: 'short,medium,long,mixed' },
    concurrency: { type: 'string', default: '1,64' },
    'skip-naive': { type: 'boolean', default: false },
    'skip-metering': { type: 'boolean', default: false },
    inference: { type: 'string', default: 'worker' },
    threads: { type: 'string', default: '0' },
    'max-batch-tokens': { type: 'string', default: '512' },
    devices: { type: 'string', default: 'cpu' },
    'gpu-adapter': { type: 'string', default: '' },
    'webgpu-max-batch-tokens': { type: 'string', default: 'auto' },
    // The WebGPU path's graph and precision (serve's --graph and --dtype; the CPU path keeps its defaults).
    'webgpu-graph': { type: 'string', default: 'auto' },
    'webgpu-dtype': { type: 'string', default: 'auto' },
    json: { type: 'string', default: join(PROJECT_ROOT, 'bench-results', 'bench.json') },
  },
});
const modelDir = resolve(values.model!);
if (!existsSync(join(modelDir, 'onnx', 'model.onnx'))) {
  console.error(`no model at ${modelDir}.\nGenerate the MiniLM-L6-H384-shaped benchmark model (random weights; needs numpy and onnx, e.g. Debian's python3-onnx):\n` +
    '  npm run bench:model\n' +
    'or pass --model <dir> (e.g. models/legal-2-embedder).');
  process.exit(2);
}
const duration = Number(values.duration);
const threads = Number(values.threads) || availableParallelism();
const maxBatchTokens = Number(values['max-batch-tokens']);
const devices = values.devices!.split(',').map((d) => d.trim());
for (const d of devices) if (d !== 'cpu' && d !== 'webgpu') (console.error(`--devices: "${d}" is not cpu or webgpu`), process.exit(2));
const gpuAdapter = values['gpu-adapter'] || undefined;
const webgpuBatchTokens = values['webgpu-max-batch-tokens'] === 'auto' ? 'auto' : Number(values['webgpu-max-batch-tokens']);
if (webgpuBatchTokens !== 'auto' && !(Number.isInteger(webgpuBatchTokens) && webgpuBatchTokens > 0)) (console.error('--webgpu-max-batch-tokens: must be auto or a positive integer'), process.exit(2));
// auto: measured on the GPU at load (src/node/runtime/batch-budget.ts), as `lexembed serve` does by default.
const batchTokensFor = (device: string) => (device === 'webgpu' ? webgpuBatchTokens : maxBatchTokens);
const serverArgs = (device: string) => [
  '--inference', values.inference!, '--threads', String(threads), '--max-batch-tokens', String(batchTokensFor(device)),
  '--device', device, ...(gpuAdapter ? ['--gpu-adapter', gpuAdapter] : []),
  ...(device === 'webgpu' ? ['--graph', values['webgpu-graph']!, '--dtype', values['webgpu-dtype']!] : []),
];
const CLI = join(PROJECT_ROOT, 'bin', 'lexembed.js');

env.allowRemoteModels = false;
env.localModelPath = dirname(modelDir) + '/';
const tokenizer = await AutoTokenizer.from_pretrained(basename(modelDir));
const encode = (t: string) => tokenizer.encode(t);
const settings = JSON.parse(readFileSync(join(modelDir, 'lexembed.json'), 'utf8'));
const maxTokens: number = settings.max_input_tokens;

const knownWorkloads = Object.keys(workloads(maxTokens));
for (const name of values.workloads!.split(',')) {
  if (!knownWorkloads.includes(name)) (console.error(`--workloads: "${name}" is not one of ${knownWorkloads.join(', ')}`), process.exit(2));
}

console.log(`lexembed benchmark — model ${modelDir}`);
console.log(`node ${process.version}, ${availableParallelism()} cores, onnxruntime-node intra-op threads ${threads}, max batch tokens ${maxBatchTokens}, autocannon ${duration}s per run`);
console.log(`devices: ${devices.join(', ')}${devices.includes('webgpu') ? ` (webgpu max batch tokens ${batchTokensFor('webgpu')})` : ''}\n`);
const results: Record<string, unknown>[] = [];
const table: string[] = [];
const row = (r: Record<string, any>) => {
  results.push(r);
  const line = [
    r.workload.padEnd(7), r.path.padEnd(30), String(r.concurrency ?? '-').padStart(4),
    fmt(r.texts_per_s, 9), fmt(r.tokens_per_s, 10), fmt(r.p50_ms, 8, 1), fmt(r.p99_ms, 8, 1),
    r.padding_efficiency === undefined ? '       -' : `${(r.padding_efficiency * 100).toFixed(1).padStart(7)}%`, fmt(r.peak_rss_mb, 8),
  ].join(' ');
  table.push(line);
  console.log(line);
};
const header = 'workload path                           conc   texts/s   tokens/s   p50 ms   p99 ms  padding  peakMB';

const session = await ort.InferenceSession.create(join(modelDir, 'onnx', 'model.onnx'), { intraOpNumThreads: threads, interOpNumThreads: 1 });
const embedders = new Map<string, Awaited<ReturnType<typeof loadModelFolder>>>();
const startup: Record<string, { load_ms: number; first_batch_ms: number; gpu_mem_mb?: number }> = {};
for (const device of devices) {
  const t0 = performance.now();
  const budget = batchTokensFor(device);
  const e = await loadModelFolder(modelDir, {
    threads,
    device: device as 'cpu',
    gpuAdapter,
    ...(device === 'webgpu' ? { graph: values['webgpu-graph'] as 'auto', gpuDtype: values['webgpu-dtype'] as 'auto' } : {}),
    limits: { maxBatchSize: 64, maxBatchTokens, maxQueueTokens: 1 << 22, minPaddingEfficiency: 0.9 },
    batch: { tokens: budget, size: budget === 'auto' ? 'auto' : 64 },
  });
  const t1 = performance.now();
  // First-batch latency: one short text right after load (WebGPU compiles its pipelines here).
  await embedOrThrow(e, ['The lessee shall pay rent monthly in advance.']);
  startup[device] = { load_ms: t1 - t0, first_batch_ms: performance.now() - t1, gpu_mem_mb: device === 'webgpu' ? gpuMemoryMb() : undefined };
  embedders.set(device, e);
  console.log(`${device}: ${e.runtime.backendName}${e.runtime.deviceReason ? ` — ${e.runtime.deviceReason}` : ''} (load ${startup[device]!.load_ms.toFixed(0)} ms, first batch ${startup[device]!.first_batch_ms.toFixed(0)} ms)`);
}
// Vectors on the GPU against the CPU's, same texts (16 to 512 tokens).
let parity: { texts: number; min_cosine: number; mean_cosine: number } | undefined;
if (embedders.has('cpu') && embedders.has('webgpu')) {
  const texts = workloadTexts('mixed', encode, maxTokens).slice(0, 64);
  const [a, b] = [await embedOrThrow(embedders.get('cpu')!, texts), await embedOrThrow(embedders.get('webgpu')!, texts)];
  const cos = a.map((v, i) => v.reduce((s, x, k) => s + x * b[i]![k]!, 0));
  parity = { texts: texts.length, min_cosine: Math.min(...cos), mean_cosine: cos.reduce((s, x) => s + x, 0) / cos.length };
  console.log(`webgpu vs cpu vectors, ${texts.length} texts: min cosine ${parity.min_cosine.toFixed(6)}, mean ${parity.mean_cosine.toFixed(6)}`);
}
console.log(header);
const health: number[] = [];
for (const name of values.workloads!.split(',')) {
  const texts = workloadTexts(name, encode, maxTokens);
  const ids = texts.map((t) => truncateToMaxTokens(encode(t), maxTokens));
  const tokens = ids.reduce((s, x) => s + x.length, 0);
  const meanTokens = tokens / texts.length;

  // (a) ceiling: length-sorted batches under the same limits the scheduler uses.
  const sorted = [...ids].sort((x, y) => x.length - y.length);
  const batches: number[][][] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i + 1;
    while (j < sorted.length && j - i < 64 && (j - i + 1) * sorted[j]!.length <= maxBatchTokens) j++;
    batches.push(sorted.slice(i, j));
    i = j;
  }
  await runRaw(batches[0]!);
  const ta = performance.now();
  for (const b of batches) await runRaw(b);
  const rawSeconds = (performance.now() - ta) / 1000;
  const padded = batches.reduce((s, b) => s + b.length * Math.max(...b.map((x) => x.length)), 0);
  const single: number[] = [];
  for (const x of ids.slice(0, 20)) {
    const t = performance.now();
    await runRaw([x]);
    single.push(performance.now() - t);
  }
  row({ workload: name, path: '(a) raw onnxruntime', device: 'cpu', texts_per_s: texts.length / rawSeconds, tokens_per_s: tokens / rawSeconds, p50_ms: pct(single, 50), p99_ms: pct(single, 99), padding_efficiency: tokens / padded, peak_rss_mb: peakRssMb(process.pid), mean_tokens: meanTokens });

  // (b) the library: all texts as concurrent 128-text calls, so the scheduler sees them together.
  for (const [device, embedder] of embedders) {
    const embedAll = () => Promise.all(Array.from({ length: Math.ceil(texts.length / 128) }, (_, k) =>
      embedder.embed({ texts: texts.slice(k * 128, k * 128 + 128), task: null, overflowStrategy: 'drop_end', dimensions: null })));
    // WebGPU compiles pipelines per new shape on first use; measure warm, as a server runs.
    if (device === 'webgpu') await embedAll();
    const before = embedder.runtime.stats!();
    const tb = performance.now();
    await embedAll();
    const libSeconds = (performance.now() - tb) / 1000;
    const after = embedder.runtime.stats!();
    row({ workload: name, path: `(b) embedder library${device === 'cpu' ? '' : ` [${device}]`}`, device, texts_per_s: texts.length / libSeconds, tokens_per_s: tokens / libSeconds, padding_efficiency: (after.realTokens - before.realTokens) / (after.paddedTokens - before.paddedTokens), peak_rss_mb: peakRssMb(process.pid), gpu_mem_mb: device === 'webgpu' ? gpuMemoryMb() : undefined });
  }

  // (c) and (d): HTTP servers under autocannon, one text per request.
  const servers: [string, string, () => Promise<ServerProcess>][] = devices.map((device) => [
    `(c) lexembed server${device === 'cpu' ? '' : ` [${device}]`}`, device,
    () => startServerProcess([CLI, 'serve', '--no-auth', '--port', '0', '--model', modelDir, ...serverArgs(device)], /listening on (http:\/\/[^\s)"]+)/, /model .* loaded/),
  ]);
  servers.push(['(d) naive pipeline server', 'cpu', () => startServerProcess(['--import', 'tsx', join(PROJECT_ROOT, 'bench', 'naive-server.ts'), modelDir, '0'], /naive listening on (http:\/\/\S+)/)]);
  for (const [label, device, start] of servers) {
    if (label.startsWith('(d)') && values['skip-naive']) continue;
    const server = await start();
    // Warm a WebGPU server's pipelines for this workload's shapes first (compiled on first use).
    if (device === 'webgpu') await load(server.url, texts, 64, undefined, Math.min(duration, 5));
    // Every server is measured warm, as raw onnxruntime is in (a): its first seconds of requests
    // (functions not yet optimised, the model's first run of each shape) are not counted. Measured
    // on 2 cores, c=1, bundled hybrid, two runs: p50 4.0 and 4.8 ms in a fresh server's first 4 s, 2.7–3.6 in the next 12.
    await load(server.url, texts, 1, undefined, Math.min(duration, 3));
    try {
      for (const concurrency of values.concurrency!.split(',').map(Number)) {
        const metricsBefore = label.startsWith('(c)') ? await scrape(server.url) : undefined;
        const watchHealth = label.startsWith('(c)') && device === 'cpu' && concurrency > 1 && name === 'mixed';
        const r = await load(server.url, texts, concurrency, watchHealth ? health : undefined);
        const metricsAfter = label.startsWith('(c)') ? await scrape(server.url) : undefined;
        const eff = metricsBefore && metricsAfter ? (metricsAfter.tokens - metricsBefore.tokens) / (metricsAfter.padded - metricsBefore.padded) : 1;
        row({ workload: name, path: label, device, concurrency, texts_per_s: r.texts_per_s, tokens_per_s: r.texts_per_s * meanTokens, p50_ms: r.p50, p99_ms: r.p99, padding_efficiency: eff, peak_rss_mb: peakRssMb(server.child.pid!), gpu_mem_mb: device === 'webgpu' ? gpuMemoryMb() : undefined, errors: r.errors });
      }
    } finally {
      await server.stop();
    }
  }
}

const get = (w: string, p: string, c?: number, device = 'cpu') => results.find((r: any) => r.workload === w && r.path.startsWith(p) && r.device === device && (c === undefined || r.concurrency === c)) as any;
console.log('\nTargets');
const lines: [string, number | undefined, string][] = [];
const mixedA = get('mixed', '(a)');
const mixedC = get('mixed', '(c)', 64);
if (mixedA && mixedC) lines.push(['(c)/(a) at saturation, mixed', mixedC.texts_per_s / mixedA.texts_per_s, '≥ 0.90']);
for (const w of values.workloads!.split(',')) {
  const c = get(w, '(c)', 64);
  const d = get(w, '(d)', 64);
  if (c && d) lines.push([`(c)/(d), 64 single-text clients, ${w}`, c.texts_per_s / d.texts_per_s, '≥ 3']);
}
const shortC1 = get('short', '(c)', 1);
const shortA = get('short', '(a)');
if (shortC1 && shortA) lines.push([`short p50 at c=1 minus (a) one-text p50 (ms)`, shortC1.p50_ms - shortA.p50_ms, '≤ 3 ms']);
if (mixedC) lines.push(['padding efficiency, mixed, server c=64', mixedC.padding_efficiency, '≥ 0.90']);
if (health.length) lines.push(['/health p99 under load (ms)', pct(health, 99), '< 50 ms']);
if (devices.includes('webgpu')) {
  for (const w of values.workloads!.split(',')) {
    const [bg, bc, cg, cc] = [get(w, '(b)', undefined, 'webgpu'), get(w, '(b)'), get(w, '(c)', 64, 'webgpu'), get(w, '(c)', 64)];
    if (bg && bc) lines.push([`webgpu/cpu, embedder library, ${w}`, bg.texts_per_s / bc.texts_per_s, 'reported']);
    if (cg && cc) lines.push([`webgpu/cpu, server c=64, ${w}`, cg.texts_per_s / cc.texts_per_s, 'reported']);
  }
}
if (parity) lines.push(['webgpu vs cpu vectors, min cosine', parity.min_cosine, '≥ 0.999']);
for (const [what, value, target] of lines) console.log(`  ${what.padEnd(48)} ${value === undefined ? '-' : value.toFixed(3).padStart(9)}   target ${target}`);
mkdirSync(dirname(values.json!), { recursive: true });
writeFileSync(values.json!, JSON.stringify({ model: modelDir, node: process.version, cores: threads, duration_s: duration, devices: Object.fromEntries([...embedders].map(([d, e]) => [d, { backend: e.runtime.backendName, reason: e.runtime.deviceReason, ...startup[d] }])), parity, gpu: gpuInfo(), results, targets: Object.fromEntries(lines.map(([w, v, t]) => [w, { value: v, target: t }])), health_samples: health.length }, null, 2));
console.log(`\nwrote ${values.json}`);
for (const e of embedders.values()) await e.dispose();
// (e) what usage metering, rate limits and quotas cost: the same server with and without them (bench/metering.ts).
// The GPU kit skips it (--skip-metering): it measures the CPU server's bookkeeping, not the GPU.
if (!values['skip-metering']) await benchMetering({ model: modelDir, duration: Math.max(4, Math.ceil(duration / 2)), rounds: 2 });
process.exit(0);

async function embedOrThrow(embedder: Awaited<ReturnType<typeof loadModelFolder>>, texts: string[]): Promise<Float32Array[]> {
  const r = await embedder.embed({ texts, task: null, overflowStrategy: 'drop_end', dimensions: null });
  if (!r.ok) throw new Error(`${embedder.runtime.backendName}: ${r.problem.code}: ${r.problem.detail}`);
  return r.value.vectors;
}

/** One nvidia-smi query (CSV, no header); undefined on a machine without one. */
function nvidiaSmi(query: string, units = true): string | undefined {
  try {
    return execFileSync('nvidia-smi', [`--query-gpu=${query}`, `--format=csv,noheader${units ? '' : ',nounits'}`], { encoding: 'utf8', timeout: 10_000 }).trim();
  } catch {
    return undefined;
  }
}

/** GPU memory in use (MiB), summed over GPUs. */
function gpuMemoryMb(): number | undefined {
  return nvidiaSmi('memory.used', false)?.split('\n').reduce((s, x) => s + Number(x), 0);
}

/** The GPUs and driver. */
function gpuInfo(): string | undefined {
  return nvidiaSmi('name,driver_version,memory.total');
}

async function runRaw(batch: number[][]) {
  const { dims, inputIds, attentionMask, tokenTypeIds } = padBatch(batch);
  const feeds: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor('int64', inputIds, dims),
    attention_mask: new ort.Tensor('int64', attentionMask, dims),
    token_type_ids: new ort.Tensor('int64', tokenTypeIds, dims),
  };
  return session.run(Object.fromEntries(session.inputNames.map((n) => [n, feeds[n]!])));
}

async function load(url: string, texts: string[], connections: number, healthSamples?: number[], seconds = duration) {
  let i = 0;
  const bodies = texts.map((t) => JSON.stringify({ model: 'legal-2-embedder', texts: [t] }));
  if (connections === 1 && !healthSamples) return oneAtATime(url, bodies, seconds);
  let polling = true;
  const poller = (async () => {
    while (healthSamples && polling) {
      const t = performance.now();
      await fetch(`${url}/health`).then((r) => r.text());
      healthSamples.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const result = await autocannon({
    url: `${url}/v1/embeddings`,
    connections,
    duration: seconds,
    requests: [{ method: 'POST', headers: { 'content-type': 'application/json' }, setupRequest: (req: any) => ({ ...req, body: bodies[i++ % bodies.length] }) }],
  });
  polling = false;
  await poller;
  const ok = result['2xx'];
  return { texts_per_s: ok / seconds, p50: result.latency.p50, p99: result.latency.p99, errors: result.non2xx + result.errors };
}

async function scrape(url: string) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name} ([\\d.e+]+)$`, 'm').exec(text)?.[1] ?? 0);
  return { tokens: value('lexembed_tokens_embedded_total'), padded: value('lexembed_batch_padded_tokens_sum') };
}

function peakRssMb(pid: number): number {
  try {
    const kb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    return kb / 1024;
  } catch {
    return NaN;
  }
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

function fmt(x: number | undefined, width: number, digits = 0): string {
  return x === undefined || Number.isNaN(x) ? '-'.padStart(width) : x.toFixed(digits).padStart(width);
}

/**
 * Concurrency 1: one keep-alive node:http client, each request timed with performance.now().
 * autocannon's latencies have 1 ms resolution, too coarse for the ≤ 3 ms target on a ~1 ms model
 * run (it printed 4.0 where this client measures 3.4-3.9 on the same server).
 */
async function oneAtATime(url: string, bodies: string[], seconds: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const latencies: number[] = [];
  let ok = 0;
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  for (let i = 0; performance.now() < end; i++) {
    const t = performance.now();
    const { status } = await postJson(agent, `${url}/v1/embeddings`, bodies[i % bodies.length]!);
    latencies.push(performance.now() - t);
    if (status === 200) ok++;
    else errors++;
  }
  agent.destroy();
  return { texts_per_s: ok / seconds, p50: pct(latencies, 50), p99: pct(latencies, 99), errors };
}
