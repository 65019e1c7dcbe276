// lexembed's tools for AI assistants, as a Model Context Protocol server (the official
// @modelcontextprotocol/sdk): embed, rerank, tokenize and chunk answer what POST /v1/embeddings,
// /v1/rerankings and /v1/tokenize answer (they call the same operations, in this process or on a
// lexembed server), and search looks up the outputs of `lexembed embed` it was started with.
// Arguments are listed to clients with the API's own types and bounds, but checked here (not by the
// SDK, whose -32602 says nothing an assistant can act on), so that a bad call gets the problem the
// API gives; every failure is an MCP tool error (isError) whose text says status, title and
// detail, with the problem document itself in the result's _meta.problem (the SDK's client checks
// structuredContent against the tool's output schema even on errors, so the problem cannot go there).
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { APIError, makeAPIError } from '../client/errors.ts';
import { createTokenizeRequestSchema, EmbeddingRequestSchema, formatIssues, problem, RerankRequestSchema, type ProblemCode } from '../contract/index.ts';
import { integerAtLeast } from '../contract/rules.ts';
import { problemError } from '../local/in-process.ts';
import type { ModelSource } from '../cli/model-source.ts';
import { readMeta, searchIndex, unitFields } from '../cli/search.ts';
import { LEXEMBED_VERSION } from '../version.ts';
import { messageOf } from '../util/message-of.ts';
import { excerptOf } from '../search-index/excerpt.ts';
import { IndexError, type SearchHit, type SearchIndex } from '../search-index/index.ts';

/**
 * What the search tool may read, by the name the tool takes: an output of `lexembed embed`, an open
 * index, or one given with --index that could not be opened (each call on it says why and what to do).
 */
export type McpIndex =
  | { readonly name: string; readonly kind: 'output'; readonly path: string }
  | { readonly name: string; readonly kind: 'index'; readonly index: SearchIndex }
  | { readonly name: string; readonly kind: 'unavailable'; readonly reason: string };

/** The base of a problem's type, as the in-process API's (no server here to name a docs URL). */
const DOCS_URL = '/docs';
const EMBED = EmbeddingRequestSchema.shape;
const RERANK = RerankRequestSchema.shape;
const TOKENIZE = createTokenizeRequestSchema('any').shape;
const task = EMBED.task.describe('retrieval/query for questions, retrieval/document for passages; null or absent: none');
// Each tool's arguments with the API's own field schemas, so a mistake gets the API's words.
const EMBED_ARGUMENTS = { texts: EMBED.texts, task, dimensions: EMBED.dimensions.describe("components to keep (a Matryoshka prefix), at most the model's maximum; absent: the model default") };
const RERANK_ARGUMENTS = { query: RERANK.query, texts: RERANK.texts, top_n: RERANK.top_n.describe('return only the n best') };
const TOKENIZE_ARGUMENTS = { texts: TOKENIZE.texts, task };
const CHUNK_ARGUMENTS = {
  text: z.string({ error: 'must be a string' }),
  chunk_tokens: integerAtLeast(1, 'must be an integer of at least 1 (tokens)').optional().describe('default: what one document embedding reads'),
  overlap_tokens: integerAtLeast(0, 'must be an integer of at least 0 (tokens)').optional().describe('tokens repeated from the end of the chunk before (default 0)'),
};

