// lexembed's tools for AI assistants, as a Model Context Protocol server (the official
// @modelcontextprotocol/sdk): embed, rerank, tokenize and chunk answer what POST /v1/embeddings,
// /v1/rerankings and /v1/tokenize answer (they call the same operations, in this process or on a
// lexembed server), and search looks up the outputs of `lexembed embed` it was started with.
// Inputs are typed loosely (types, not limits) so that the API's own validation answers a bad
// call with its problem document; every failure is an MCP tool error (isError) whose text says
// status, title and detail, with the problem document itself in the result's _meta.problem.
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { APIError } from '../client/errors.ts';
import { TASKS } from '../contract/index.ts';
import type { ModelSource } from '../cli/model-source.ts';
import { readMeta, searchIndex, unitFields } from '../cli/search.ts';
import { LEXEMBED_VERSION } from '../version.ts';
import { messageOf } from '../util/message-of.ts';
import { excerptOf } from '../search-index/excerpt.ts';
import type { SearchHit, SearchIndex } from '../search-index/index.ts';

/** What the search tool may read, by the name the tool takes: an output of `lexembed embed`, or an open index. */
export type McpIndex = { readonly name: string; readonly kind: 'output'; readonly path: string } | { readonly name: string; readonly kind: 'index'; readonly index: SearchIndex };

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
  registerFetch(server, indexes);
  return server;
}

/** A hit of an index as the tools answer it: file, unit, score, excerpt, the passage and its resource URI. */
function indexHit(corpus: string, h: SearchHit, query: string | null) {
  return {
    score: h.score,
    id: h.file,
    file: h.file,
    passage_id: h.passageId,
    ...unitFields({ unit: h.unit && { name: h.unit.name, number: h.unit.first, last: h.unit.last } }),
    start: h.start,
    end: h.end,
    ...(query !== null ? { excerpt: excerptOf(h.text, query) } : {}),
    text: h.text,
    uri: passageUri(corpus, h.passageId),
  };
}

const passageUri = (corpus: string, id: string) => `lexembed://${encodeURIComponent(corpus)}/passages/${id}`;

/** The corpus a tool call names (the first when it names none), or an error listing the ones there are. */
function corpusFinder(indexes: readonly McpIndex[]) {
  return (corpus: string | undefined): McpIndex => {
    const index = corpus === undefined ? indexes[0] : indexes.find((i) => i.name === corpus);
    if (!index) throw new Error(indexes.length ? `no corpus "${corpus}"; this server has ${indexes.map((i) => `"${i.name}"`).join(', ')}` : 'this server was started without --index: start lexembed mcp --index <index made by lexembed index>');
    return index;
  };
}

/** The search tool, over the corpora the server was given. */
function registerSearch(server: McpServer, source: ModelSource, indexes: readonly McpIndex[]): void {
  const names = indexes.map((i) => i.name).join(', ');
  const find = corpusFinder(indexes);
  server.registerTool(
    'search',
    {
      title: 'Search a legal corpus',
      description: indexes.length
        ? `The passages of a legal corpus that best answer a query (hybrid: dense and sparse vectors), each with its file and page (or paragraph, or line), score, the sentences that match and a resource link to the passage. Corpora: ${names}.`
        : 'Search a legal corpus (none was given to this server: start it with --index <index made by lexembed index>).',
      inputSchema: {
        query: z.string(),
        corpus: z.string().optional().describe(`which corpus (${names || 'none configured'}); default: the first`),
        top: z.number().int().optional().describe('how many passages (default 5, at most 100)'),
        cursor: z.string().optional().describe("an index: the previous answer's next_cursor, for the next page"),
        file: z.string().optional().describe("an index: only files whose path matches this glob, e.g. '*acme*.pdf'"),
        rerank: z.boolean().optional().describe('an output of lexembed embed: reorder the best 50 by cosine with the reranker (default false)'),
      },
      outputSchema: {
        hits: z.array(
          z.object({
            score: z.number(),
            id: z.union([z.string(), z.number()]).describe('the file (documents) or the row id'),
            file: z.string().optional().describe('an index: the file, as lexembed index names it'),
            passage_id: z.string().optional().describe('an index: the passage, for the fetch tool'),
            page: z.number().int().optional().describe('PDF: the page the passage starts on (page_end: where it ends, if another)'),
            page_end: z.number().int().optional(),
            paragraph: z.number().int().optional().describe('DOCX: the paragraph it starts on'),
            paragraph_end: z.number().int().optional(),
            line: z.number().int().optional().describe('text and Markdown: the line it starts on'),
            line_end: z.number().int().optional(),
            start: z.number().int().optional(),
            end: z.number().int().optional(),
            excerpt: z.string().optional().describe('the sentences of the passage that match the query'),
            text: z.string().nullable(),
            uri: z.string().optional().describe('an index: the passage as a resource'),
          }),
        ),
        next_cursor: z.string().optional().describe('an index: pass as cursor for the next page'),
      },
    },
    ({ query, corpus, top, cursor, file, rerank }) =>
      answer(async () => {
        const index = find(corpus);
        if (!query.trim()) throw new Error('query must have a non-whitespace character');
        const n = top ?? 5;
        if (!Number.isInteger(n) || n < 1 || n > 100) throw new Error('top must be an integer from 1 to 100');
        if (index.kind === 'index') {
          const offset = cursor === undefined ? 0 : Number.parseInt(cursor, 10);
          if (!/^\d+$/.test(cursor ?? '0') || offset > 10_000) throw new Error(`cursor must be a next_cursor this tool answered (got "${cursor}")`);
          const hits = await index.index.search(query, { top: n, offset, file });
          return { hits: hits.map((h) => indexHit(index.name, h, query)), ...(hits.length === n ? { next_cursor: String(offset + n) } : {}) };
        }
        if (cursor !== undefined || file !== undefined) throw new Error(`cursor and file work on an index (lexembed index); "${index.name}" is an output of lexembed embed`);
        const hits = await searchIndex(source, index.path, readMeta(index.path), query, { top: n, rerank: rerank ?? false, candidates: 50 });
        return {
          hits: hits.map((h) => ({ score: h.score, id: h.id, ...unitFields(h), ...(h.start !== undefined ? { start: h.start, end: h.end } : {}), ...(h.text !== undefined ? { excerpt: excerptOf(h.text, query) } : {}), text: h.text ?? null })),
        };
      }, (value) => value.hits.flatMap((h) => ('uri' in h && h.uri ? [{ type: 'resource_link' as const, uri: h.uri, name: `${h.file} passage ${h.passage_id}`, mimeType: 'text/plain' }] : []))),
  );
}

