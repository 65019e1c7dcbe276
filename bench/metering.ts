// `npm run bench:metering` (and the end of `npm run bench`): what usage metering, rate limits and
// quotas cost. The same server with API keys, on the same short texts (~12 words, the worst case
// for per-request overhead: queries), one text per request, c=64, run back to back in
// alternating rounds: usage off (--no-usage) against usage on with a key whose rpm/tpm and an
// account whose monthly quota are set high enough never to refuse (so every check runs), on the
// file store and, where redis-server is installed, on Redis. Prints texts/s and on ÷ off
// (target ≥ 0.98) over all rounds, the ratio of each round (how much the machine moved them),
// and each server's own CPU per request (every thread, from /proc), with Redis's beside it where
// Redis is the store: what metering costs the machine, which its noise moves far less than throughput.
// Usage: npm run bench:metering -- [--model <dir>] [--duration 5] [--rounds 6]
import autocannon from 'autocannon';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { BUNDLED_MODEL_DIR, PROJECT_ROOT } from '../src/node/runtime/load-model.ts';
import { cpuSecondsOf } from './process-cpu.ts';
import { makeTexts } from './texts.ts';

const CLI = join(PROJECT_ROOT, 'bin', 'lexembed.js');

export interface MeteringRow {
  readonly store: string;
  readonly usage: 'off' | 'on';
  readonly texts_per_s: number;
  /** The server's CPU milliseconds per answered request (every thread of its process). */
  readonly cpu_ms_per_request: number;
  readonly errors: number;
  /** Redis's own CPU milliseconds per answered request while this server ran (Redis rows only). */
  readonly redis_cpu_ms_per_request?: number;
  /** on ÷ off texts/s of each round (the 'on' rows only). */
  readonly round_ratios?: number[];
}