/** The MCP server over `source` (the model) and `indexes` (what search may read). */
export function createMcpServer(source: ModelSource, indexes: readonly McpIndex[]): McpServer {
  const server = new McpServer({ name: 'lexembed', version: LEXEMBED_VERSION }, { instructions: instructionsFor(indexes) });

  server.registerTool(
    'embed',
    {
      title: 'Embed texts',
      description: `Embeddings of legal texts by ${source.modelName} (POST /v1/embeddings): one unit vector per text, in order. Use task retrieval/query for questions and retrieval/document for the passages they are compared with.`,
      inputSchema: listed(EMBED_ARGUMENTS),
      outputSchema: { model: z.string(), embeddings: z.array(z.array(z.number())), input_tokens: z.number().int() },
    },
    (args) =>
      answer(source, async () => {
        const { texts, task, dimensions } = parseArguments(EMBED_ARGUMENTS, args);
        const r = await source.embeddings.create({ model: source.modelName, texts, task: task ?? null, dimensions: dimensions ?? null });
        return { model: source.modelName, embeddings: r.embeddings.map((e) => e.embedding), input_tokens: r.usage.input_tokens };
      }),
  );

  server.registerTool(
    'rerank',
    {
      title: 'Rerank texts',
      description: `Scores texts by relevance to a query with ${source.rerankModelName} (POST /v1/rerankings): calibrated scores from 0 to 1, most relevant first.`,
      inputSchema: listed(RERANK_ARGUMENTS),
      outputSchema: { results: z.array(z.object({ index: z.number().int(), score: z.number() })), input_tokens: z.number().int() },
    },
    (args) =>
      answer(source, async () => {
        const { query, texts, top_n } = parseArguments(RERANK_ARGUMENTS, args);
        const r = await source.rerankings.create({ model: source.rerankModelName, query, texts, top_n: top_n ?? null });
        return { results: r.results, input_tokens: r.usage.input_tokens };
      }),
  );

  server.registerTool(
    'tokenize',
    {
      title: 'Count tokens',
      description: 'Token counts of texts as the model reads them (POST /v1/tokenize), to check inputs against the model maximum before embedding.',
      inputSchema: listed(TOKENIZE_ARGUMENTS),
      outputSchema: { input_tokens: z.array(z.number().int()).describe('per text, what embed would feed the model before truncation'), max_input_tokens: z.number().int() },
    },
    (args) =>
      answer(source, async () => {
        const { texts, task } = parseArguments(TOKENIZE_ARGUMENTS, args);
        const r = await source.tokenize.create({ model: source.modelName, texts, task: task ?? null });
        return { input_tokens: r.results.map((x) => x.input_tokens), max_input_tokens: r.max_input_tokens };
      }),
  );

  server.registerTool(
    'chunk',
    {
      title: 'Chunk a document',
      description: "Cuts a long text into chunks of at most chunk_tokens of the model's tokens (between words, preferring line and sentence ends), each with its character offsets: text.slice(start, end) is the chunk.",
      inputSchema: listed(CHUNK_ARGUMENTS),
      outputSchema: { chunks: z.array(z.object({ text: z.string(), start: z.number().int(), end: z.number().int() })) },
    },
    (args) =>
      answer(source, async () => {
        const { text, chunk_tokens, overlap_tokens } = parseArguments(CHUNK_ARGUMENTS, args);
        if (!source.chunkText) throw invalid(`chunk cuts texts with the model's tokenizer, which runs where lexembed mcp loads the model itself; this server embeds through ${source.where} (start lexembed mcp without --remote to chunk)`);
        const chunks = await source.chunkText(text, { ...(chunk_tokens !== undefined ? { size: chunk_tokens } : {}), ...(overlap_tokens !== undefined ? { overlap: overlap_tokens } : {}) });
        return { chunks: chunks.map((c) => ({ text: c.text, start: c.start, end: c.end })) };
      }),
  );

  registerSearch(server, source, indexes);
  registerFetch(server, source, indexes);
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
  return (corpus: string | undefined): Exclude<McpIndex, { kind: 'unavailable' }> => {
    if (!indexes.length) {
      throw invalid('this server has no corpus to search: it was started without --index. Add "--index", "<an index made by lexembed index>" to its args in the MCP client\'s configuration and restart it');
    }
    const index = corpus === undefined ? indexes[0]! : indexes.find((i) => i.name === corpus);
    if (!index) throw invalid(`no corpus "${corpus}"; this server has ${indexes.map((i) => `"${i.name}"`).join(', ')}`);
    if (index.kind === 'unavailable') throw problemError(problem('unavailable', `the corpus "${index.name}" could not be opened when this server started: ${index.reason}`), DOCS_URL);
    return index;
  };
}

