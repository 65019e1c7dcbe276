// `lexembed search <index> <query>`: a hybrid search of an index made by lexembed index (a folder
// or postgres:// URL), printed as ranked passages with file, page and the matching sentences, or
// as JSON. The model is loaded here; the index checks it is the one that made its vectors.
import { excerptOf } from '../search-index/excerpt.ts';
import type { SearchHit } from '../search-index/index.ts';
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
}

export async function searchIndexCommand(location: string, query: string, config: IndexSearchConfig, out: (s: string) => void): Promise<number> {
  if (config['dense-only'] && config['sparse-only']) throw new UsageError('lexembed search: give --dense-only or --sparse-only, not both (neither: hybrid)');
  if (config.rerank || config.remote) throw new UsageError(`lexembed search: --${config.rerank ? 'rerank' : 'remote'} is not available for an index yet; search it without`);
  const mode = config['dense-only'] ? 'dense' : config['sparse-only'] ? 'sparse' : 'hybrid';
  return withIndex('lexembed search', location, config, { create: false }, async (index) => {
    const hits = await index.search(query, { top: config.top, offset: config.offset, mode, file: config.file || undefined, document: config.document || undefined });
    if (config.json) out(JSON.stringify(hits.map((h) => ({ ...h, excerpt: excerptOf(h.text, query) }))));
    else if (!hits.length) out(config.offset ? `no passages after the first ${config.offset}` : `no passages match${config.file || config.document ? ' in the files asked for' : ''}`);
    else for (const h of hits) out(describeHit(h, query));
    return 0;
  });
}

function describeHit(h: SearchHit, query: string): string {
  const unit = h.unit && (h.unit.first === h.unit.last ? `${h.unit.name} ${h.unit.first}` : `${h.unit.name}s ${h.unit.first}–${h.unit.last}`);
  const where = [h.file, unit, `passage ${h.chunk + 1}`].filter(Boolean).join(', ');
  return `${h.rank}. ${h.score.toFixed(3)}  ${where}\n   ${JSON.stringify(excerptOf(h.text, query))}`;
}
