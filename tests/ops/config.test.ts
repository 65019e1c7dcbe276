// One configuration: every serve option in --help with its variable and default; invalid values
// stop start-up naming the option; CORS for browser clients.
import { describe, expect, it } from 'vitest';
import { SERVE_OPTIONS } from '../../src/cli/serve.ts';
import { createApp } from '../../src/http/app.ts';
import { createEmbedder } from '../../src/embedder/embedder.ts';
import { runCli } from '../support/cli.ts';
import { createFakeBackend, fakeSettings } from '../support/fake-backend.ts';

describe('lexembed serve configuration', () => {
  it('--help lists every option with its environment variable and default', async () => {
    const { code, stdout } = await runCli(['serve', '--help']);
    expect(code).toBe(0);
    for (const [name, spec] of Object.entries(SERVE_OPTIONS)) {
      expect(stdout).toContain(`--${name}`);
      if ('env' in spec && spec.env) for (const name of [spec.env].flat()) expect(stdout).toContain(name);
      if ('default' in spec && spec.default) expect(stdout).toContain(`default: ${spec.default}`);
    }
  });

  it.each([
    [['--port', 'eighty'], '--port (LEXEMBED_PORT or PORT) must be an integer from 0 to 65535; got "eighty"'],
    [['--deployment', 'cloud'], '--deployment (LEXEMBED_DEPLOYMENT) must be "api" or "proxy"; got "cloud"'],
    [['--store', 'postgres'], '--store (LEXEMBED_STORE) must be "file" or "redis"; got "postgres"'],
    [['--max-body-bytes=-5'], '--max-body-bytes (LEXEMBED_MAX_BODY_BYTES) must be a positive integer; got "-5"'],
    [['--cors-origins', 'example.com'], '--cors-origins (LEXEMBED_CORS_ORIGINS) must be * or a comma-separated list of origins'],
    [['--threads', 'many'], '--threads (LEXEMBED_THREADS) must be a non-negative integer; got "many"'],
    [['--small-batch-tokens', 'some'], '--small-batch-tokens (LEXEMBED_SMALL_BATCH_TOKENS) must be a non-negative integer; got "some"'],
    [['--lanes', '0'], '--lanes (LEXEMBED_LANES) must be an integer from 1 to 64; got "0"'],
    [['--bogus'], 'unknown option --bogus (run lexembed serve --help for the options)'],
  ])('refuses %j naming the option', async (args, message) => {
    const { code, stderr } = await runCli(['serve', ...args]);
    expect(code).toBe(2);
    expect(stderr).toContain(message);
  });

  it('reads options from the environment, flags first', async () => {
    const { code, stderr } = await runCli(['serve'], { PORT: '99999' });
    expect(code).toBe(2);
    expect(stderr).toContain('--port (PORT) must be an integer from 0 to 65535; got "99999"');
  });
});

describe('CORS', () => {
  const app = createApp({ embedder: createEmbedder(fakeSettings(), createFakeBackend()), corsOrigins: ['https://app.example.com'] });

  it('answers a preflight for an allowed origin with the headers browsers need', async () => {
    const res = await app.request('/v1/embeddings', {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(res.headers.get('access-control-allow-headers')).toMatch(/authorization/);
  });

  it('does not allow other origins, and is off unless configured', async () => {
    const res = await app.request('/v1/embeddings', { method: 'POST', headers: { origin: 'https://evil.example', 'content-type': 'application/json' }, body: '{}' });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const plain = createApp({ embedder: createEmbedder(fakeSettings(), createFakeBackend()) });
    const r2 = await plain.request('/health', { headers: { origin: 'https://app.example.com' } });
    expect(r2.headers.get('access-control-allow-origin')).toBeNull();
  });
});
