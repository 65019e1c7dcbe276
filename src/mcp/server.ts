// lexembed's tools for AI assistants, as a Model Context Protocol server (the official
// @modelcontextprotocol/sdk): embed, rerank, tokenize and chunk answer what POST /v1/embeddings,
// /v1/rerankings and /v1/tokenize answer (they call the same operations, in this process or on a
// lexembed server), and search looks up the outputs of `lexembed embed` it was started with.
// Inputs are typed loosely (types, not limits) so that the API's own validation answers a bad
// call with its problem document; every failure is an MCP tool error (isError) whose text says
// status, title and detail, with the problem document itself in the result's _meta.problem.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { APIError } from '../client/errors.ts';
import { TASKS } from '../contract/index.ts';
import type { ModelSource } from '../cli/model-source.ts';
import { readMeta, searchIndex, unitFields } from '../cli/search.ts';
import { LEXEMBED_VERSION } from '../version.ts';
import { messageOf } from '../util/message-of.ts';

/** An output of `lexembed embed` the search tool may read, by the name the tool takes. */
export interface McpIndex {
  readonly name: string;
  readonly path: string;
}

const task = z.enum(TASKS).nullable().optional().describe('retrieval/query for questions, retrieval/document for passages; null or absent: none');

/** The MCP server over `source` (the model) and `indexes` (what search may read). */
export function createMcpServer(source: ModelSource, indexes: readonly McpIndex[]): McpServer {
  const server = new McpServer({ name: 'lexembed', version: LEXEMBED_VERSION }, { instructions: instructionsFor(indexes) });

  server.registerTool(
    'embed',
    {
      title: 'Embed texts',
      description: `Embeddings of legal texts by ${source.modelName} (POST /v1/embeddings): one unit vector per text, in order. Use task retrieval/query for questions and retrieval/document for the passages they are compared with.`,
      inputSchema: { texts: z.array(z.string()).describe('the texts (1 to 128)'), task, dimensions: z.number().int().nullable().optional().describe('components to keep (a Matryoshka prefix); absent: the model default') },
      outputSchema: { model: z.string(), embeddings: z.array(z.array(z.number())), input_tokens: z.number().int() },
    },
    ({ texts, task, dimensions }) =>
      answer(async () => {
        const r = await source.embeddings.create({ model: source.modelName, texts, task: task ?? null, dimensions: dimensions ?? null });
        return { model: source.modelName, embeddings: r.embeddings.map((e) => e.embedding), input_tokens: r.usage.input_tokens };
      }),
  );

  server.registerTool(
    'rerank',
    {
      title: 'Rerank texts',
      description: `Scores texts by relevance to a query with ${source.rerankModelName} (POST /v1/rerankings): calibrated scores from 0 to 1, most relevant first.`,
      inputSchema: { query: z.string(), texts: z.array(z.string()).describe('the texts to rank (1 to 1000)'), top_n: z.number().int().nullable().optional().describe('return only the n best') },
      outputSchema: { results: z.array(z.object({ index: z.number().int(), score: z.number() })), input_tokens: z.number().int() },
    },
    ({ query, texts, top_n }) =>
      answer(async () => {
        const r = await source.rerankings.create({ model: source.rerankModelName, query, texts, top_n: top_n ?? null });
        return { results: r.results, input_tokens: r.usage.input_tokens };
      }),
  );

  server.registerTool(
    'tokenize',
    {
      title: 'Count tokens',
      description: 'Token counts of texts as the model reads them (POST /v1/tokenize), to check inputs against the model maximum before embedding.',
      inputSchema: { texts: z.array(z.string()), task },
      outputSchema: { input_tokens: z.array(z.number().int()).describe('per text, what embed would feed the model before truncation'), max_input_tokens: z.number().int() },
    },
    ({ texts, task }) =>
      answer(async () => {
        const r = await source.tokenize.create({ model: source.modelName, texts, task: task ?? null });
        return { input_tokens: r.results.map((x) => x.input_tokens), max_input_tokens: r.max_input_tokens };
      }),
  );

  server.registerTool(
    'chunk',
    {
      title: 'Chunk a document',
      description: "Cuts a long text into chunks of at most chunk_tokens of the model's tokens (between words, preferring line and sentence ends), each with its character offsets: text.slice(start, end) is the chunk.",
      inputSchema: { text: z.string(), chunk_tokens: z.number().int().optional().describe('default: what one document embedding reads'), overlap_tokens: z.number().int().optional().describe('tokens repeated from the end of the chunk before (default 0)') },
      outputSchema: { chunks: z.array(z.object({ text: z.string(), start: z.number().int(), end: z.number().int() })) },
    },
    ({ text, chunk_tokens, overlap_tokens }) =>
      answer(async () => {
        if (!source.chunkText) throw new Error(`chunk cuts texts with the model's tokenizer, which runs where lexembed mcp loads the model itself; this server embeds through ${source.where} (start lexembed mcp without --remote to chunk)`);
        const chunks = await source.chunkText(text, { ...(chunk_tokens !== undefined ? { size: chunk_tokens } : {}), ...(overlap_tokens !== undefined ? { overlap: overlap_tokens } : {}) });
        return { chunks: chunks.map((c) => ({ text: c.text, start: c.start, end: c.end })) };
      }),
  );

  registerSearch(server, source, indexes);
  return server;
}

