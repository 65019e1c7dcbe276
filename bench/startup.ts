// `npm run bench:startup`: start-up times of the CLI as an installed package runs it (built
// JavaScript in dist/), beside the same commands run from TypeScript source through tsx (how the
// CLI ran before it was built) in the same run. Median of --runs runs each:
//   lexembed --help · lexembed keys create · lexembed serve (process start → GET /health 200, and
//   → the "model loaded" log line) with --device cpu and with --device auto.
// Usage: npm run bench:startup -- [--runs 5]   (builds dist/ first)
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PROJECT_ROOT } from '../src/node/runtime/load-model.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' } } });
const RUNS = Number(values.runs);
const CLI = join(PROJECT_ROOT, 'bin', 'lexembed.js');
const TARGETS: Record<string, number> = { '--help': 0.5, 'keys create': 1, 'serve → /health 200 (cpu)': 3 };

execFileSync(process.execPath, [join(PROJECT_ROOT, 'scripts', 'build.mjs')], { stdio: 'ignore' });
const scratch = mkdtempSync(join(tmpdir(), 'lexembed-startup-'));
const modes = { built: { LEXEMBED_USE_DIST: '1' }, 'source (tsx)': {} } as const;

const rows: [string, string, number][] = [];
for (const [mode, env] of Object.entries(modes)) {
  rows.push([mode, '--help', median(() => timeCommand(['--help'], env))]);
  rows.push([mode, 'keys create', median(() => timeCommand(['keys', 'create', '--account', 'bench', '--data-dir', join(scratch, 'keys')], env))]);
  for (const device of ['cpu', 'auto']) {
    const health: number[] = [];
    const loaded: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const t = await timeServe(['--device', device], env);
      health.push(t.health);
      loaded.push(t.loaded);
    }
    rows.push([mode, `serve → /health 200 (${device})`, mid(health)]);
    rows.push([mode, `serve → model loaded (${device})`, mid(loaded)]);
  }
}
rmSync(scratch, { recursive: true, force: true });

console.log(`\nlexembed start-up, median of ${RUNS} runs (seconds), this machine (${process.platform}, Node ${process.version})\n`);
console.log(`${'command'.padEnd(34)}${'built'.padStart(8)}${'source (tsx)'.padStart(14)}${'target'.padStart(8)}`);
for (const what of [...new Set(rows.map((r) => r[1]))]) {
  const v = (mode: string) => rows.find((r) => r[0] === mode && r[1] === what)![2];
  const target = TARGETS[what];
  console.log(`${what.padEnd(34)}${v('built').toFixed(2).padStart(8)}${v('source (tsx)').toFixed(2).padStart(14)}${(target ? `≤ ${target}` : '').padStart(8)}`);
}

function median(measure: () => number): number {
  return mid(Array.from({ length: RUNS }, measure));
}

function mid(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function timeCommand(args: string[], env: Record<string, string>): number {
  const start = performance.now();
  execFileSync(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: 'ignore' });
  return (performance.now() - start) / 1000;
}

async function timeServe(args: string[], env: Record<string, string>): Promise<{ health: number; loaded: number }> {
  const start = performance.now();
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--no-auth', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let loaded = 0;
  const url = await new Promise<string>((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${output}`)));
    child.stderr.on('data', (d) => (output += d));
    child.stdout.on('data', (d) => {
      output += d;
      if (!loaded && /model .* loaded/.test(output)) loaded = (performance.now() - start) / 1000;
      const m = /listening on (http:\/\/[^\s)]+)/.exec(output);
      if (m) resolve(m[1]!);
    });
  });
  let health = 0;
  while (!health) {
    const ok = await fetch(`${url}/health`).then((r) => r.status === 200, () => false);
    if (ok) health = (performance.now() - start) / 1000;
    else await new Promise((r) => setTimeout(r, 10));
  }
  while (!loaded) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => (child.once('exit', r), child.kill('SIGTERM')));
  return { health, loaded };
}
