// A server under benchmark, in a process of its own, its output (one JSON log line per request)
// written to a file rather than a pipe to the benchmark: read through a pipe, every request's log
// line woke the benchmark process, which is also the load generator, and it kept appending them to
// one growing string: on 2 cores, c=1, two servers side by side in alternating 4 s rounds, p50
// 4.2 / 5.4 / 5.4 / 5.9 ms read through the pipe against 4.0 / 3.6 / 3.5 / 3.0 written to a file
// (bench-results/, not kept). In production the log reader is another process too (a container
// runtime's, a log shipper).
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ServerProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** The URL the server said it listens on. */
  readonly url: string;
  /** Stops it with `signal` (SIGTERM unless given), waits for it to exit and removes its log. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** How often the log is read for the ready lines: start-up takes seconds, so 50 ms is plenty. */
const POLL_MS = 50;

/**
 * Starts `node <args>` and waits until its output matches `urlPattern` (whose first group is the
 * URL) and, if given, `readyPattern`; rejects with the output if it exits first.
 */
export async function startServerProcess(args: readonly string[], urlPattern: RegExp, readyPattern?: RegExp): Promise<ServerProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'lexembed-bench-server-'));
  const log = join(dir, 'output.log');
  const fd = openSync(log, 'w');
  const child = spawn(process.execPath, [...args], { stdio: ['ignore', fd, fd] });
  closeSync(fd);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let exitCode: number | null | undefined;
  void exited.then((code) => (exitCode = code));
  const output = () => readFileSync(log, 'utf8');
  let url: string | undefined;
  for (;;) {
    const text = output();
    const m = urlPattern.exec(text);
    if (m && (!readyPattern || readyPattern.test(text))) {
      url = m[1]!;
      break;
    }
    if (exitCode !== undefined) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`server exited (${exitCode}):\n${text}`);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return {
    child,
    pid: child.pid!,
    url,
    async stop(signal = 'SIGTERM') {
      if (exitCode === undefined) child.kill(signal);
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