/** The search tool, over the embedded corpora the server was given. */
function registerSearch(server: McpServer, source: ModelSource, indexes: readonly McpIndex[]): void {
  server.registerTool(
    'search',
    {
      title: 'Search an embedded corpus',
      description: indexes.length
        ? `The passages of an embedded legal corpus closest to a query, each with its file and page (or id) and score. Corpora: ${indexes.map((i) => i.name).join(', ')}.`
        : 'Search an embedded corpus (none was given to this server: start it with --index <output of lexembed embed>).',
      inputSchema: {
        query: z.string(),
        corpus: z.string().optional().describe(`which corpus (${indexes.map((i) => i.name).join(', ') || 'none configured'}); default: the first`),
        top: z.number().int().optional().describe('how many passages (default 5, at most 100)'),
        rerank: z.boolean().optional().describe('reorder the best 50 by cosine with the reranker (default false)'),
      },
      outputSchema: {
        hits: z.array(
          z.object({
            score: z.number(),
            id: z.union([z.string(), z.number()]).describe('the file (documents) or the row id'),
            page: z.number().int().optional().describe('PDF: the page the passage starts on (page_end: where it ends, if another)'),
            page_end: z.number().int().optional(),
            paragraph: z.number().int().optional().describe('DOCX: the paragraph it starts on'),
            paragraph_end: z.number().int().optional(),
            line: z.number().int().optional().describe('text and Markdown: the line it starts on'),
            line_end: z.number().int().optional(),
            start: z.number().int().optional(),
            end: z.number().int().optional(),
            text: z.string().nullable(),
          }),
        ),
      },
    },
    ({ query, corpus, top, rerank }) =>
      answer(async () => {
        const index = corpus === undefined ? indexes[0] : indexes.find((i) => i.name === corpus);
        if (!index) throw new Error(indexes.length ? `no corpus "${corpus}"; this server has ${indexes.map((i) => `"${i.name}"`).join(', ')}` : 'this server was started without --index: start lexembed mcp --index <output of lexembed embed>');
        if (!query.trim()) throw new Error('query must have a non-whitespace character');
        const n = top ?? 5;
        if (!Number.isInteger(n) || n < 1 || n > 100) throw new Error('top must be an integer from 1 to 100');
        const hits = await searchIndex(source, index.path, readMeta(index.path), query, { top: n, rerank: rerank ?? false, candidates: 50 });
        return {
          hits: hits.map((h) => ({ score: h.score, id: h.id, ...unitFields(h), ...(h.start !== undefined ? { start: h.start, end: h.end } : {}), text: h.text ?? null })),
        };
      }),
  );
}

function instructionsFor(indexes: readonly McpIndex[]): string {
  return (
    'lexembed: legal embeddings. embed texts (task retrieval/query for questions, retrieval/document for passages), rerank candidate passages for a query, ' +
    'count tokens, chunk long documents' +
    (indexes.length ? `, and search the embedded corpora ${indexes.map((i) => i.name).join(', ')} (each hit names its file and page).` : '.')
  );
}

/** A tool's result: the value as structured content (and its JSON as text), or a tool error keeping the problem. */
async function answer<T extends Record<string, unknown>>(run: () => Promise<T>) {
  try {
    const value = await run();
    return { content: [{ type: 'text' as const, text: JSON.stringify(value) }], structuredContent: value };
  } catch (error) {
    if (error instanceof APIError) {
      const problem = error.error ?? { status: error.status, title: error.title, detail: error.detail };
      // The problem rides in _meta: clients check structuredContent against the tool's output schema even on errors.
      return { isError: true, content: [{ type: 'text' as const, text: `${error.status ?? ''} ${error.title ?? 'error'}: ${error.detail ?? error.message}`.trim() }], _meta: { problem } };
    }
    return { isError: true, content: [{ type: 'text' as const, text: messageOf(error) }] };
  }
}
