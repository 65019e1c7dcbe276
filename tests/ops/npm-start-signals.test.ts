// `npm start` must hand SIGTERM to the server (what `$!`, systemd and container runtimes signal):
// the script execs node, so npm's child is the server itself, which drains and exits; nothing is
// left serving. Before the fix npm ended and node kept serving on the port, orphaned.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/node/runtime/load-model.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'lexembed-npm-start-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** Pids whose parent is `pid` (from /proc). */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .flatMap((d) => {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid ? [Number(d)] : [];
      } catch {
        return [];
      }
    });
}

it('SIGTERM to npm start reaches the server: the request in flight is answered, it drains, and no process is left', async () => {
  const npm = spawn('npm', ['start', '--silent', '--', '--port', '0', '--no-auth', '--data-dir', dataDir], {
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  npm.stdout.on('data', (d) => (output += d));
  npm.stderr.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => npm.on('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm start did not come up:\n${output}`)), 120_000);
    npm.on('exit', () => reject(new Error(`npm start exited early:\n${output}`)));
    npm.stdout.on('data', () => {
      const m = /model .* loaded/.test(output) && /listening on (http:\/\/[^\s)]+)/.exec(output);
      if (m) (clearTimeout(timer), resolve(m[1]!));
    });
  });
  const server = childrenOf(npm.pid!);
  expect(server.length, 'npm start runs the server as its direct child (exec)').toBeGreaterThan(0);

  // Long enough texts that the request is still queued when the signal comes.
  const texts = Array.from({ length: 128 }, (_, i) => `Section ${i}. ${'The tenant shall give notice of termination in writing to the landlord. '.repeat(30)}`);
  const inFlight = fetch(`${url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'legal-2-embedder', texts }) });
  // Signal once the server holds the request: its queue gauge says so.
  for (;;) {
    const metrics = await (await fetch(`${url}/metrics`)).text();
    if (Number(/^lexembed_queue_depth (\d+)/m.exec(metrics)?.[1] ?? 0) > 0) break;
    await new Promise((r) => setImmediate(r));
  }
  npm.kill('SIGTERM');
  const res = await inFlight;
  expect(res.status).toBe(200);
  expect((await res.json()).embeddings).toHaveLength(128);
  expect(await exited).toBe(0);
  expect(output).toContain('SIGTERM: closing');
  expect(output).toContain('closed: every received request was answered');
  for (const pid of server) expect(existsSync(`/proc/${pid}`), `process ${pid} left behind`).toBe(false);
  await expect(fetch(`${url}/health`)).rejects.toThrow();
}, 180_000);
