// Runs the real `lexembed` CLI: one-shot commands, and `serve` as a child process.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../src/node/load-model.ts';

export const CLI = join(PROJECT_ROOT, 'bin', 'lexembed.js');

export function runCli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env } });
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

export async function startServe(args: string[], env: Record<string, string> = {}): Promise<ServerProcess> {
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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
