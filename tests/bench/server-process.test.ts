// The benchmarks' server starter: output to a log file, ready when both lines are there, an early
// exit reported with what the server said, the log removed on stop.
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startServerProcess } from '../../bench/server-process.ts';

const script = (body: string) => ['-e', body];

describe('startServerProcess', () => {
  it('resolves with the URL once the server has printed it and the ready line, and stops it', async () => {
    const server = await startServerProcess(
      script(`console.log('listening on http://127.0.0.1:4321 (POST /v1/embeddings)'); setTimeout(() => console.log('model "m" loaded'), 200); setInterval(() => {}, 1000);`),
      /listening on (http:\/\/[^\s)"]+)/,
      /model .* loaded/,
    );
    expect(server.url).toBe('http://127.0.0.1:4321');
    expect(server.pid).toBeGreaterThan(0);
    // Its output goes to a file, not a pipe this process reads.
    const log = readlinkSync(`/proc/${server.pid}/fd/1`);
    expect(log).toMatch(/lexembed-bench-server-.*\/output\.log$/);
    expect(readFileSync(log, 'utf8')).toContain('model "m" loaded');
    await server.stop();
    expect(server.child.signalCode).toBe('SIGTERM');
    expect(existsSync(log)).toBe(false);
  });

  it('rejects with the output when the server exits before it is ready', async () => {
    await expect(startServerProcess(script(`console.error('no model at /nowhere'); process.exit(3);`), /listening on (http:\/\/\S+)/)).rejects.toThrow(/server exited \(3\):\nno model at \/nowhere/);
  });
});
