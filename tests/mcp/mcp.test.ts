// `lexembed mcp` end to end with the official SDK's own client, over stdio (the server a child
// process, as an assistant starts it) and Streamable HTTP: its tools answer what the HTTP API
// answers for the same input (vectors, rerank scores, token counts), search names file and page,
// and failures are MCP tool errors that keep the API's problem.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR, STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { CLI, runCli, startServe, type ServerProcess } from '../support/cli.ts';
import { makePdf } from '../support/documents.ts';

type ToolResult = { isError?: boolean; content: { type: string; text: string }[]; structuredContent?: Record<string, unknown>; _meta?: { problem?: Record<string, unknown> } };
/** Vectors as float32 (the HTTP API writes each component's shortest float32 form; MCP's JSON writes the same numbers in full). */
const f32 = (vectors: unknown) => (vectors as number[][]).map((v) => v.map((x) => Math.fround(x)));

let dir: string;
let index: string;
let api: ServerProcess;
const clients: Client[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lexembed-mcp-'));
  const docs = join(dir, 'docs');
  const { mkdirSync } = await import('node:fs');
  mkdirSync(docs);
  writeFileSync(join(docs, 'lease.pdf'), makePdf([
      ['1. Rent. The Tenant shall pay a monthly rent of 1,200 dollars on the first day of each month,', 'by bank transfer to the account the Landlord names, without deduction or set-off.'],
      ['2. Termination. Either party may terminate this lease with sixty days written notice to the other.'],
    ]));
  writeFileSync(join(docs, 'policy.md'), '# Privacy\n\nPersonal data is kept for two years.\n');
  index = join(dir, 'corpus.jsonl');
  const embedded = await runCli(['embed', docs, '--output', index, '--model', STATIC_MODEL_DIR, '--task', 'retrieval/document', '--chunk-tokens', '32', '--progress', 'never']);
  if (embedded.code !== 0) throw new Error(embedded.stderr);
  api = await startServe(['--no-auth', '--model', STATIC_MODEL_DIR]);
}, 120_000);
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  for (const c of children) c.kill('SIGTERM');
  await api?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function stdioClient(args: string[], env: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'lexembed-test', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp', ...args], env: { ...(process.env as Record<string, string>), ...env }, stderr: 'ignore' }));
  clients.push(client);
  return client;
}

