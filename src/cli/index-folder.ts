// `lexembed index <folder…> --index <where>`: brings a search index up to date with folders of
// documents (PDF, DOCX, TXT, Markdown): new and changed files are embedded, renamed ones moved,
// removed ones taken out, and each kind counted. The index is a folder (an embedded PostgreSQL
// with pgvector: no server) or a PostgreSQL server with pgvector (postgres://…). Search it with
// `lexembed search <where> "question"`. src/search-index/ is the library behind it.
import { z } from 'zod';
import { BUNDLED_MODEL_DIR } from '../node/runtime/load-model.ts';
import { DEFAULT_CHUNK_TOKENS, type UpdateReport } from '../search-index/index.ts';
import { DEVICE_OPTIONS } from './device-options.ts';
import { withIndex } from './index-session.ts';
import { describeOptions, flag, integerIn, parseOptions, UsageError } from './options.ts';

export const INDEX_OPTIONS = {
  index: { value: z.string({ error: 'is required: a folder for the index (made if missing) or a postgres:// URL' }).min(1), env: 'LEXEMBED_INDEX', help: 'where the index is: a folder (made if missing; an embedded PostgreSQL with pgvector) or postgres://user:password@host/db (a server with pgvector)' },
  'chunk-tokens': { value: integerIn(16, 512), default: String(DEFAULT_CHUNK_TOKENS), help: 'tokens per passage for a new index (an existing index keeps its own)' },
  json: flag({ help: 'print the report as JSON: added, changed, renamed, removed, unchanged, failed, ignored' }),
  model: { value: z.string().min(1), env: 'LEXEMBED_MODEL', default: BUNDLED_MODEL_DIR, help: 'local model folder (an index answers only to the model that made it)' },
  ...DEVICE_OPTIONS,
};


export const INDEX_USAGE = `Usage: lexembed index <folder|file>… --index <folder|postgres://…> [options]

Brings a search index up to date with folders of documents (PDF, DOCX, TXT, Markdown): files
are told apart by path and content, so a run embeds only new and changed files, moves renamed
ones, takes out removed ones and says so (added 1, changed 0, renamed 0, removed 0, unchanged 25).
Each file is written whole in one transaction: an interrupted run loses nothing and the next run
finishes it. Files that cannot be read, and files of other kinds, are listed, never skipped in silence.

  lexembed index contracts/ --index contracts.index
  lexembed search contracts.index "Which law governs the supply agreement?"

The index is a folder (an embedded PostgreSQL with pgvector, one process at a time) or a
PostgreSQL server with pgvector for a team (postgres://…; docs/search-index.md).

Options:
${describeOptions(INDEX_OPTIONS)}

Environment: LEXEMBED_INDEX_CACHE_MB=N sets a folder index's page cache in MB (default: three
quarters of its data, from 128 to 1024; docs/search-index.md, "In memory").

Exit status: 0 when every document file was indexed, 1 when some could not be read (the rest
are indexed), 2 for a usage or index problem (nothing changed).
`;

export async function indexCommand(args: string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const { values: config, positionals, help } = parseOptions('lexembed index', args, INDEX_OPTIONS);
  if (help) return (out(INDEX_USAGE), 0);
  if (!positionals.length) throw new UsageError('lexembed index: give the folders or files to index, e.g. lexembed index contracts/ --index contracts.index');
  return withIndex('lexembed index', config.index, config, { create: true, chunkTokens: config['chunk-tokens'] }, async (index) => {
    const report = await index.update(positionals, (e) => {
      if (config.json) return;
      if (e.kind === 'file') err(`[${e.done}/${e.total}] ${e.file}: ${e.passages} passage${e.passages === 1 ? '' : 's'}`);
      else if (e.kind === 'graph') err(`building the dense search graph over ${e.passages.toLocaleString('en')} passages (once, after a first load: about a minute per 100,000)`);
      else err(`lexembed index: ${e.file}: ${e.reason} (left out; run again once it is fixed)`);
    });
    const stats = await index.stats();
    if (config.json) out(JSON.stringify({ ...report, files: stats.files, passages: stats.passages, index: index.where }));
    else out(describeReport(report, stats, index.where));
    return report.failed.length ? 1 : 0;
  });
}

function describeReport(r: UpdateReport, stats: { files: number; passages: number }, where: string): string {
  const lines = [`added ${r.added.length}, changed ${r.changed.length}, renamed ${r.renamed.length}, removed ${r.removed.length}, unchanged ${r.unchanged}${r.failed.length ? `, failed ${r.failed.length}` : ''}`];
  for (const m of r.renamed) lines.push(`  renamed ${m.from} → ${m.to}`);
  for (const f of r.removed) lines.push(`  removed ${f}`);
  for (const f of r.failed) lines.push(`  not indexed: ${f.file}: ${f.reason}`);
  if (r.ignored.length) lines.push(`  left out ${r.ignored.length} file(s) that are not PDF, DOCX, TXT or Markdown (convert them to one of those to index them): ${r.ignored.slice(0, 5).join(', ')}${r.ignored.length > 5 ? ', …' : ''}`);
  lines.push(`${where}: ${stats.files} file${stats.files === 1 ? '' : 's'}, ${stats.passages} passage${stats.passages === 1 ? '' : 's'}`);
  return lines.join('\n');
}
