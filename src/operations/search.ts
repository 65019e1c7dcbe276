// POST /v1/search (an extension, where the server holds an index: lexembed serve --index):
// validate, search the index with the request's lease (queue room and metering as an embedding
// of the query), answer the hits with the sentences that match.
import { problem, validateSearchRequest, type Problem, type SearchHitBody, type SearchResponse } from '../contract/index.ts';
import type { EmbedOptions, Embedder } from '../embedder/types.ts';
import { excerptOf } from '../search-index/excerpt.ts';
import type { SearchHit, SearchOptions } from '../search-index/search.ts';
import { answer, type Outcome } from './outcome.ts';

/** What the route searches: an open index (src/search-index's SearchIndex is one). */
export interface Searcher {
  /** Where it is: a folder's path, or a server's URL without its password. */
  readonly where: string;
  search(query: string, options: SearchOptions, embed?: EmbedOptions): Promise<SearchHit[]>;
}

/** The operation over `searcher` (awaited: the index opens after the model has loaded). */
export function createSearch(searcher: Searcher | Promise<Searcher>) {
  return async (body: unknown, embedder: Embedder, options: EmbedOptions = {}): Promise<Outcome<SearchResponse>> => {
    const parsed = validateSearchRequest(body, embedder.modelName);
    if (!parsed.ok) return parsed;
    const request = parsed.value;
    const index = await searcher;
    const names = indexNames(index.where);
    if (request.index !== undefined && !names.includes(request.index.replace(/\/+$/, ''))) {
      return { ok: false, problem: problem('notFound', `this server searches the index ${index.where} (by name "${names[1]}"), not "${request.index}": leave index out, or send the search to the server that holds that index`) };
    }
    let hits: SearchHit[];
    try {
      hits = await index.search(request.query, { top: request.top, offset: request.offset, mode: request.mode, file: request.file || undefined, document: request.document || undefined }, options);
    } catch (error) {
      const refusal = indexRefusal(error);
      if (refusal) return { ok: false, problem: refusal };
      throw error;
    }
    const [counted] = await embedder.tokenize([request.query], { task: 'retrieval/query', offsets: false });
    const tokens = counted?.input_tokens ?? null;
    return answer(
      {
        index: index.where,
        mode: request.mode,
        hits: hits.map((h) => hitBody(h, request.query)),
        next_offset: hits.length === request.top ? request.offset + request.top : null,
        usage: { input_tokens: tokens },
      },
      tokens,
    );
  };
}

/** What a request may call the index: its location, or its last path part with and without ".index". */
function indexNames(where: string): string[] {
  const last = where.replace(/\/+$/, '').split(/[\\/]/).pop() ?? where;
  return [where.replace(/\/+$/, ''), last, last.replace(/\.index$/, '')];
}

/** The index's own refusals (IndexError: an empty index, a query it cannot take) as a 400 with its words; the model's as they were. */
function indexRefusal(error: unknown): Problem | null {
  if (!(error instanceof Error) || error.name !== 'IndexError') return null;
  return (error as Error & { problem?: Problem }).problem ?? problem('validation', error.message);
}

function hitBody(h: SearchHit, query: string): SearchHitBody {
  return {
    rank: h.rank,
    score: h.score,
    dense: h.dense,
    sparse: h.sparse,
    passage_id: h.passageId,
    file: h.file,
    chunk: h.chunk,
    start: h.start,
    end: h.end,
    unit: (h.unit?.name as SearchHitBody['unit']) ?? null,
    first: h.unit?.first ?? null,
    last: h.unit?.last ?? null,
    text: h.text,
    excerpt: excerptOf(h.text, query),
  };
}