/** The fetch tool and each index passage as a resource (what search's links point to). */
function registerFetch(server: McpServer, indexes: readonly McpIndex[]): void {
  const names = indexes.map((i) => i.name).join(', ');
  const find = corpusFinder(indexes);
  server.registerTool(
    'fetch',
    {
      title: 'Fetch a passage',
      description: 'A passage of an index by its passage_id (from search), with the passages of its file just before and after it, each with its page (or paragraph, or line).',
      inputSchema: {
        passage_id: z.string(),
        corpus: z.string().optional().describe(`which corpus (${names || 'none configured'}); default: the first`),
        neighbours: z.number().int().optional().describe('passages before and after it to include (default 1, at most 10)'),
      },
      outputSchema: { passage: z.record(z.string(), z.unknown()), before: z.array(z.record(z.string(), z.unknown())), after: z.array(z.record(z.string(), z.unknown())) },
    },
    ({ passage_id, corpus, neighbours }) =>
      answer(async () => {
        const index = find(corpus);
        if (index.kind !== 'index') throw new Error(`fetch reads an index (lexembed index); "${index.name}" is an output of lexembed embed`);
        const found = await index.index.passage(passage_id, neighbours ?? 1);
        if (!found) throw new Error(`no passage ${passage_id} in "${index.name}" (removed by a later lexembed index run?); search again`);
        return { passage: indexHit(index.name, found.passage, null), before: found.before.map((h) => indexHit(index.name, h, null)), after: found.after.map((h) => indexHit(index.name, h, null)) };
      }),
  );

  server.registerResource(
    'passage',
    new ResourceTemplate('lexembed://{corpus}/passages/{id}', { list: undefined }),
    { title: 'A passage of an index', description: 'The text of a passage that search linked to', mimeType: 'text/plain' },
    async (uri, { corpus, id }) => {
      const index = find(decodeURIComponent(String(corpus)));
      const found = index.kind === 'index' ? await index.index.passage(String(id), 0) : null;
      if (!found) throw new Error(`no passage ${String(id)} in "${String(corpus)}"`);
      const p = found.passage;
      const where = p.unit ? `, ${p.unit.name} ${p.unit.first}${p.unit.last !== p.unit.first ? `–${p.unit.last}` : ''}` : '';
      return { contents: [{ uri: uri.href, mimeType: 'text/plain', text: `${p.file}${where}\n\n${p.text}` }] };
    },
  );
}

function instructionsFor(indexes: readonly McpIndex[]): string {
  return (
    'lexembed: legal embeddings. embed texts (task retrieval/query for questions, retrieval/document for passages), rerank candidate passages for a query, ' +
    'count tokens, chunk long documents' +
    (indexes.length ? `, and search the corpora ${indexes.map((i) => i.name).join(', ')} (each hit names its file and page; fetch reads a passage with its neighbours).` : '.')
  );
}

type ResourceLink = { type: 'resource_link'; uri: string; name: string; mimeType: string };

/** A tool's result: the value as structured content (and its JSON as text, then any resource links), or a tool error keeping the problem. */
async function answer<T extends Record<string, unknown>>(run: () => Promise<T>, links: (value: T) => ResourceLink[] = () => []) {
  try {
    const value = await run();
    return { content: [{ type: 'text' as const, text: JSON.stringify(value) }, ...links(value)], structuredContent: value };
  } catch (error) {
    if (error instanceof APIError) {
      const problem = error.error ?? { status: error.status, title: error.title, detail: error.detail };
      // The problem rides in _meta: clients check structuredContent against the tool's output schema even on errors.
      return { isError: true, content: [{ type: 'text' as const, text: `${error.status ?? ''} ${error.title ?? 'error'}: ${error.detail ?? error.message}`.trim() }], _meta: { problem } };
    }
    return { isError: true, content: [{ type: 'text' as const, text: messageOf(error) }] };
  }
}