export async function benchMetering(options: { model: string; duration: number; rounds: number }): Promise<MeteringRow[]> {
  const work = mkdtempSync(join(tmpdir(), 'lexembed-bench-metering-'));
  const children: ChildProcess[] = [];
  let redis: ChildProcess | undefined;
  try {
    const stores: { name: string; args: string[] }[] = [{ name: 'file', args: ['--data-dir', join(work, 'file')] }];
    if (!spawnSync('redis-server', ['--version']).error) {
      const port = 20000 + Math.floor(Math.random() * 20000);
      redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      await new Promise((r) => setTimeout(r, 300));
      stores.push({ name: 'redis', args: ['--store', 'redis', '--redis-url', `redis://127.0.0.1:${port}`, '--data-dir', join(work, 'redis')] });
    } else {
      console.log('(redis-server not installed: the file store only)');
    }
    const texts = makeTexts(2000, 12, 7);
    const cases: { store: string; usage: 'off' | 'on'; url: string; key: string; pid: number }[] = [];
    for (const store of stores) {
      const created = cli(['keys', 'create', '--account', 'bench', '--rpm', '1000000000', '--tpm', '1000000000000', ...store.args]);
      const key = created.trim().split('\n').at(-1)!;
      cli(['accounts', 'set', 'bench', '--monthly-tokens', '100000000000000', ...store.args]);
      for (const usage of ['off', 'on'] as const) {
        const { child, url } = await startServer([...store.args, '--model', options.model, ...(usage === 'off' ? ['--no-usage'] : [])]);
        children.push(child);
        cases.push({ store: store.name, usage, url, key, pid: child.pid! });
      }
    }
    const totals = new Map<string, { ok: number; seconds: number; cpu: number; redisCpu: number; errors: number; rounds: number[] }>();
    for (let round = 0; round < options.rounds; round++) {
      // Alternate the order each round, so neither setting always runs on a warmer machine.
      for (const c of round % 2 ? [...cases].reverse() : cases) {
        const cpu0 = cpuSecondsOf(c.pid);
        const redisCpu0 = redis ? cpuSecondsOf(redis.pid!) : 0;
        const r = await load(c.url, c.key, texts, options.duration);
        const cpu = cpuSecondsOf(c.pid) - cpu0;
        const redisCpu = redis ? cpuSecondsOf(redis.pid!) - redisCpu0 : 0;
        const t = totals.get(`${c.store}/${c.usage}`) ?? { ok: 0, seconds: 0, cpu: 0, redisCpu: 0, errors: 0, rounds: [] };
        totals.set(`${c.store}/${c.usage}`, {
          ok: t.ok + r.ok,
          seconds: t.seconds + options.duration,
          cpu: t.cpu + cpu,
          redisCpu: t.redisCpu + redisCpu,
          errors: t.errors + r.errors,
          rounds: [...t.rounds, r.ok / options.duration],
        });
      }
    }
    const rows: MeteringRow[] = cases.map((c) => {
      const t = totals.get(`${c.store}/${c.usage}`)!;
      const off = totals.get(`${c.store}/off`)!;
      return {
        store: c.store,
        usage: c.usage,
        texts_per_s: t.ok / t.seconds,
        cpu_ms_per_request: (t.cpu / t.ok) * 1000,
        ...(c.store === 'redis' ? { redis_cpu_ms_per_request: (t.redisCpu / t.ok) * 1000 } : {}),
        errors: t.errors,
        ...(c.usage === 'on' ? { round_ratios: t.rounds.map((rate, i) => rate / off.rounds[i]!) } : {}),
      };
    });
    console.log(`\nmetering: short texts (~12 words), one per request, c=64, same run, ${options.rounds} alternating rounds of ${options.duration} s`);
    console.log('store  usage  texts/s  server cpu-ms/request  redis cpu-ms/request  errors');
    for (const r of rows) {
      const redisCpu = r.redis_cpu_ms_per_request === undefined ? '-' : r.redis_cpu_ms_per_request.toFixed(3);
      console.log(`${r.store.padEnd(6)} ${r.usage.padEnd(5)} ${r.texts_per_s.toFixed(1).padStart(8)}  ${r.cpu_ms_per_request.toFixed(3).padStart(21)}  ${redisCpu.padStart(20)}  ${r.errors}`);
    }
    for (const store of stores) {
      const on = rows.find((r) => r.store === store.name && r.usage === 'on')!;
      const off = rows.find((r) => r.store === store.name && r.usage === 'off')!;
      console.log(
        `metering on ÷ off, ${store.name} store: ${(on.texts_per_s / off.texts_per_s).toFixed(3)} texts/s (target ≥ 0.98; rounds ${on.round_ratios!.map((x) => x.toFixed(2)).join(' ')}), ` +
          `server CPU per request × ${(on.cpu_ms_per_request / off.cpu_ms_per_request).toFixed(3)}` +
          (on.redis_cpu_ms_per_request === undefined ? '' : `, server + Redis × ${((on.cpu_ms_per_request + on.redis_cpu_ms_per_request) / (off.cpu_ms_per_request + off.redis_cpu_ms_per_request!)).toFixed(3)}`),
      );
    }
    return rows;
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : null)));
    redis?.kill('SIGTERM');
    rmSync(work, { recursive: true, force: true });
  }
}

function cli(args: string[]): string {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`lexembed ${args.join(' ')} failed:\n${r.stderr}`);
  return r.stdout;
}

async function startServer(args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    const onData = (d: Buffer) => {
      output += d;
      const m = /listening on (http:\/\/[^\s)"]+)/.exec(output);
      if (m && /model .* loaded/.test(output)) resolve({ child, url: m[1]! });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`server exited (${code}):\n${output}`)));
  });
}

async function load(url: string, key: string, texts: string[], seconds: number) {
  let i = 0;
  const bodies = texts.map((t) => JSON.stringify({ model: 'legal-2-embedder', texts: [t] }));
  const result = await autocannon({
    url: `${url}/v1/embeddings`,
    connections: 64,
    duration: seconds,
    requests: [{ method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, setupRequest: (req: any) => ({ ...req, body: bodies[i++ % bodies.length] }) }],
  });
  return { ok: result['2xx'], errors: result.non2xx + result.errors };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { model: { type: 'string', default: BUNDLED_MODEL_DIR }, duration: { type: 'string', default: '5' }, rounds: { type: 'string', default: '6' } } });
  await benchMetering({ model: resolve(values.model!), duration: Number(values.duration), rounds: Number(values.rounds) });
}
