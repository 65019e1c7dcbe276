// `lexembed mcp`: the Model Context Protocol server (src/mcp/server.ts) on stdio (an assistant
// starts it as a subprocess) or Streamable HTTP (POST /mcp, stateless: each request gets a server
// of its own over the one loaded model), on the local model or a lexembed server (--remote, whose
// keys and limits then apply: LEXEMBED_API_KEY).
import { existsSync } from 'node:fs';
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
import { describeOptions, parseOptions, remoteUrl, UsageError } from './options.ts';

export const MCP_OPTIONS = {
  transport: { value: z.enum(['stdio', 'http'], { error: 'must be stdio or http' }), env: 'LEXEMBED_MCP_TRANSPORT', default: 'stdio', help: 'stdio (the assistant starts lexembed mcp itself) or http (Streamable HTTP at POST /mcp)' },
  index: { value: z.string(), default: '', help: 'outputs of lexembed embed the search tool may read, comma-separated (each named by its file name less .jsonl)' },
  port: { value: z.coerce.number({ error: 'must be a port number (0 for any free one)' }).int().min(0).max(65535, { error: 'must be a port number (0 for any free one)' }), env: 'LEXEMBED_MCP_PORT', default: '8090', help: 'with --transport http: TCP port' },
  host: { value: z.string().min(1), env: 'LEXEMBED_MCP_HOST', default: '127.0.0.1', help: 'with --transport http: address to bind (the MCP endpoint has no keys of its own: keep it on loopback, or put it behind your own authentication)' },
  model: { value: z.string().min(1), env: 'LEXEMBED_MODEL', default: BUNDLED_MODEL_DIR, help: 'local model folder (for search: the one the index was embedded with)' },
  ...DEVICE_OPTIONS,
  remote: { value: remoteUrl, env: 'LEXEMBED_BASE_URL', default: '', help: "call a lexembed server instead, e.g. http://127.0.0.1:8080/v1 (key from LEXEMBED_API_KEY; its keys and limits apply)" },
  'model-name': { value: z.string().min(1), default: 'legal-2-embedder', help: 'model name sent to a remote server' },
};

export const MCP_USAGE = `Usage: lexembed mcp [options]

A Model Context Protocol server, so that AI assistants can embed, rerank, count tokens, chunk
and search legal corpora embedded by lexembed (tools: embed, rerank, tokenize, chunk, search).

  lexembed embed contracts/ --output contracts.jsonl
  lexembed mcp --index contracts.jsonl                      # stdio
  lexembed mcp --transport http --port 8090 --index contracts.jsonl   # POST http://127.0.0.1:8090/mcp

Options:
${describeOptions(MCP_OPTIONS)}
`;

export async function mcpCommand(args: string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const { values: config, help } = parseOptions('lexembed mcp', args, MCP_OPTIONS);
  if (help) return (out(MCP_USAGE), 0);
  const indexes = indexesOf(config.index);
  const source = await openModelSource(config);
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

function indexesOf(list: string): McpIndex[] {
  const paths = list
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const indexes = paths.map((path) => {
    if (!existsSync(path)) throw new UsageError(`lexembed mcp: --index ${path}: no such file (an output of lexembed embed)`);
    if (!existsSync(metaPathOf(path))) throw new UsageError(`lexembed mcp: --index ${path} has no ${metaPathOf(path)}: search outputs written by lexembed embed`);
    return { name: basename(path).replace(/\.jsonl?$/i, ''), path: resolve(path) };
  });
  const names = new Set(indexes.map((i) => i.name));
  if (names.size !== indexes.length) throw new UsageError('lexembed mcp: --index: two outputs share a file name; rename one (the search tool tells them apart by name)');
  return indexes;
}
