// `lexembed mcp`: the Model Context Protocol server (src/mcp/server.ts) on stdio (an assistant
// starts it as a subprocess) or Streamable HTTP (POST /mcp, stateless: each request gets a server
// of its own over the one loaded model), on the local model or a lexembed server (--remote, whose
// keys and limits then apply: LEXEMBED_API_KEY). On stdio a corpus that cannot be opened is
// answered as unavailable by the tools (an assistant app shows its user nothing else); over HTTP it
// stops the server at start.
import { existsSync, statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { serve } from '@hono/node-server';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { z } from 'zod';
import { createMcpServer, type McpIndex } from '../mcp/server.ts';
import { BUNDLED_MODEL_DIR } from '../node/runtime/load-model.ts';
import { DEVICE_OPTIONS } from './device-options.ts';
import { metaPathOf } from './embed.ts';
import { openModelSource } from './model-source.ts';
import { IndexError, openIndex } from '../search-index/index.ts';
import { checkNotInUse } from '../search-index/location.ts';
import { isPostgresUrl } from '../search-index/sql.ts';
import { describeOptions, parseOptions, remoteUrl, UsageError } from './options.ts';

export const MCP_OPTIONS = {
  transport: { value: z.enum(['stdio', 'http'], { error: 'must be stdio or http' }), env: 'LEXEMBED_MCP_TRANSPORT', default: 'stdio', help: 'stdio (the assistant starts lexembed mcp itself) or http (Streamable HTTP at POST /mcp)' },
  index: { value: z.string(), default: '', help: 'what the search and fetch tools read, comma-separated: indexes made by lexembed index (a folder or postgres:// URL, named by the folder less .index or the database) or outputs of lexembed embed (named by the file less .jsonl)' },
  port: { value: z.coerce.number({ error: 'must be a port number (0 for any free one)' }).int().min(0).max(65535, { error: 'must be a port number (0 for any free one)' }), env: 'LEXEMBED_MCP_PORT', default: '8090', help: 'with --transport http: TCP port' },
  host: { value: z.string().min(1), env: 'LEXEMBED_MCP_HOST', default: '127.0.0.1', help: 'with --transport http: address to bind (the MCP endpoint has no keys of its own: keep it on loopback, or put it behind your own authentication)' },
  model: { value: z.string().min(1), env: 'LEXEMBED_MODEL', default: BUNDLED_MODEL_DIR, help: 'local model folder (for search: the one the index was embedded with)' },
  ...DEVICE_OPTIONS,
  remote: { value: remoteUrl, env: 'LEXEMBED_BASE_URL', default: '', help: "call a lexembed server instead, e.g. http://127.0.0.1:8080/v1 (key from LEXEMBED_API_KEY; its keys and limits apply)" },
  'model-name': { value: z.string().min(1), default: 'legal-2-embedder', help: 'model name sent to a remote server' },
};

export const MCP_USAGE = `Usage: lexembed mcp [options]

A Model Context Protocol server, so that AI assistants can embed, rerank, count tokens, chunk
and search legal corpora indexed by lexembed (tools: embed, rerank, tokenize, chunk, search,
fetch). An index stays open while the server runs: searches are answered warm.

  lexembed index contracts/ --index contracts.index
  lexembed mcp --index contracts.index                      # stdio
  lexembed mcp --transport http --port 8090 --index contracts.index   # POST http://127.0.0.1:8090/mcp

Options:
${describeOptions(MCP_OPTIONS)}
`;

export async function mcpCommand(args: string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const { values: config, help } = parseOptions('lexembed mcp', args, MCP_OPTIONS);
  if (help) return (out(MCP_USAGE), 0);
  // On stdio an assistant app starts the server and shows its user only what the tools answer, so
  // a corpus that cannot be opened is reported by every call on it (and on stderr, for the app's
  // log); the other tools still work. Over HTTP a person or service manager reads stderr: stop.
  const lenient = config.transport === 'stdio';
  const outputs: McpSource[] = [];
  for (const o of indexesOf(config.index, lenient)) outputs.push(o.kind === 'index' ? await guarded(o.name, lenient, () => (checkNotInUse(o.path), o)) : o);
  if (config.remote && outputs.some((o) => o.kind === 'index')) throw new UsageError('lexembed mcp: an index (lexembed index) is searched with the model loaded here: drop --remote, or give outputs of lexembed embed');
  const source = await openModelSource(config);
  const indexes: McpIndex[] = [];
  try {
    for (const o of outputs) indexes.push(o.kind === 'index' ? await guarded(o.name, lenient, async () => ({ name: o.name, kind: 'index' as const, index: await openIndex(o.path, { embedder: source.embedder!, create: false }) })) : o);
  } catch (error) {
    await Promise.all(indexes.map((i) => (i.kind === 'index' ? i.index.close() : undefined)));
    await source.dispose();
    throw error;
  }
  for (const i of indexes) if (i.kind === 'unavailable') err(`lexembed mcp: warning: corpus "${i.name}" is not available, and the search and fetch tools say so: ${i.reason}`);
  const make = () => createMcpServer(source, indexes);
  const stopped = new Promise<void>((done) => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => done());
  });
  try {
    if (config.transport === 'stdio') {
      // stdout carries the protocol: everything said to people goes to stderr.
      const server = make();
      const transport = new StdioServerTransport();
      const closed = new Promise<void>((done) => (transport.onclose = done));
      process.stdin.once('end', () => void transport.close());
      await server.connect(transport);
      err(`lexembed mcp: on stdio; model: ${source.where}${indexes.length ? `; corpora: ${indexes.map((i) => i.name).join(', ')}` : ''}`);
      await Promise.race([closed, stopped]);
      await server.close();
      return 0;
    }
    const http = serve({ fetch: (request) => handleHttp(request, make), port: config.port, hostname: config.host });
    await new Promise<void>((ready, fail) => (http.once('listening', ready), http.once('error', fail)));
    const address = http.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    err(`lexembed mcp: listening on http://${config.host}:${port}/mcp (Streamable HTTP); model: ${source.where}${indexes.length ? `; corpora: ${indexes.map((i) => i.name).join(', ')}` : ''}`);
    await stopped;
    await new Promise<void>((done) => http.close(() => done()));
    return 0;
  } finally {
    await Promise.all(indexes.map((i) => (i.kind === 'index' ? i.index.close() : undefined)));
    await source.dispose();
  }
}

