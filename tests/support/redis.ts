// Starts a real redis-server (Debian package redis-server) on a free port for a test file.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

export async function startRedis(): Promise<{ url: string; stop: () => Promise<void>; child: ChildProcess }> {
  if (spawnSync('redis-server', ['--version']).error) {
    throw new Error('redis-server is not installed: these tests need a real Redis. Install Debian\'s package: apt-get install -y redis-server (.ci/run does)');
  }
  const port = await freePort();
  const child: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start:\n${output}`)), 10_000);
    child.stdout!.on('data', (d) => {
      output += d;
      if (output.includes('Ready to accept connections')) (clearTimeout(timer), resolve());
    });
    child.on('exit', (code) => reject(new Error(`redis-server exited with ${code}:\n${output}`)));
  });
  return {
    child,
    url: `redis://127.0.0.1:${port}`,
    stop: () => new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : (child.once('exit', () => resolve()), child.kill('SIGTERM')))),
  };
}
