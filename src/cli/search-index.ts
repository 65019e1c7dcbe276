// `lexembed search <index> <query>`: a hybrid search of an index made by lexembed index (a folder
// or postgres:// URL), printed as ranked passages with file, page and the matching sentences, or
// as JSON. The model is loaded here; the index checks it is the one that made its vectors.
import { APIConnectionError, APIConnectionTimeoutError, APIError, Lexembed, type SearchResponse } from '../client/index.ts';
import { excerptOf } from '../search-index/excerpt.ts';
import type { SearchHit, SearchMode } from '../search-index/index.ts';
import { UsageError } from './options.ts';
import type { DeviceConfig } from './device-options.ts';
import { withIndex } from './index-session.ts';

/** The options of `lexembed search` an index reads (SEARCH_OPTIONS' values). */
export interface IndexSearchConfig extends DeviceConfig {
  readonly model: string;
  readonly top: number;
  readonly offset: number;
  readonly 'dense-only': boolean;
  readonly 'sparse-only': boolean;
  readonly file: string;
  readonly document: string;
  readonly json: boolean;
  readonly rerank: boolean;
  readonly remote: string;
  readonly wait: number;
}

export async function searchIndexCommand(location: string, query: string, config: IndexSearchConfig, out: (s: string) => void, err: (s: string) => void): Promise<number> {
  if (config['dense-only'] && config['sparse-only']) throw new UsageError('lexembed search: give --dense-only or --sparse-only, not both (neither: hybrid)');
  if (config.rerank) throw new UsageError('lexembed search: --rerank is not available for an index yet; search it without');
  const mode: SearchMode = config['dense-only'] ? 'dense' : config['sparse-only'] ? 'sparse' : 'hybrid';
  const options = { top: config.top, offset: config.offset, mode, file: config.file || undefined, document: config.document || undefined };
  const hits = config.remote
    ? await searchRemote(location, query, options, config, err)
    : await withIndex('lexembed search', location, config, { create: false }, (index) => index.search(query, options));
  if (config.json) out(JSON.stringify(hits.map((h) => ({ ...h, excerpt: excerptOf(h.text, query) }))));
  else if (!hits.length) out(config.offset ? `no passages after the first ${config.offset}` : config.file || config.document ? `no passages match in the files asked for (${config.document ? `--document ${config.document}` : `--file ${config.file}`}: no file of the index by that path? files are named by their path under the folder indexed, as the hits of a search without it show)` : 'no passages match');
  else for (const h of hits) out(describeHit(h, query));
  return 0;
}

/**
 * The same search asked of a lexembed serve --index (POST /v1/search): no model is loaded here.
 * A server that is starting or still loading its model is waited for, up to --wait seconds.
 */
async function searchRemote(location: string, query: string, options: { top: number; offset: number; mode: SearchMode; file?: string; document?: string }, config: IndexSearchConfig, err: (s: string) => void): Promise<SearchHit[]> {
  const client = new Lexembed({ baseURL: config.remote, apiKey: process.env.LEXEMBED_API_KEY?.trim() || null, maxRetries: 0 });
  // The server knows its index by location or by name: the last part of the path (or the database).
  const index = location.replace(/[?#].*$/, '').replace(/\/+$/, '').split('/').pop() || location;
  const deadline = Date.now() + config.wait * 1000;
  for (let told = false; ; ) {
    try {
      return hitsOf(await client.search.create({ query, index, ...options }));
    } catch (error) {
      const starting = startingState(error);
      if (!starting || Date.now() >= deadline) throw remoteFailure(error, config.remote);
      if (!told) err(`lexembed search: the server at ${config.remote} ${starting}; waiting for it, up to ${config.wait} s (--wait)`);
      told = true;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** What a server still starting looks like: nothing listening yet, or 503 while the model (or the index) loads. */
function startingState(error: unknown): string | null {
  if (error instanceof APIConnectionError && !(error instanceof APIConnectionTimeoutError)) return 'does not answer yet';
  if (error instanceof APIError && error.status === 503) return 'is not ready (loading its model?)';
  return null;
}

function remoteFailure(error: unknown, remote: string): Error {
  if (!(error instanceof APIError)) return error as Error;
  if (error.status === undefined) return new UsageError(`lexembed search: ${error.message}; is lexembed serve --index running there, and is --remote (LEXEMBED_BASE_URL) right?`);
  if (error.status === 401) return new UsageError(`lexembed search: ${error.message} (set LEXEMBED_API_KEY to a key of the server at ${remote})`);
  if (error.status === 404 && /no route at \/v1\/search/.test(error.message)) return new UsageError(`lexembed search: the server at ${remote} holds no index (start it with lexembed serve --index <index>): ${error.message}`);
  return new UsageError(`lexembed search: the server at ${remote} answered ${error.message}`);
}

/** The server's hits in the shape the local search gives. */
function hitsOf(response: SearchResponse): SearchHit[] {
  return response.hits.map((h) => ({
    rank: h.rank,
    score: h.score,
    dense: h.dense,
    sparse: h.sparse,
    passageId: h.passage_id,
    file: h.file,
    chunk: h.chunk,
    start: h.start,
    end: h.end,
    unit: h.unit && h.first !== null ? { name: h.unit, first: h.first, last: h.last ?? h.first } : null,
    text: h.text,
  }));
}

function describeHit(h: SearchHit, query: string): string {
  const unit = h.unit && (h.unit.first === h.unit.last ? `${h.unit.name} ${h.unit.first}` : `${h.unit.name}s ${h.unit.first}–${h.unit.last}`);
  const where = [h.file, unit, `passage ${h.chunk + 1}`].filter(Boolean).join(', ');
  return `${h.rank}. ${h.score.toFixed(3)}  ${where}\n   ${JSON.stringify(excerptOf(h.text, query))}`;
}
