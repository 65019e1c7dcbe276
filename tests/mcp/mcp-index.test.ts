// `lexembed mcp --index <index>` with the official SDK's client over stdio and Streamable HTTP:
// search answers structured hits (file, page, score, excerpt, passage id, a resource link per
// passage) with cursor pagination, fetch reads a passage with its neighbours, the linked resource
// reads back, and mistakes are tool errors that say what to do. The index stays open in the
// server (warm), so only one server holds the folder at a time.
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { CLI } from '../support/cli.ts';
import { indexedContracts } from '../support/contracts.ts';

type ToolResult = { isError?: boolean; content: { type: string; text?: string; uri?: string }[]; structuredContent?: Record<string, unknown>; _meta?: { problem?: Record<string, unknown> } };
type Hit = { file: string; passage_id: string; page?: number; line?: number; excerpt: string; uri: string; text: string };
const MODEL = ['--model', STATIC_MODEL_DIR];

let dir: string;
let index: string;

beforeAll(async () => {
  ({ dir, index } = await indexedContracts('lexembed-mcp-index-', 12));
}, 180_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function stdioClient(): Promise<{ client: Client; stop: () => Promise<void> }> {
  const client = new Client({ name: 'lexembed-test', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp', '--index', index, ...MODEL], stderr: 'ignore' }));
  return { client, stop: () => client.close() };
}

async function httpClient(): Promise<{ client: Client; stop: () => Promise<void> }> {
  const child: ChildProcess = spawn(process.execPath, [CLI, 'mcp', '--transport', 'http', '--port', '0', '--index', index, ...MODEL], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`lexembed mcp exited with ${code}:\n${output}`)));
    child.stderr!.on('data', (d) => {
      output += d;
      const m = /listening on (http:\/\/\S+\/mcp)/.exec(output);
      if (m) resolve(m[1]!);
    });
  });
  const client = new Client({ name: 'lexembed-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return { client, stop: async () => (await client.close(), child.kill('SIGTERM'), await exited) };
}

const call = async (client: Client, name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as unknown as ToolResult;

describe.each([
  ['stdio', stdioClient],
  ['Streamable HTTP', httpClient],
])('lexembed mcp --index <index> over %s', (_transport, connect) => {
  let client: Client;
  let stop: () => Promise<void>;
  beforeAll(async () => void ({ client, stop } = await connect()), 120_000);
  afterAll(async () => await stop?.());

  it('search answers the clause with file, page, excerpt and a resource link per passage', async () => {
    const result = await call(client, 'search', { query: 'termination for convenience', top: 3 });
    expect(result.isError).toBeFalsy();
    const hits = result.structuredContent!.hits as Hit[];
    expect(hits).toHaveLength(3);
    expect(hits[0]).toMatchObject({ file: expect.stringMatching(/^contract-(02|10)\.pdf$/), page: 1, excerpt: expect.stringContaining('TERMINATION FOR CONVENIENCE. Either party may terminate this Agreement for convenience') });
    const links = result.content.filter((c) => c.type === 'resource_link');
    expect(links.map((l) => l.uri)).toEqual(hits.map((h) => h.uri));
    const read = await client.readResource({ uri: hits[0]!.uri });
    expect((read.contents[0] as { text: string }).text).toContain('Either party may terminate');
  }, 120_000);

  it('pages with next_cursor, and fetch reads a passage with its neighbours', async () => {
    const first = (await call(client, 'search', { query: 'general clause', top: 4 })).structuredContent!;
    const second = (await call(client, 'search', { query: 'general clause', top: 4, cursor: first.next_cursor })).structuredContent!;
    const all = (await call(client, 'search', { query: 'general clause', top: 8 })).structuredContent!;
    expect([...(first.hits as Hit[]), ...(second.hits as Hit[])].map((h) => h.passage_id)).toEqual((all.hits as Hit[]).map((h) => h.passage_id));
    // contract-00 is a long one: several passages.
    const [long] = (await call(client, 'search', { query: 'security deposit', top: 1, file: 'contract-00.*' })).structuredContent!.hits as Hit[];
    const fetched = (await call(client, 'fetch', { passage_id: long!.passage_id, neighbours: 1 })).structuredContent! as { passage: Hit; before: Hit[]; after: Hit[] };
    expect(fetched.passage.passage_id).toBe(long!.passage_id);
    expect(fetched.before.length + fetched.after.length).toBeGreaterThan(0);
    expect([...fetched.before, fetched.passage, ...fetched.after].every((h) => h.file === 'contract-00.txt')).toBe(true);
  }, 120_000);

  it('mistakes are tool errors that say what to do', async () => {
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['search', { query: 'rent', corpus: 'nope' }, /no corpus "nope"; this server has "contracts"/],
      ['search', { query: 'rent', cursor: 'abc' }, /cursor must be a next_cursor/],
      ['search', { query: 'word '.repeat(3000) }, /characters; a query is searched as one text of at most 10,000/],
      ['fetch', { passage_id: '999999' }, /no passage 999999 in "contracts"/],
      ['fetch', { passage_id: 'x1' }, /passage ids are whole numbers/],
      ['fetch', { passage_id: 7 }, /passage_id must be a string/],
      ['search', { query: 'rent', file: ['*.pdf'] }, /file must be a string/],
    ];
    for (const [tool, args, message] of cases) {
      const result = await call(client, tool, args);
      expect([result.isError, result.content[0]!.text], JSON.stringify(args).slice(0, 80)).toEqual([true, expect.stringMatching(message)]);
      // Every mistake as the API says one: "status title: detail", and the problem document beside it.
      expect(result.content[0]!.text).toMatch(/^400 Validation error: /);
      expect(result._meta?.problem, tool).toMatchObject({ status: 400, title: 'Validation error', detail: result.content[0]!.text!.replace(/^400 Validation error: /, '') });
    }
  }, 120_000);
});
