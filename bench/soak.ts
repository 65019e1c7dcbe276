// `npm run bench:soak`: the lexembed server at saturation (64 connections, mixed texts) for
// 10 minutes, sampling its RSS every 10 s; reports the drift after a warm-up (default 2 minutes:
// measured here, RSS peaks at ~670 MB in the first 90 s while onnxruntime's arena and V8's heap
// settle, then holds within 1 % at ~615 MB), and the growth from the first to the last minute.
// Usage: npm run bench:soak -- [--model <dir>] [--minutes 10] [--warmup-seconds 120]
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { AutoTokenizer, env } from '@huggingface/transformers';
import { PROJECT_ROOT } from '../src/node/runtime/load-model.ts';
import { makeTexts, wordsForTokens } from './texts.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: join(PROJECT_ROOT, 'bench-results', 'minilm-l6-h384') },
    minutes: { type: 'string', default: '10' },
    'warmup-seconds': { type: 'string', default: '120' },
    json: { type: 'string', default: join(PROJECT_ROOT, 'bench-results', 'soak.json') },
  },
});
const modelDir = resolve(values.model!);
if (!existsSync(join(modelDir, 'onnx', 'model.onnx'))) {
  console.error(`no model at ${modelDir}; run npm run bench:model first, or pass --model <dir>`);
  process.exit(2);
}
env.allowRemoteModels = false;
env.localModelPath = dirname(modelDir) + '/';
const tokenizer = await AutoTokenizer.from_pretrained(basename(modelDir));
const encode = (t: string) => tokenizer.encode(t);
const texts = [16, 64, 128, 256].flatMap((t) => makeTexts(64, wordsForTokens(encode, t), t));
const bodies = texts.map((t) => JSON.stringify({ model: 'legal-2-embedder', texts: [t] }));

const child = spawn(process.execPath, [join(PROJECT_ROOT, 'bin', 'lexembed.js'), 'serve', '--no-auth', '--port', '0', '--model', modelDir], { stdio: ['ignore', 'pipe', 'inherit'] });
const url = await new Promise<string>((res) => {
  let out = '';
  child.stdout!.on('data', (d) => {
    out += d;
    const m = /listening on (http:\/\/[^\s)"]+)/.exec(out);
    if (m && /model .* loaded/.test(out)) res(m[1]!);
  });
});
const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1]) / 1024;
const seconds = Number(values.minutes) * 60;
const samples: { t: number; rss_mb: number }[] = [];
const started = Date.now();
const sampler = setInterval(() => {
  const s = { t: Math.round((Date.now() - started) / 1000), rss_mb: +rss().toFixed(1) };
  samples.push(s);
  console.log(`t=${String(s.t).padStart(4)}s  rss ${s.rss_mb} MB`);
}, 10_000);
let i = 0;
const result = await autocannon({
  url: `${url}/v1/embeddings`,
  connections: 64,
  duration: seconds,
  requests: [{ method: 'POST', headers: { 'content-type': 'application/json' }, setupRequest: (req: any) => ({ ...req, body: bodies[i++ % bodies.length] }) }],
});
clearInterval(sampler);
child.kill('SIGTERM');
const warmup = Number(values['warmup-seconds']);
const warm = samples.filter((s) => s.t >= warmup).map((s) => s.rss_mb);
const base = warm[0] ?? NaN;
const drift = warm.length ? Math.max(...warm.map((x) => Math.abs(x - base) / base)) : NaN;
// Growth: mean of the last minute against the mean of the first minute after warm-up.
const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
const growth = warm.length >= 12 ? mean(warm.slice(-6)) / mean(warm.slice(0, 6)) - 1 : NaN;
console.log(`\n${result['2xx']} requests ok, ${result.non2xx + result.errors} failed, ${(result['2xx'] / seconds).toFixed(1)} texts/s`);
console.log(`RSS after a ${warmup} s warm-up: first ${base} MB, min ${Math.min(...warm)} MB, max ${Math.max(...warm)} MB, largest drift ${(drift * 100).toFixed(1)}% (target ±5%)`);
console.log(`RSS growth, last minute vs first minute after warm-up: ${(growth * 100).toFixed(1)}%; whole run: peak ${Math.max(...samples.map((s) => s.rss_mb))} MB`);
mkdirSync(dirname(values.json!), { recursive: true });
writeFileSync(values.json!, JSON.stringify({ model: modelDir, seconds, ok: result['2xx'], failed: result.non2xx + result.errors, samples, warmup_seconds: warmup, drift, growth }, null, 2));
