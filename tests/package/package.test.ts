// The package as users get it: `npm pack`, installed into a scratch project made here (npm's
// cache serves what `npm ci` fetched), then used the ways the README shows: the CLI through npx
// (keys, serve), a plain .mjs Node script on lexembed/client and lexembed/contract, TypeScript
// consumers on the shipped .d.ts under `bundler` and `node16` resolution, a Vite app on
// lexembed/local, a Worker built from lexembed/edge in workerd, and publint/attw on the tarball. Slow by nature (a real install), so one install serves every test.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build as esbuild } from 'esbuild';
import { Miniflare } from 'miniflare';
import { PROJECT_ROOT } from '../../src/node/load-model.ts';

const run = promisify(execFile);
const SLOW = 600_000;
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const TSC = join(PROJECT_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

let scratch: string;
let project: string;
let tarball: string;
let server: ChildProcess | undefined;
let serverUrl: string;
let apiKey: string;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'lexembed-package-'));
  await run(NPM, ['pack', '--pack-destination', scratch], { cwd: PROJECT_ROOT, maxBuffer: 64 << 20 });
  const self = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
  tarball = join(scratch, `${self.name}-${self.version}.tgz`);
  project = join(scratch, 'app');
  mkdirSync(project);
  // Pin lexembed's own dependencies to the versions this repository locked, so the install is
  // served from npm's cache rather than resolving newer releases.
  const lock = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };
  const pkg = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const pinned = Object.fromEntries(Object.keys(pkg.dependencies).map((d) => [d, lock.packages[`node_modules/${d}`]!.version!]));
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'scratch-app', private: true, type: 'module', dependencies: { ...pinned, lexembed: `file:${tarball}` } }, null, 2));
  writeFileSync(join(project, '.npmrc'), 'onnxruntime-node-install=skip\n');
  await run(NPM, ['install', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: project, maxBuffer: 64 << 20 });

  const created = await run(process.execPath, [join(project, 'node_modules', '.bin', 'lexembed'), 'keys', 'create', '--account', 'acct_pkg', '--data-dir', join(scratch, 'keys')], { cwd: project });
  apiKey = /lxk_v1_\S+/.exec(created.stdout)![0];
  ({ child: server, url: serverUrl } = await startInstalledServer());
}, SLOW);