/** POST /mcp: a stateless server and transport per request; GET /health for probes; anything else a plain 404/405. */
async function handleHttp(request: Request, make: () => ReturnType<typeof createMcpServer>): Promise<Response> {
  const path = new URL(request.url).pathname;
  if (path === '/health') return Response.json({ status: 'ok' });
  if (path !== '/mcp') return new Response('not found: the MCP endpoint is POST /mcp\n', { status: 404 });
  if (request.method !== 'POST') return new Response('method not allowed: this stateless MCP endpoint takes POST\n', { status: 405, headers: { allow: 'POST' } });
  const server = make();
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    return await transport.handleRequest(request);
  } finally {
    void server.close();
  }
}

type Unavailable = { name: string; kind: 'unavailable'; reason: string };
type McpSource = { name: string; kind: 'output'; path: string } | { name: string; kind: 'index'; path: string } | Unavailable;

/** What to do about a corpus that could not be opened, said to the user of an assistant app. */
const RESTART = 'Fix --index in the "args" of lexembed\'s entry in the MCP client\'s configuration (an index is made with npx lexembed index <folder> --index <path>), then restart the server';

/** `check`'s answer; an IndexError makes the corpus unavailable (lenient: stdio) or stops the server. */
async function guarded<T>(name: string, lenient: boolean, check: () => T | Promise<T>): Promise<T | Unavailable> {
  try {
    return await check();
  } catch (error) {
    if (!(error instanceof IndexError)) throw error;
    if (!lenient) throw new UsageError(`lexembed mcp: ${error.message}`);
    return { name, kind: 'unavailable', reason: `${error.message}. ${RESTART}` };
  }
}

/**
 * What --index names: index folders and postgres:// URLs, or outputs of lexembed embed, each with
 * the name the tools take; one that is not there is unavailable (lenient) or stops the server.
 */
function indexesOf(list: string, lenient: boolean): McpSource[] {
  const paths = list
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const sources = paths.map((path): McpSource => {
    if (isPostgresUrl(path)) return { name: new URL(path).pathname.replace(/^\//, '') || 'postgres', kind: 'index', path };
    const name = basename(resolve(path)).replace(/\.index$/i, '').replace(/\.jsonl?$/i, '');
    const refuse = (why: string): Unavailable => {
      if (!lenient) throw new UsageError(`lexembed mcp: ${why}`);
      return { name, kind: 'unavailable', reason: `${why}. ${RESTART}` };
    };
    if (!existsSync(path)) return refuse(`--index ${resolve(path)}: no such file or folder (an index made by lexembed index, or an output of lexembed embed)`);
    if (statSync(path).isDirectory()) return { name, kind: 'index', path: resolve(path) };
    if (!existsSync(metaPathOf(path))) return refuse(`--index ${path} has no ${metaPathOf(path)}: search outputs written by lexembed embed, or an index made by lexembed index`);
    return { name, kind: 'output', path: resolve(path) };
  });
  const names = new Set(sources.map((i) => i.name));
  if (names.size !== sources.length) throw new UsageError('lexembed mcp: --index: two corpora share a name; rename one (the tools tell them apart by name)');
  return sources;
}