async function httpClient(args: string[]): Promise<Client> {
  const child = spawn(process.execPath, [CLI, 'mcp', '--transport', 'http', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`lexembed mcp exited with ${code}:\n${output}`)));
    child.stderr.on('data', (d) => {
      output += d;
      const m = /listening on (http:\/\/\S+\/mcp)/.exec(output);
      if (m) resolve(m[1]!);
    });
  });
  const health = await fetch(url.replace(/\/mcp$/, '/health'));
  expect(health.status).toBe(200);
  const client = new Client({ name: 'lexembed-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  clients.push(client);
  return client;
}

const call = async (client: Client, name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as unknown as ToolResult;
const post = async (path: string, body: unknown) => {
  const res = await fetch(`${api.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

describe.each([
  ['stdio', () => stdioClient(['--model', STATIC_MODEL_DIR, '--index', index])],
  ['Streamable HTTP', () => httpClient(['--model', STATIC_MODEL_DIR, '--index', index])],
])('lexembed mcp over %s', (_transport, connect) => {
  let client: Client;
  beforeAll(async () => void (client = await connect()), 120_000);

  it('lists its six tools with typed inputs and outputs', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['chunk', 'embed', 'fetch', 'rerank', 'search', 'tokenize']);
    for (const t of tools) expect(t.outputSchema?.type, t.name).toBe('object');
  });

  it('embed, rerank and tokenize answer what the HTTP API answers', async () => {
    const texts = ['The Tenant shall pay rent monthly.', 'Either party may terminate with notice.'];
    const embed = await call(client, 'embed', { texts, task: 'retrieval/document', dimensions: 64 });
    const viaApi = await post('/v1/embeddings', { model: 'legal-2-embedder-static', texts, task: 'retrieval/document', dimensions: 64 });
    expect(embed.isError).toBeFalsy();
    expect(f32(embed.structuredContent!.embeddings)).toEqual(f32((viaApi.body.embeddings as { embedding: number[] }[]).map((e) => e.embedding)));
    expect(embed.structuredContent!.input_tokens).toBe((viaApi.body.usage as { input_tokens: number }).input_tokens);

    const rerank = await call(client, 'rerank', { query: 'ending the lease', texts });
    const rerankApi = await post('/v1/rerankings', { model: 'legal-2-reranker', query: 'ending the lease', texts });
    expect(rerank.structuredContent!.results).toEqual(rerankApi.body.results);

    const tokens = await call(client, 'tokenize', { texts });
    const tokensApi = await post('/v1/tokenize', { model: 'legal-2-embedder-static', texts });
    expect(tokens.structuredContent!.input_tokens).toEqual((tokensApi.body.results as { input_tokens: number }[]).map((r) => r.input_tokens));
  });

  it('chunk cuts with offsets into the text, and search names the file and page of the answer', async () => {
    const text = 'Section 1. Rent. '.repeat(40);
    const chunks = (await call(client, 'chunk', { text, chunk_tokens: 20 })).structuredContent!.chunks as { text: string; start: number; end: number }[];
    expect(chunks.length).toBeGreaterThan(2);
    for (const c of chunks) expect(text.slice(c.start, c.end)).toBe(c.text);

    const found = await call(client, 'search', { query: 'how much notice to terminate the lease', top: 2 });
    expect(found.isError, found.content[0]?.text).toBeFalsy();
    const hits = found.structuredContent!.hits as { id: string; page?: number; page_end?: number; text: string }[];
    expect(hits[0], JSON.stringify(hits)).toMatchObject({ id: 'lease.pdf', text: expect.stringContaining('sixty days') });
    // The passage runs from the end of page 1 onto page 2, and says so.
    expect([hits[0]!.page, hits[0]!.page_end ?? hits[0]!.page]).toEqual([1, 2]);
  });

  it('a bad call is a tool error carrying the HTTP API\'s problem', async () => {
    const bad = await call(client, 'embed', { texts: [] });
    const viaApi = await post('/v1/embeddings', { model: 'legal-2-embedder-static', texts: [] });
    expect(bad.isError).toBe(true);
    expect(bad._meta!.problem).toMatchObject({ status: viaApi.status, title: viaApi.body.title, detail: viaApi.body.detail });
    expect(bad.content[0]!.text).toBe(`${viaApi.status} ${viaApi.body.title}: ${viaApi.body.detail}`);
    const unknown = await call(client, 'search', { query: 'x', corpus: 'nope' });
    expect(unknown).toMatchObject({ isError: true, content: [{ text: '400 Validation error: no corpus "nope"; this server has "corpus"' }] });
    expect(unknown._meta!.problem).toMatchObject({ status: 400, title: 'Validation error', detail: 'no corpus "nope"; this server has "corpus"', type: expect.stringMatching(/#400-validation-error$/) });
  });

  it('an argument of the wrong type is the API\'s 400 problem, not the SDK\'s -32602; its schema has the API\'s bounds', async () => {
    for (const body of [{ texts: ['Lease'], dimensions: 'wide' }, { texts: [1, 2] }, { texts: ['Lease'], dimensions: 0 }, { texts: ['Lease'], task: 'summarise' }]) {
      const viaMcp = await call(client, 'embed', body);
      const viaApi = await post('/v1/embeddings', { model: 'legal-2-embedder-static', ...body });
      expect(viaApi.status, JSON.stringify(body)).toBe(400);
      expect([viaMcp.isError, viaMcp.content[0]!.text], JSON.stringify(body)).toEqual([true, `400 Validation error: ${viaApi.body.detail}`]);
      expect(viaMcp._meta!.problem).toMatchObject({ status: 400, title: 'Validation error', detail: viaApi.body.detail });
    }
    const cases: [string, Record<string, unknown>, string][] = [
      ['search', { query: 'rent', top: 'five' }, 'top must be an integer from 1 to 100'],
      ['search', { query: 'rent', top: 1000 }, 'top must be an integer from 1 to 100'],
      ['search', {}, 'query must be a string'],
      ['chunk', { text: 'a b c', chunk_tokens: -1 }, 'chunk_tokens must be an integer of at least 1 (tokens)'],
      ['rerank', { query: 'x', texts: 'not a list', top_n: 1.5 }, 'texts must be an array of 1 to 1000 strings; top_n must be an integer of at least 1, or null'],
    ];
    for (const [tool, args, detail] of cases) {
      const result = await call(client, tool, args);
      expect([result.isError, result.content[0]!.text], JSON.stringify(args)).toEqual([true, expect.stringContaining(`400 Validation error: ${detail}`)]);
      expect(result._meta!.problem).toMatchObject({ status: 400, title: 'Validation error' });
    }
    const { tools } = await client.listTools();
    const schemaOf = (name: string) => tools.find((t) => t.name === name)!.inputSchema as { properties: Record<string, Record<string, unknown>>; required?: string[] };
    const dimensions = JSON.stringify(schemaOf('embed').properties.dimensions);
    expect(dimensions).toContain('"minimum":1');
    expect(dimensions).not.toContain('9007199254740991');
    expect(schemaOf('embed').required).toEqual(['texts']);
    expect(schemaOf('search').properties.top).toMatchObject({ type: 'integer', minimum: 1, maximum: 100 });
    expect(schemaOf('fetch').properties.neighbours).toMatchObject({ type: 'integer', minimum: 0, maximum: 10 });
    expect(JSON.stringify(tools.map((t) => t.inputSchema))).not.toContain('9007199254740991');
  });
});

describe('lexembed mcp --remote', () => {
  it('embeds through a lexembed server, whose keys apply: without one, the tool error keeps its 401 problem', async () => {
    // The static model's server answers to its own name only; with the default name the call is refused, naming it.
    const unnamed = await call(await stdioClient(['--remote', `${api.url}/v1`]), 'embed', { texts: ['Notice to quit'] });
    expect(unnamed).toMatchObject({ isError: true, content: [{ text: '400 Validation error: model must be "legal-2-embedder-static"' }] });
    const open = await stdioClient(['--remote', `${api.url}/v1`, '--model-name', 'legal-2-embedder-static']);
    const r = await call(open, 'embed', { texts: ['Notice to quit'] });
    const viaApi = await post('/v1/embeddings', { model: 'legal-2-embedder-static', texts: ['Notice to quit'] });
    expect(f32(r.structuredContent!.embeddings)).toEqual(f32((viaApi.body.embeddings as { embedding: number[] }[]).map((e) => e.embedding)));
    expect((await call(open, 'chunk', { text: 'a b c' })).content[0]!.text).toMatch(/^400 Validation error: chunk cuts texts with the model's tokenizer/);

    const keyed = await startServe(['--model', STATIC_MODEL_DIR, '--data-dir', join(dir, 'keys')]);
    try {
      const locked = await stdioClient(['--remote', `${keyed.url}/v1`, '--model-name', 'legal-2-embedder-static'], { LEXEMBED_API_KEY: '' });
      const refused = await call(locked, 'embed', { texts: ['Notice to quit'] });
      expect(refused.isError).toBe(true);
      expect(refused._meta!.problem).toMatchObject({ status: 401 });
      // Not the server's advice to an HTTP client (send an Authorization header): what to set, and where.
      expect(refused.content[0]!.text).toMatch(/^401 .*: the lexembed server at http:\/\/\S+ needs an API key, and LEXEMBED_API_KEY is not set in lexembed mcp's environment; set LEXEMBED_API_KEY to a key of that server in the "env" of lexembed's entry in the MCP client's configuration/);
      expect(refused.content[0]!.text).not.toContain('Authorization');
      expect(refused._meta!.problem!.detail).toBe(refused.content[0]!.text.replace(/^401 [^:]+: /, ''));
      const wrong = await stdioClient(['--remote', `${keyed.url}/v1`], { LEXEMBED_API_KEY: 'lxk_v1_wrong' });
      expect((await call(wrong, 'embed', { texts: ['Notice to quit'] })).content[0]!.text).toMatch(/^401 .*refused the key in LEXEMBED_API_KEY \(.+\); set LEXEMBED_API_KEY to a key of that server/);
    } finally {
      await keyed.stop();
    }
  }, 120_000);
});

it('the bundled hybrid serves the same vectors through mcp as through serve', async () => {
  const server = await startServe(['--no-auth', '--model', BUNDLED_MODEL_DIR]);
  try {
    const client = await stdioClient(['--model', BUNDLED_MODEL_DIR]);
    const texts = ['Termination for convenience'];
    const viaMcp = await call(client, 'embed', { texts, task: 'retrieval/query' });
    const res = await fetch(`${server.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'legal-2-embedder', texts, task: 'retrieval/query' }) });
    const viaHttp = (await res.json()) as { embeddings: { embedding: number[] }[] };
    expect(f32(viaMcp.structuredContent!.embeddings)).toEqual(f32(viaHttp.embeddings.map((e) => e.embedding)));
  } finally {
    await server.stop();
  }
}, 120_000);