afterAll(async () => {
  // npx runs lexembed as its child: signal the whole process group, or the server outlives the test.
  if (server && server.exitCode === null) await new Promise((r) => (server!.once('exit', r), process.kill(-server!.pid!, 'SIGTERM')));
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('the packed tarball', () => {
  it('holds the built entries, the CLI and the bundled model, and no sources, tests or recipes', async () => {
    const listing = (await run('tar', ['-tzf', tarball], { maxBuffer: 16 << 20 })).stdout.split('\n');
    for (const f of ['package/dist/index.js', 'package/dist/index.d.ts', 'package/dist/client/index.js', 'package/dist/edge/handler.d.ts',
      'package/bin/lexembed.js', 'package/models/legal-2-embedder/onnx/model.onnx', 'package/models/legal-2-embedder/lexembed.json',
      'package/models/legal-2-embedder-static/onnx/model.onnx']) {
      expect(listing, f).toContain(f);
    }
    expect(listing.filter((f) => /^package\/(src|tests|bench|model|web-demo|edge|scripts)\//.test(f))).toEqual([]);
    const installed = JSON.parse(readFileSync(join(project, 'node_modules', 'lexembed', 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(Object.keys(installed.dependencies)).not.toContain('tsx');
  });

  it('passes publint and are-the-types-wrong (ESM-only profile)', async () => {
    const publint = await run(process.execPath, [join(PROJECT_ROOT, 'node_modules', 'publint', 'src', 'cli.js'), join(project, 'node_modules', 'lexembed')], { cwd: project });
    expect(publint.stdout).toMatch(/All good/);
    // attw exits non-zero on any problem the profile counts (ESM-only: CommonJS require is not offered).
    // JSON, not the human table: its layout follows the terminal's width.
    const attw = await run(process.execPath, [join(PROJECT_ROOT, 'node_modules', '@arethetypeswrong', 'cli', 'dist', 'index.js'), tarball, '--profile', 'esm-only', '--format', 'json'], { maxBuffer: 64 << 20 });
    const { analysis } = JSON.parse(attw.stdout) as {
      analysis: {
        problems: { kind: string; entrypoint: string; resolutionKind?: string }[];
        entrypoints: Record<string, { resolutions: Record<string, { resolution?: { fileName: string } }> }>;
      };
    };
    const counted = analysis.problems.filter((p) => p.resolutionKind !== 'node10' && p.resolutionKind !== 'node16-cjs');
    expect(counted).toEqual([]);
    for (const entry of ['.', './contract', './client', './local', './edge']) {
      for (const kind of ['node16-esm', 'bundler']) {
        expect(analysis.entrypoints[entry]?.resolutions[kind]?.resolution?.fileName, `${entry} (${kind})`).toMatch(/\/dist\/.*\.d\.ts$/);
      }
    }
  }, SLOW);
});

describe('installed from the tarball', () => {
  it('npx lexembed --help answers from the built CLI', async () => {
    const { stdout } = await run('npx', ['--no-install', 'lexembed', '--help'], { cwd: project });
    expect(stdout).toMatch(/lexembed serve/);
  });

  it('npx lexembed serve (bundled model, no other step) answers /health and /v1/embeddings', async () => {
    expect((await fetch(`${serverUrl}/health`)).status).toBe(200);
    const r = await fetch(`${serverUrl}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'legal-2-embedder', texts: ['Payment of rent'] }),
    });
    expect(r.status).toBe(200);
    const body = (await r.json()) as { embeddings: { embedding: number[] }[] };
    expect(body.embeddings[0]!.embedding.length).toBe(640);
  });

  it('a plain .mjs Node script imports lexembed/client and lexembed/contract and calls the server', async () => {
    writeFileSync(join(project, 'client.mjs'), `
import { Lexembed, AuthenticationError } from 'lexembed/client';
import { validateEmbeddingRequest, DEFAULT_MODEL_NAME } from 'lexembed/contract';
const check = validateEmbeddingRequest({ model: DEFAULT_MODEL_NAME, texts: ['Lease'] }, { modelName: DEFAULT_MODEL_NAME, maxDimensions: 640, tasks: ['retrieval/query', 'retrieval/document'] });
const client = new Lexembed({ baseURL: process.env.BASE_URL });
const { embeddings, usage } = await client.embeddings.create({ model: DEFAULT_MODEL_NAME, texts: ['Termination of lease', 'Security deposit'] });
let rejected = '';
try { await new Lexembed({ baseURL: process.env.BASE_URL, apiKey: 'lxk_v1_wrong_0' }).embeddings.create({ model: DEFAULT_MODEL_NAME, texts: ['x'] }); }
catch (e) { rejected = e instanceof AuthenticationError ? 'AuthenticationError ' + e.status : String(e); }
console.log(JSON.stringify({ valid: check.ok, count: embeddings.length, dims: embeddings[0].embedding.length, tokens: usage.input_tokens, rejected }));
`);
    const { stdout } = await run(process.execPath, ['client.mjs'], { cwd: project, env: { ...process.env, BASE_URL: `${serverUrl}/v1`, LEXEMBED_API_KEY: apiKey } });
    const out = JSON.parse(stdout) as { valid: boolean; count: number; dims: number; tokens: number; rejected: string };
    expect(out).toMatchObject({ valid: true, count: 2, dims: 640, rejected: 'AuthenticationError 401' });
    expect(out.tokens).toBeGreaterThan(4);
  });

  it.each(['bundler', 'node16'])('TypeScript consumers type-check against the shipped .d.ts (moduleResolution %s)', async (resolution) => {
    const dir = join(project, `ts-${resolution}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'consumer.ts'), `
import { Lexembed, APIError, type EmbeddingCreateParams } from 'lexembed/client';
import { validateEmbeddingRequest, type EmbeddingResponse } from 'lexembed/contract';
import { createLocalClient, type LocalClient } from 'lexembed/local';
import { createEdgeHandler, type EdgeHandler } from 'lexembed/edge';
import { createApp, createEmbedder } from 'lexembed';
const params: EmbeddingCreateParams = { model: 'legal-2-embedder', texts: ['Lease'], task: 'retrieval/query' };
export async function use(client: Lexembed): Promise<number> {
  try {
    const response: EmbeddingResponse = await client.embeddings.create(params);
    return response.embeddings.length;
  } catch (error) {
    if (error instanceof APIError) return -(error.status ?? 0); // no status: connection, timeout, abort
    throw error;
  }
}
export const local: (m: string) => LocalClient = (model) => createLocalClient({ model });
export const handler: (m: WebAssembly.Module) => EdgeHandler = (wasmModule) => createEdgeHandler({ wasmModule });
export const pieces = [validateEmbeddingRequest, createApp, createEmbedder];
// @ts-expect-error: texts must be strings (the shipped types are real, not any)
export const wrong: EmbeddingCreateParams = { model: 'legal-2-embedder', texts: [1] };
`);
    const module = resolution === 'bundler' ? 'preserve' : 'node16';
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { target: 'es2022', module, moduleResolution: resolution, strict: true, noEmit: true, lib: ['es2023', 'dom'], types: [], skipLibCheck: true },
      files: ['consumer.ts'],
    }));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    const result = await run(process.execPath, [TSC, '-p', dir], { cwd: dir }).catch((e: { stdout: string; stderr: string }) => e);
    expect('stdout' in result ? result.stdout + result.stderr : '').toBe('');
  }, SLOW);
});

describe('bundled by an application from the installed package', () => {
  const NODE_ONLY = /onnxruntime-node|@hono\/node-server|prom-client|ioredis|from ?["']node:|(?:require|import)\(["']node:|webgpu\/dist|dawn\.node/;

  it('a Vite app importing lexembed/local builds, and its bundle holds no Node-only module', async () => {
    const dir = join(project, 'vite-app');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'index.html'), '<!doctype html><script type="module" src="./main.js"></script>');
    writeFileSync(join(dir, 'main.js'), `
import { createLocalClient } from 'lexembed/local';
import { Lexembed } from 'lexembed/client';
const client = createLocalClient({ model: '/models/legal-2-embedder/', device: 'wasm' });
globalThis.lexembed = { client, remote: new Lexembed({ apiKey: 'x' }) };
`);
    const vite = join(PROJECT_ROOT, 'node_modules', 'vite', 'bin', 'vite.js');
    const out = await run(process.execPath, [vite, 'build', dir, '--outDir', join(dir, 'dist'), '--emptyOutDir', '--logLevel', 'warn'], { cwd: dir, maxBuffer: 16 << 20 });
    const files = readdirSync(join(dir, 'dist', 'assets')).filter((f) => f.endsWith('.js') || f.endsWith('.mjs'));
    const bytes = files.reduce((n, f) => n + readFileSync(join(dir, 'dist', 'assets', f)).length, 0);
    expect(bytes, `transformers.js and onnxruntime-web are bundled: ${out.stdout}${out.stderr}`).toBeGreaterThan(300_000);
    for (const f of files) expect(NODE_ONLY.exec(readFileSync(join(dir, 'dist', 'assets', f), 'utf8'))?.[0] ?? null, f).toBeNull();
  }, SLOW);

  it('a Worker built with esbuild from lexembed/edge runs in workerd and answers /v1/embeddings', async () => {
    const dir = join(project, 'worker');
    mkdirSync(join(dir, 'dist'), { recursive: true });
    writeFileSync(join(dir, 'worker.mjs'), `
import wasmModule from './ort-wasm-simd-threaded.asyncify.wasm';
import { createEdgeHandler } from 'lexembed/edge';
export default createEdgeHandler({ wasmModule });
`);
    await esbuild({ entryPoints: [join(dir, 'worker.mjs')], outfile: join(dir, 'dist', 'worker.mjs'), bundle: true, format: 'esm', platform: 'browser',
      conditions: ['workerd', 'worker', 'browser'], target: 'es2022', external: ['*.wasm'], logLevel: 'error', absWorkingDir: dir });
    copyFileSync(join(project, 'node_modules', 'onnxruntime-web', 'dist', 'ort-wasm-simd-threaded.asyncify.wasm'), join(dir, 'dist', 'ort-wasm-simd-threaded.asyncify.wasm'));
    const modelDir = join(project, 'node_modules', 'lexembed', 'models', 'legal-2-embedder-static');
    const mf = new Miniflare({
      modules: [
        { type: 'ESModule', path: join(dir, 'dist', 'worker.mjs') },
        { type: 'CompiledWasm', path: join(dir, 'dist', 'ort-wasm-simd-threaded.asyncify.wasm') },
      ],
      modulesRoot: join(dir, 'dist'),
      compatibilityDate: '2026-04-01',
      cf: false,
      bindings: { LEXEMBED_NO_AUTH: 'true' },
      serviceBindings: {
        MODEL: async (request: { url: string }) => {
          const file = new URL(request.url).pathname.slice(1);
          return existsSync(join(modelDir, file)) ? new Response(readFileSync(join(modelDir, file))) : new Response('not found', { status: 404 });
        },
      },
    });
    try {
      const res = await mf.dispatchFetch('http://edge.local/v1/embeddings', {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'legal-2-embedder', texts: ['Notice to vacate'] }),
      });
      const body = (await res.json()) as { embeddings: { embedding: number[] }[] };
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(body.embeddings[0]!.embedding).toHaveLength(384);
    } finally {
      await mf.dispose();
    }
  }, SLOW);
});

async function startInstalledServer(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn('npx', ['--no-install', 'lexembed', 'serve', '--port', '0', '--data-dir', join(scratch, 'keys'), '--device', 'cpu'], {
    cwd: project,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group, so afterAll stops npx and the server it started
  });
  let output = '';
  child.stderr!.on('data', (d) => (output += d));
  const url = await new Promise<string>((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`installed lexembed serve exited with ${code}:\n${output}`)));
    child.stdout!.on('data', (d) => {
      output += d;
      const m = /model .* loaded/.test(output) && /listening on (http:\/\/[^\s)]+)/.exec(output);
      if (m) resolve(m[1]!);
    });
  });
  if (!existsSync(join(project, 'node_modules', 'lexembed', 'dist', 'cli', 'index.js'))) throw new Error('installed package has no built CLI');
  return { child, url };
}
