// The warm path as a user runs it (real CLI processes, static bundled model, PGlite in a folder):
// lexembed serve --index holds the model and the index open and answers POST /v1/search;
// lexembed search <index> --remote asks it, waiting for a server that is still starting, with the
// same hits a local search gives; the index held by the server refuses a second opener at once,
// and a wrong key, index or model is exit status 2 with what to do.
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { CLI, devKey, runCli, startServe } from '../support/cli.ts';
import { indexedContracts } from '../support/contracts.ts';

const MODEL = ['--model', STATIC_MODEL_DIR];
// Each CLI run loads the model (a few seconds on a busy 2-core machine): generous time per test.
const SLOW_MS = 240_000;
const QUERY = 'Which law governs the agreement?';
let dir: string;
let index: string;

beforeAll(async () => {
  ({ dir, index } = await indexedContracts('lexembed-index-serve-', 8));
}, SLOW_MS);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A port nothing listens on (yet). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Runs `lexembed search` and resolves with its output; started before what it asks exists. */
function search(args: string[], env: Record<string, string> = {}) {
  return runCli(['search', index, QUERY, ...args], { LEXEMBED_API_KEY: '', ...env });
}

describe('lexembed serve --index, and lexembed search --remote', () => {
  it('a search sent before the server listens waits for it, and gets the hits a local search gives', async () => {
    const local = await search(['--json', '--top', '5', ...MODEL]);
    expect(local.code, local.stderr).toBe(0);
    const port = await freePort();
    const remote = search(['--json', '--top', '5', '--remote', `http://127.0.0.1:${port}/v1`]);
    // The server starts after the search was sent: the search must wait, not fail.
    const child = spawn(process.execPath, [CLI, 'serve', '--no-auth', '--port', String(port), '--index', index, ...MODEL], { stdio: 'ignore' });
    try {
      const answered = await remote;
      expect(answered.code, answered.stderr).toBe(0);
      expect(answered.stderr).toMatch(/does not answer yet; waiting for it, up to 60 s \(--wait\)/);
      const [a, b] = [JSON.parse(local.stdout), JSON.parse(answered.stdout)] as { passageId: string; file: string; score: number; excerpt: string }[][];
      expect(b!.map((h) => [h.passageId, h.file, h.score.toFixed(4)])).toEqual(a!.map((h) => [h.passageId, h.file, h.score.toFixed(4)]));
      expect(b![0]!.excerpt).toMatch(/GOVERNING LAW/);
    } finally {
      child.kill('SIGTERM');
    }
  }, SLOW_MS);

  it('with API keys: the key from LEXEMBED_API_KEY; the held index refuses other openers at once; wrong index or key is exit 2', async () => {
    const data = join(dir, 'keys');
    const server = await startServe(['--data-dir', data, '--index', index, ...MODEL]);
    try {
      const remote = ['--remote', `${server.url}/v1`];
      const keyed = await search([...remote, '--top', '1'], { LEXEMBED_API_KEY: devKey(data) });
      expect(keyed.code, keyed.stderr).toBe(0);
      expect(keyed.stdout).toMatch(/^1\. \d\.\d{3} {2}contract-01\.md, lines \d+–\d+, passage 1\n {3}".*GOVERNING LAW/);
      const keyless = await search(remote);
      expect(keyless.code).toBe(2);
      expect(keyless.stderr).toMatch(/401 .*\(set LEXEMBED_API_KEY to a key of the server at http/);
      const other = await runCli(['search', 'leases.index', QUERY, ...remote], { LEXEMBED_API_KEY: devKey(data) });
      expect(other.code).toBe(2);
      expect(other.stderr).toMatch(/this server searches the index .*contracts\.index \(by name "contracts\.index"\), not "leases\.index"/);
      const local = await search(MODEL);
      expect(local.code).toBe(2);
      expect(local.stderr).toMatch(/is in use by process \d+ .*send searches to the server that holds it \(--remote\)/);
      const second = await runCli(['serve', '--no-auth', '--port', '0', '--index', index, ...MODEL]);
      expect(second.code).toBe(2);
      expect(second.stderr).toMatch(/lexembed serve: --index: the index at .* is in use by process/);
      expect(second.stdout).not.toMatch(/listening/);
    } finally {
      await server.stop();
    }
  }, SLOW_MS);

  it('refuses, with exit status 2, an index that does not exist and one another model made', async () => {
    const missing = await runCli(['serve', '--no-auth', '--port', '0', '--index', join(dir, 'nowhere.index'), ...MODEL]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/lexembed serve: --index: no index at .*nowhere\.index: make one with lexembed index/);
    const otherModel = await runCli(['serve', '--no-auth', '--port', '0', '--index', index]);
    expect(otherModel.code).toBe(2);
    expect(otherModel.stderr).toMatch(/holds vectors of model .* and this model is .*: their vectors do not compare/);
  }, SLOW_MS);

  it('a server started without --index: search --remote says it holds none and how to start one', async () => {
    const server = await startServe(['--no-auth', ...MODEL]);
    try {
      const none = await search(['--remote', `${server.url}/v1`]);
      expect(none.code).toBe(2);
      expect(none.stderr).toMatch(/the server at http:\/\/.* holds no index \(start it with lexembed serve --index <index>\): 404 /);
    } finally {
      await server.stop();
    }
  }, SLOW_MS);
});