describe('lexembed mcp without a usable corpus', () => {
  it('started without --index: search and fetch answer a 400 problem that says how to give one', async () => {
    const client = await stdioClient(['--model', STATIC_MODEL_DIR]);
    for (const [tool, args] of [['search', { query: 'rent' }], ['fetch', { passage_id: '1' }]] as const) {
      const result = await call(client, tool, args);
      expect(result.isError).toBe(true);
      expect(result.content[0]!.text).toMatch(/^400 Validation error: this server has no corpus to search: it was started without --index\. Add "--index", .* restart it$/);
      expect(result._meta!.problem).toMatchObject({ status: 400, title: 'Validation error', detail: expect.stringContaining('started without --index') });
    }
  }, 120_000);

  it('an --index that is not there: over stdio the server starts, embed works, and search says which path and what to do', async () => {
    const missing = join(dir, 'contracts.index');
    // No "-32000: Connection closed" for the assistant: the client connects.
    const client = await stdioClient(['--model', STATIC_MODEL_DIR, '--index', missing]);
    expect((await call(client, 'embed', { texts: ['Notice to quit'] })).isError).toBeFalsy();
    const result = await call(client, 'search', { query: 'rent' });
    expect(result.isError).toBe(true);
    expect(result.content[0]!.text).toBe(
      `503 Service unavailable error: the corpus "contracts" could not be opened when this server started: --index ${missing}: no such file or folder (an index made by lexembed index, or an output of lexembed embed). Fix --index in the "args" of lexembed's entry in the MCP client's configuration (an index is made with npx lexembed index <folder> --index <path>), then restart the server`,
    );
    expect(result._meta!.problem).toMatchObject({ status: 503, title: 'Service unavailable error' });
  }, 120_000);

  it('an --index that is not there: over HTTP (run by a person or a service manager) it stops at start, saying so on stderr', async () => {
    const r = await runCli(['mcp', '--transport', 'http', '--port', '0', '--model', STATIC_MODEL_DIR, '--index', join(dir, 'nothing.index')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`lexembed mcp: --index ${join(dir, 'nothing.index')}: no such file or folder`);
  }, 120_000);
});
