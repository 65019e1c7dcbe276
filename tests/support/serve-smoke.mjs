// `lexembed serve` answers an embedding on whichever Node runs this file (scripts/test-node-versions.sh).
import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';
import { test } from 'node:test';

test(`lexembed serve on Node ${process.version} answers /v1/embeddings`, async () => {
  const child = spawn(process.execPath, ['bin/lexembed.js', 'serve', '--port', '0', '--no-auth', '--model', 'models/legal-2-embedder-static'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  try {
    const url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no start:\n${output}`)), 60_000);
      child.on('exit', (code) => reject(new Error(`exited ${code}:\n${output}`)));
      child.stdout.on('data', () => {
        const m = /model .* loaded/.test(output) && /listening on (http:\/\/[^\s)]+)/.exec(output);
        if (m) (clearTimeout(timer), resolve(m[1]));
      });
    });
    const res = await fetch(`${url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'legal-2-embedder-static', texts: ['Lease'] }) });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).embeddings[0].embedding.length, 1536);
  } finally {
    child.kill('SIGTERM');
  }
});
