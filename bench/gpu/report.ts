// Merges the GPU run's files (bench-<model>.json from bench/run.ts, anchor-<model>.json from
// bench/gpu/torch_anchor.py) into one JSON file and a readable Markdown table, with the issue's
// targets: WebGPU ≥ 10 × the CPU path (MiniLM-shaped model, 128 tokens), lexembed-webgpu ≥ 0.5 ×
// PyTorch on the same card, GPU vectors equal to the CPU's at cosine ≥ 0.999.
// Usage: tsx bench/gpu/report.ts --dir <run dir> --json <out.json> --markdown <out.md> [--environment <file>]
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

interface Row {
  workload: string;
  path: string;
  device: string;
  concurrency?: number;
  texts_per_s: number;
  p50_ms?: number;
  p99_ms?: number;
  gpu_mem_mb?: number;
  errors?: number;
}
interface Bench {
  devices: Record<string, { backend: string; reason?: string; load_ms: number; first_batch_ms: number; gpu_mem_mb?: number }>;
  parity?: { texts: number; min_cosine: number; mean_cosine: number };
  results: Row[];
}
interface Anchor {
  dtype: string;
  device: string;
  gpu: string | null;
  torch: string;
  parity: Record<string, number | null>;
  results: { workload: string; texts_per_s: number; single_p50_ms: number; single_p99_ms: number }[];
  gpu_max_memory_allocated_mb?: number;
}

const { values } = parseArgs({ options: { dir: { type: 'string' }, json: { type: 'string' }, markdown: { type: 'string' }, environment: { type: 'string' } } });
if (!values.dir || !values.json || !values.markdown) {
  console.error('usage: tsx bench/gpu/report.ts --dir <run dir> --json <out.json> --markdown <out.md> [--environment <file>]');
  process.exit(2);
}
const dir = values.dir;
const read = <T>(file: string): T | undefined => (existsSync(join(dir, file)) ? (JSON.parse(readFileSync(join(dir, file), 'utf8')) as T) : undefined);
const models = readdirSync(dir).filter((f) => /^bench-.+\.json$/.test(f)).map((f) => f.slice('bench-'.length, -'.json'.length)).sort();
if (models.length === 0) (console.error(`report: no bench-<model>.json in ${dir}`), process.exit(1));

const fmt = (x: number | undefined, digits = 0) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(digits));
const ratio = (a: number | undefined, b: number | undefined) => (a !== undefined && b ? a / b : undefined);
// A server run in which no request finished has no latency (autocannon reports 0).
const latency = (r: Row | undefined, key: 'p50_ms' | 'p99_ms') => (r && r.texts_per_s > 0 ? r[key] : undefined);
const environment = values.environment && existsSync(values.environment) ? readFileSync(values.environment, 'utf8').trim() : '';