/** The search tool, over the corpora the server was given. */
function registerSearch(server: McpServer, source: ModelSource, indexes: readonly McpIndex[]): void {
  const names = indexes.map((i) => i.name).join(', ');
  const find = corpusFinder(indexes);
  const searchArgs = searchArguments(names);
  server.registerTool(
    'search',
    {
      title: 'Search a legal corpus',
      description: indexes.length
        ? `The passages of a legal corpus that best answer a query (hybrid: dense and sparse vectors), each with its file and page (or paragraph, or line), score, the sentences that match and a resource link to the passage. Corpora: ${names}.`
        : 'Search a legal corpus (none was given to this server: start it with --index <index made by lexembed index>).',
      inputSchema: listed(searchArgs),
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
    (call) =>
      answer(source, async () => {
        const { query, corpus, top, cursor, file, rerank } = parseArguments(searchArgs, call);
        const index = find(corpus);
        const n = top ?? 5;
        if (index.kind === 'index') {
          const offset = cursor === undefined ? 0 : Number.parseInt(cursor, 10);
          if (!/^\d+$/.test(cursor ?? '0') || offset > 10_000) throw invalid(`cursor must be a next_cursor this tool answered (got "${cursor}")`);
          const hits = await index.index.search(query, { top: n, offset, file });
          return { hits: hits.map((h) => indexHit(index.name, h, query)), ...(hits.length === n ? { next_cursor: String(offset + n) } : {}) };
        }
        if (cursor !== undefined || file !== undefined) throw invalid(`cursor and file work on an index (lexembed index); "${index.name}" is an output of lexembed embed`);
        const hits = await searchIndex(source, index.path, readMeta(index.path), query, { top: n, rerank: rerank ?? false, candidates: 50 });
        return {
          hits: hits.map((h) => ({ score: h.score, id: h.id, ...unitFields(h), ...(h.start !== undefined ? { start: h.start, end: h.end } : {}), ...(h.text !== undefined ? { excerpt: excerptOf(h.text, query) } : {}), text: h.text ?? null })),
        };
      }, (value) => value.hits.flatMap((h) => ('uri' in h && h.uri ? [{ type: 'resource_link' as const, uri: h.uri, name: `${h.file} passage ${h.passage_id}`, mimeType: 'text/plain' }] : []))),
  );
}

/** The fetch tool and each index passage as a resource (what search's links point to). */
function registerFetch(server: McpServer, source: ModelSource, indexes: readonly McpIndex[]): void {
  const names = indexes.map((i) => i.name).join(', ');
  const find = corpusFinder(indexes);
  const fetchArgs = fetchArguments(names);
  server.registerTool(
    'fetch',
    {
      title: 'Fetch a passage',
      description: 'A passage of an index by its passage_id (from search), with the passages of its file just before and after it, each with its page (or paragraph, or line).',
      inputSchema: listed(fetchArgs),
      outputSchema: { passage: z.record(z.string(), z.unknown()), before: z.array(z.record(z.string(), z.unknown())), after: z.array(z.record(z.string(), z.unknown())) },
    },
    (call) =>
      answer(source, async () => {
        const { passage_id, corpus, neighbours } = parseArguments(fetchArgs, call);
        const index = find(corpus);
        if (index.kind !== 'index') throw invalid(`fetch reads an index (lexembed index); "${index.name}" is an output of lexembed embed`);
        const found = await index.index.passage(passage_id, neighbours ?? 1);
        if (!found) throw invalid(`no passage ${passage_id} in "${index.name}" (removed by a later lexembed index run?); search again`);
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

/** An integer from `min` to `max` (listed to clients as JSON Schema's integer), one message for every way to miss it. */
function listedInteger(min: number, max: number) {
  const what = `must be an integer from ${min} to ${max}`;
  return z.int({ error: what }).min(min, { error: what }).max(max, { error: what });
}

/** The search tool's arguments (`names`: the corpora, for the description). */
function searchArguments(names: string) {
  return {
    query: z.string({ error: 'must be a string' }).regex(/\S/, { error: 'must have a non-whitespace character' }),
    corpus: z.string({ error: 'must be a string' }).optional().describe(`which corpus (${names || 'none configured'}); default: the first`),
    top: listedInteger(1, 100).optional().describe('how many passages (default 5, at most 100)'),
    cursor: z.string({ error: 'must be a string' }).optional().describe("an index: the previous answer's next_cursor, for the next page"),
    file: z.string({ error: 'must be a string' }).optional().describe("an index: only files whose path matches this glob, e.g. '*acme*.pdf'"),
    rerank: z.boolean({ error: 'must be true or false' }).optional().describe('an output of lexembed embed: reorder the best 50 by cosine with the reranker (default false)'),
  };
}

/** The fetch tool's arguments. */
function fetchArguments(names: string) {
  return {
    passage_id: z.string({ error: 'must be a string (a passage_id from search)' }),
    corpus: z.string({ error: 'must be a string' }).optional().describe(`which corpus (${names || 'none configured'}); default: the first`),
    neighbours: listedInteger(0, 10).optional().describe('passages before and after it to include (default 1, at most 10)'),
  };
}

/**
 * A tool's input schema as clients see it: each argument's JSON Schema (types and bounds), the
 * required ones listed, but every value let through to parseArguments, which answers a mistake
 * with the API's 400 problem instead of the SDK's -32602 "Input validation error".
 */
function listed(shape: Record<string, z.ZodType>) {
  const fields = Object.fromEntries(
    Object.entries(shape).map(([name, schema]) => {
      const { $schema: _, ...json } = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
      return [name, z.any().optional().meta(json)];
    }),
  );
  const required = Object.entries(shape).filter(([, schema]) => !schema.safeParse(undefined).success).map(([name]) => name);
  return z.object(fields).meta({ required });
}

/** The arguments checked against `shape`, or the 400 problem that says which is wrong, in the API's words. */
function parseArguments<S extends Record<string, z.ZodType>>(shape: S, args: unknown): z.output<z.ZodObject<S>> {
  const parsed = z.strictObject(shape).safeParse(args ?? {});
  if (!parsed.success) throw invalid(formatIssues(parsed.error.issues, { fields: { '': Object.keys(shape) }, body: 'the tool call' }));
  return parsed.data;
}

/** A 400 Validation error problem, thrown as the API client's error (answer() turns it into the tool error). */
function invalid(detail: string) {
  return problemError(problem('validation', detail), DOCS_URL);
}

/** A tool's result: the value as structured content (and its JSON as text, then any resource links), or a tool error keeping the problem. */
async function answer<T extends Record<string, unknown>>(source: ModelSource, run: () => Promise<T>, links: (value: T) => ResourceLink[] = () => []) {
  try {
    const value = await run();
    return { content: [{ type: 'text' as const, text: JSON.stringify(value) }, ...links(value)], structuredContent: value };
  } catch (thrown) {
    // An index's refusal (a query too long, a bad passage id) is the caller's mistake; anything else unforeseen is a 500.
    const code: ProblemCode = thrown instanceof IndexError ? 'validation' : 'internal';
    const error = thrown instanceof APIError ? explainKey(thrown, source) : problemError(problem(code, messageOf(thrown)), DOCS_URL);
    const problemDocument = { ...(error.error as Record<string, unknown> | undefined), status: error.status, title: error.title, detail: error.detail };
    // The problem rides in _meta: clients check structuredContent against the tool's output schema even on errors.
    return { isError: true, content: [{ type: 'text' as const, text: `${error.status ?? ''} ${error.title ?? 'error'}: ${error.detail ?? error.message}`.trim() }], _meta: { problem: problemDocument } };
  }
}

/**
 * A remote server's 401 says what an HTTP client should send; lexembed mcp sends the key in
 * LEXEMBED_API_KEY, so say that, and where an assistant's configuration sets it.
 */
function explainKey(error: APIError, source: ModelSource): APIError {
  if (error.status !== 401 || source.embedder) return error;
  const key = process.env.LEXEMBED_API_KEY?.trim();
  const what = key ? `${source.where} refused the key in LEXEMBED_API_KEY (${error.detail ?? error.title})` : `${source.where} needs an API key, and LEXEMBED_API_KEY is not set in lexembed mcp's environment`;
  const detail = `${what}; set LEXEMBED_API_KEY to a key of that server in the "env" of lexembed's entry in the MCP client's configuration (for lexembed mcp --transport http: in its environment), then restart it`;
  const body = { ...(error.error as Record<string, unknown> | undefined), detail };
  return makeAPIError(error.status, body, error.headers ?? new Headers());
}
