// Runs the real `lexembed` CLI: one-shot commands, and `serve` as a child process.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll } from 'vitest';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../src/node/runtime/load-model.ts';

export const CLI = join(PROJECT_ROOT, 'bin', 'lexembed.js');

/** Runs `lexembed args…` (in `cwd`, default this process's directory) to its exit. */
export function runCli(args: string[], env: Record<string, string> = {}, cwd?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, cwd });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
  stop: () => Promise<number | null>;
}

/** Starts `lexembed serve` (this checkout's, or the CLI at `cli`, e.g. an older commit's for a benchmark). */
export async function startServe(args: string[], env: Record<string, string> = {}, cli = CLI): Promise<ServerProcess> {
  const child = spawn(process.execPath, [cli, 'serve', '--port', '0', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 30_000);
    child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${output}`)));
    child.stdout!.on('data', () => {
      const m = /model .* loaded/.test(output) && /listening on (http:\/\/[^\s)]+)/.exec(output);
      if (m) (clearTimeout(timer), resolve(m[1]!));
    });
  });
  const stop = () => {
    if (child.exitCode !== null) return Promise.resolve(child.exitCode);
    return new Promise<number | null>((r) => (child.once('exit', (code) => r(code)), child.kill('SIGTERM')));
  };
  return { child, url, output: () => output, stop };
}

/**
 * Resolves once the server has printed a line matching `pattern` (its log records arrive on
 * stdout after the response): waits for output events, not for a fixed time.
 */
export function waitForOutput(server: ServerProcess, pattern: RegExp, timeoutMs = 30_000): Promise<void> {
  if (pattern.test(server.output())) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => (done(), reject(new Error(`no output matching ${pattern} within ${timeoutMs} ms:\n${server.output().slice(-2000)}`))), timeoutMs);
    const check = () => pattern.test(server.output()) && (done(), resolve());
    const done = () => (clearTimeout(timer), server.child.stdout!.off('data', later), server.child.stderr!.off('data', later));
    // After the ServerProcess's own listeners have appended the chunk.
    const later = () => setImmediate(check);
    server.child.stdout!.on('data', later);
    server.child.stderr!.on('data', later);
  });
}

/** The development key the first start on an empty file store wrote to <dataDir>/dev-key.txt. */
export function devKey(dataDir: string): string {
  return readFileSync(join(dataDir, 'dev-key.txt'), 'utf8').trim();
}

/**
 * Starts `lexembed serve` for the calling test file (stopped and cleaned up after it), in a fresh
 * working directory whose file key store is `./.lexembed` (as `npm start` lays it out); read
 * `url`, `key` (the first start's development key) and `dir` in tests.
 */
export function useServer(model: string): { readonly url: string; readonly key: string; readonly dir: string } {
  let server: ServerProcess | undefined;
  let dir = '';
  let key = '';
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'lexembed-test-'));
    server = await startServe(['--model', model, '--data-dir', join(dir, '.lexembed')]);
    key = devKey(join(dir, '.lexembed'));
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    get url() {
      return server!.url;
    },
    get key() {
      return key;
    },
    get dir() {
      return dir;
    },
  };
}
