// `npm run bench:overload`: the lexembed server at saturation. Many clients each send requests of
// many long texts, honouring Retry-After after a 503, for a fixed time; prints how fast 503s and
// 200s come back beside the queue limit and beside the same request sent alone on the idle server
// (same run). With --against <git ref>, the same load then runs on that commit's server (a
// temporary worktree), so a change is compared with what it replaced in one run.
// Target (issue 22): 503 in ≤ 100 ms p99 on this machine; accepted requests finish.
// Usage: npm run bench:overload -- [--model <dir>] [--clients 300] [--texts 128] [--chars 3000]
//          [--seconds 60] [--max-queue-tokens N] [--against <git ref>]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { BUNDLED_MODEL_DIR, PROJECT_ROOT } from '../src/node/runtime/load-model.ts';
import { DEFAULT_SCHEDULER_LIMITS } from '../src/embedder/scheduler.ts';
import { startServe } from '../tests/support/cli.ts';

const USAGE = `Usage: npm run bench:overload -- [options]
  --model <dir>            model folder (default: the bundled hybrid)
  --clients N              concurrent clients (default 300)
  --texts N                texts per request (default 128)
  --chars N                characters per text (default 3000)
  --seconds N              how long the load lasts (default 60)
  --max-queue-tokens N     the server's queue limit (default ${DEFAULT_SCHEDULER_LIMITS.maxQueueTokens})
  --against <git ref>      then run the same load on that commit's server, for comparison`;
const { values } = parseArgs({
  options: {
    model: { type: 'string', default: BUNDLED_MODEL_DIR },
    clients: { type: 'string', default: '300' },
    texts: { type: 'string', default: '128' },
    chars: { type: 'string', default: '3000' },
    seconds: { type: 'string', default: '60' },
    'max-queue-tokens': { type: 'string', default: String(DEFAULT_SCHEDULER_LIMITS.maxQueueTokens) },
    against: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) (console.log(USAGE), process.exit(0));
const clients = Number(values.clients);
const textCount = Number(values.texts);
const chars = Number(values.chars);
const seconds = Number(values.seconds);
const queueTokens = Number(values['max-queue-tokens']);

const SENTENCE = 'The Lessee shall indemnify and hold harmless the Lessor from every claim arising out of the use of the Premises. ';
const texts = Array.from({ length: textCount }, (_, i) => `Clause ${i}. ${SENTENCE.repeat(Math.ceil(chars / SENTENCE.length))}`.slice(0, chars));
// Encoded once: the clients share this machine's cores with the server, so they do as little as they can.
const body = new TextEncoder().encode(JSON.stringify({ model: 'legal-2-embedder', texts }));

console.log(
  `model ${values.model}; ${clients} clients × ${textCount} texts × ${chars} characters (${(body.byteLength / 1024).toFixed(0)} KB per request), ` +
    `for ${seconds} s each; queue limit ${queueTokens.toLocaleString('en')} tokens. Client times include the clients' own share of the cores; the server log's do not.`,
);
await runLoad('this checkout');
if (values.against) {
  const worktree = mkdtempSync(join(tmpdir(), 'lexembed-against-'));
  try {
    execFileSync('git', ['worktree', 'add', '--detach', worktree, values.against], { cwd: PROJECT_ROOT, stdio: 'ignore' });
    symlinkSync(join(PROJECT_ROOT, 'node_modules'), join(worktree, 'node_modules'));
    await runLoad(`${values.against} (${execFileSync('git', ['rev-parse', '--short', values.against], { cwd: PROJECT_ROOT }).toString().trim()})`, join(worktree, 'bin', 'lexembed.js'));
  } finally {
    execFileSync('git', ['worktree', 'remove', '--force', worktree], { cwd: PROJECT_ROOT, stdio: 'ignore' });
    rmSync(worktree, { recursive: true, force: true });
  }
}

async function runLoad(label: string, cli?: string) {
  const server = await startServe(['--no-auth', '--model', values.model!, '--max-queue-tokens', String(queueTokens)], {}, cli);
  const post = async () => {
    const started = performance.now();
    const res = await fetch(`${server.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    await res.arrayBuffer();
    return { status: res.status, ms: performance.now() - started, retryAfter: Number(res.headers.get('retry-after') ?? 1) };
  };
  try {
    await post(); // warm-up
    const alone = (await post()).ms;
    console.log(`\n${label}: the same request alone on the idle server: ${alone.toFixed(0)} ms`);
    const results: { status: number; ms: number }[] = [];
    const health: number[] = [];
    const deadline = performance.now() + seconds * 1000;
    const client = async () => {
      while (performance.now() < deadline) {
        const r = await post().catch(() => ({ status: 0, ms: 0, retryAfter: 1 }));
        results.push(r);
        if (r.status !== 200) await new Promise((resolve) => setTimeout(resolve, r.retryAfter * 1000));
      }
    };
    const probe = async () => {
      while (performance.now() < deadline) {
        const started = performance.now();
        await (await fetch(`${server.url}/health`)).arrayBuffer();
        health.push(performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    };
    await Promise.all([...Array.from({ length: clients }, client), probe()]);

    const line = (what: string, ms: number[]) => {
      if (!ms.length) return console.log(`  ${what}: none`);
      const sorted = [...ms].sort((a, b) => a - b);
      const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
      console.log(`  ${what}: ${ms.length} answers, p50 ${q(0.5).toFixed(1)} ms, p99 ${q(0.99).toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(0)} ms (p99 ${(q(0.99) / alone).toFixed(2)}× the request alone)`);
    };
    // The server's own view (its request log: from the request's headers to its answer).
    const logged = server
      .output()
      .split('\n')
      .filter((l) => l.includes('"msg":"request"') && l.includes('/v1/embeddings'))
      .map((l) => JSON.parse(l) as { status: number; latency_ms: number });
    line('503, client  ', results.filter((r) => r.status === 503).map((r) => r.ms));
    line('503, server  ', logged.filter((r) => r.status === 503).map((r) => r.latency_ms));
    line('200, client  ', results.filter((r) => r.status === 200).map((r) => r.ms));
    line('200, server  ', logged.filter((r) => r.status === 200).map((r) => r.latency_ms));
    line('/health      ', health);
    const other = results.filter((r) => r.status !== 200 && r.status !== 503);
    console.log(`  other answers: ${other.length}${other.length ? ` (${[...new Set(other.map((r) => r.status))].join(', ')}; 0 = no answer)` : ''}`);
  } finally {
    await server.stop();
  }
}