const md: string[] = ['# lexembed on a GPU: WebGPU path, CPU path and PyTorch, same machine, same run', ''];
if (environment) md.push('```', environment, '```', '');
const summary: Record<string, unknown> = {};
const targets: { what: string; value: number | undefined; target: string; met: boolean | undefined }[] = [];
for (const model of models) {
  const bench = read<Bench>(`bench-${model}.json`)!;
  const anchor = read<Anchor>(`anchor-${model}.json`);
  const find = (w: string, p: string, device: string, c?: number) =>
    bench.results.find((r) => r.workload === w && r.path.startsWith(p) && r.device === device && (c === undefined || r.concurrency === c));
  const workloads = [...new Set(bench.results.map((r) => r.workload))];
  md.push(`## ${model}`, '');
  for (const [device, d] of Object.entries(bench.devices)) {
    md.push(`- ${device}: ${d.backend}${d.reason ? ` (${d.reason})` : ''}; load ${fmt(d.load_ms)} ms, first batch ${fmt(d.first_batch_ms)} ms${d.gpu_mem_mb === undefined ? '' : `, GPU memory after it ${fmt(d.gpu_mem_mb)} MiB`}`);
  }
  if (bench.parity) md.push(`- vectors, WebGPU vs CPU (${bench.parity.texts} texts): min cosine ${bench.parity.min_cosine.toFixed(6)}, mean ${bench.parity.mean_cosine.toFixed(6)}`);
  if (anchor) {
    const p = Object.entries(anchor.parity).filter(([k]) => k !== 'texts').map(([k, v]) => `${k.replaceAll('_', ' ')} ${v === null ? 'n/a' : v.toFixed(6)}`).join('; ');
    md.push(`- PyTorch ${anchor.torch} ${anchor.dtype} on ${anchor.gpu ?? anchor.device}: ${p}${anchor.gpu_max_memory_allocated_mb === undefined ? '' : `; max memory allocated ${fmt(anchor.gpu_max_memory_allocated_mb)} MiB`}`);
  }
  md.push('', '| workload | CPU embedder texts/s | WebGPU embedder texts/s | WebGPU ÷ CPU | CPU server c=64 | WebGPU server c=64 | WebGPU server c=1 p50 / p99 ms | WebGPU server c=64 p50 / p99 ms | PyTorch texts/s | WebGPU ÷ PyTorch | GPU MiB |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  const rows: Record<string, unknown>[] = [];
  for (const w of workloads) {
    const [bc, bg, sc, sg, sg1] = [find(w, '(b)', 'cpu'), find(w, '(b)', 'webgpu'), find(w, '(c)', 'cpu', 64), find(w, '(c)', 'webgpu', 64), find(w, '(c)', 'webgpu', 1)];
    const torch = anchor?.results.find((r) => r.workload === w);
    const row = {
      workload: w, cpu_embedder: bc?.texts_per_s, webgpu_embedder: bg?.texts_per_s, webgpu_over_cpu: ratio(bg?.texts_per_s, bc?.texts_per_s),
      cpu_server_c64: sc?.texts_per_s, webgpu_server_c64: sg?.texts_per_s, webgpu_server_c1_p50_ms: latency(sg1, 'p50_ms'), webgpu_server_c1_p99_ms: latency(sg1, 'p99_ms'),
      webgpu_server_c64_p50_ms: latency(sg, 'p50_ms'), webgpu_server_c64_p99_ms: latency(sg, 'p99_ms'), pytorch: torch?.texts_per_s,
      webgpu_over_pytorch: ratio(bg?.texts_per_s, torch?.texts_per_s), gpu_mem_mb: Math.max(...[bg?.gpu_mem_mb, sg?.gpu_mem_mb].filter((x): x is number => x !== undefined)),
    };
    rows.push(row);
    md.push(`| ${w} | ${fmt(row.cpu_embedder)} | ${fmt(row.webgpu_embedder)} | ${fmt(row.webgpu_over_cpu, 2)} | ${fmt(row.cpu_server_c64)} | ${fmt(row.webgpu_server_c64)} | ${fmt(row.webgpu_server_c1_p50_ms, 1)} / ${fmt(row.webgpu_server_c1_p99_ms, 1)} | ${fmt(row.webgpu_server_c64_p50_ms, 1)} / ${fmt(row.webgpu_server_c64_p99_ms, 1)} | ${fmt(row.pytorch)} | ${fmt(row.webgpu_over_pytorch, 2)} | ${fmt(row.gpu_mem_mb)} |`);
    if (model === 'minilm' && w === 'medium') {
      targets.push({ what: 'WebGPU ÷ CPU, MiniLM-shaped, 128 tokens (embedder)', value: row.webgpu_over_cpu, target: '≥ 10', met: row.webgpu_over_cpu === undefined ? undefined : row.webgpu_over_cpu >= 10 });
      targets.push({ what: 'WebGPU ÷ PyTorch, MiniLM-shaped, 128 tokens (embedder)', value: row.webgpu_over_pytorch, target: '≥ 0.5', met: row.webgpu_over_pytorch === undefined ? undefined : row.webgpu_over_pytorch >= 0.5 });
    }
  }
  if (bench.parity) targets.push({ what: `WebGPU vs CPU vectors, ${model}, min cosine`, value: bench.parity.min_cosine, target: '≥ 0.999', met: bench.parity.min_cosine >= 0.999 });
  // bench/native-webgpu.ts: pooling on the GPU vs read back and pooled in JavaScript, same run.
  const pooling = existsSync(join(dir, `pooling-${model}.txt`)) ? readFileSync(join(dir, `pooling-${model}.txt`), 'utf8').trim().split('\n').filter((l) => /texts\/s/.test(l)) : [];
  if (pooling.length) md.push('', 'Pooling on the GPU vs in JavaScript, and fp16 (the provider directly, same texts and run):', '', '```', ...pooling, '```');
  md.push('');
  summary[model] = { devices: bench.devices, parity: bench.parity, pooling_comparison: pooling, anchor: anchor && { dtype: anchor.dtype, device: anchor.device, gpu: anchor.gpu, torch: anchor.torch, parity: anchor.parity, gpu_max_memory_allocated_mb: anchor.gpu_max_memory_allocated_mb }, rows, raw: { bench: bench.results, anchor: anchor?.results } };
}
md.push('## Targets', '', '| what | value | target | met |', '|---|---:|---|---|');
for (const t of targets) md.push(`| ${t.what} | ${fmt(t.value, 3)} | ${t.target} | ${t.met === undefined ? 'not measured' : t.met ? 'yes' : 'no'} |`);
md.push('', 'Embedder: the lexembed library (tokenising, batching queue, pooling) on all texts of the workload; server: `lexembed serve` under autocannon, one text per request (– where none finished in the run); PyTorch: the same weights (transformer layers in a transformers BertModel) on the same token sequences, same batch limits, vectors copied back to the host.');
writeFileSync(values.json, JSON.stringify({ environment, models: summary, targets }, null, 2));
writeFileSync(values.markdown, `${md.join('\n')}\n`);
console.log(`wrote ${values.json} and ${values.markdown}`);
