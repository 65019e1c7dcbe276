// `lexembed search OUT "query"`: the best passages of an output of `lexembed embed` for a query,
// embedded by the same model (checked against the output's OUT.meta.json: vectors of other
// weights do not compare), scored by cosine over every row and, with --rerank, the best
// candidates reordered by the model's reranker. Each hit names its file and page (documents) or
// its id, with the passage read back from the input recorded in the meta file.
import { createReadStream, existsSync, readFileSync, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import type { DocumentUnit } from '../documents/extract.ts';
import { DENSE_PARTS, describeVectorParts, vectorPartsThatDiffer } from '../embedder/fingerprint.ts';
import { DocumentReader, listDocuments } from '../node/documents.ts';
import { readCorpus, type CorpusFormat } from '../node/corpus.ts';
import { BUNDLED_MODEL_DIR } from '../node/runtime/load-model.ts';
import { messageOf } from '../util/message-of.ts';
import { excerptOf } from '../search-index/excerpt.ts';
import { isPostgresUrl } from '../search-index/sql.ts';
import { DEVICE_OPTIONS } from './device-options.ts';
import { metaPathOf, type EmbedSource } from './embed.ts';
import { openModelSource, type ModelIdentity, type ModelSource } from './model-source.ts';
import { describeOptions, flag, integerIn, parseOptions, remoteUrl, UsageError } from './options.ts';

export const SEARCH_OPTIONS = {
  top: { value: integerIn(1, 1000), default: '10', help: 'how many passages to show' },
  offset: { value: integerIn(0, 10000), default: '0', help: 'an index: passages to skip first (the next page: --offset 10)' },
  'dense-only': flag({ help: 'an index: rank by the dense vectors alone (default: hybrid, dense + sparse fused)' }),
  'sparse-only': flag({ help: 'an index: rank by the sparse vectors alone, with the corpus\'s idf' }),
  file: { value: z.string(), default: '', help: "an index: only files whose path matches this glob, e.g. 'leases/**' or '*acme*.pdf'" },
  document: { value: z.string(), default: '', help: 'an index: only this file (its path as lexembed index lists it)' },
  rerank: flag({ help: "reorder the best --candidates by cosine with the model's reranker (POST /v1/rerankings' scores)" }),
  candidates: { value: integerIn(1, 1000), default: '50', help: 'with --rerank: how many of the best by cosine the reranker reads' },
  json: flag({ help: 'print the hits as one JSON array: of an index, each with rank, score, dense, sparse, passageId, file, chunk, start, end, unit ({name, first, last}), text, excerpt; of an embed output, rank, score, id, chunk, start, end, page/paragraph/line, text, excerpt' }),
  model: { value: z.string().min(1), env: 'LEXEMBED_MODEL', default: BUNDLED_MODEL_DIR, help: 'local model folder: the one the output was embedded with' },
  ...DEVICE_OPTIONS,
  remote: {
    value: remoteUrl,
    env: 'LEXEMBED_BASE_URL',
    default: '',
    help: 'a lexembed server, e.g. http://127.0.0.1:8080/v1 (key from LEXEMBED_API_KEY): an index is searched by the server that holds it (lexembed serve --index), an output of lexembed embed has its query embedded there',
  },
  wait: { value: integerIn(0, 3600), default: '60', help: 'with --remote and an index: seconds to wait for a server that is starting or still loading its model (0: fail at once)' },
  'model-name': { value: z.string().min(1), default: 'legal-2-embedder', help: 'model name sent to a remote server' },
};

export const SEARCH_USAGE = `Usage: lexembed search <index> <query> [options]
       lexembed search <out.jsonl> <query> [options]

Finds the passages that answer <query>, each with its file and page (or paragraph, or line)
and the sentences of the passage that match it.

An index (a folder or postgres:// URL made by lexembed index) is searched hybrid by default:
the dense vectors' candidates and the sparse vectors scored with the corpus's own idf, fused by
score (--dense-only or --sparse-only for one of them), with --file/--document filters and
--offset for the next page.

  lexembed index contracts/ --index contracts.index      # PDF, DOCX, TXT, Markdown
  lexembed search contracts.index "Who may terminate the lease early?"

A server started with the index (lexembed serve --index contracts.index) answers the same
search warm, without loading the model here (it waits for a server still loading, --wait):

  lexembed search contracts.index "Who may terminate the lease early?" --remote http://127.0.0.1:8080/v1

An output of lexembed embed (<out.jsonl>, with <out.jsonl>.meta.json) is read whole and every
row scored by cosine; the passages are read back from the input it was made from.

Options:
${describeOptions(SEARCH_OPTIONS)}

Environment: LEXEMBED_INDEX_CACHE_MB=N sets a folder index's page cache in MB (default: three
quarters of its data, from 128 to 1024; docs/search-index.md, "In memory").
`;

interface IndexMeta {
  readonly settings: { model: ModelIdentity; task: string | null; dimensions: number | null; chunk_tokens: number | null };
  readonly source?: EmbedSource;
}

/** A scored row of the output. */
export interface Hit {
  readonly id: string | number;
  readonly chunk?: number;
  readonly start?: number;
  readonly end?: number;
  /** The page, paragraph or line the passage starts on, and the one it ends on. */
  readonly unit?: { readonly name: DocumentUnit; readonly number: number; readonly last: number };
  score: number;
  cosine: number;
  text?: string;
}

export async function searchCommand(args: string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const { values: config, positionals, help } = parseOptions('lexembed search', args, SEARCH_OPTIONS);
  if (help) return (out(SEARCH_USAGE), 0);
  const [index, ...words] = positionals;
  const query = words.join(' ').trim();
  if (!index || !query) throw new UsageError('lexembed search: give an index (or an output of lexembed embed) and a query, e.g. lexembed search contracts.index "termination for convenience"');
  if (isIndexLocation(index, config.remote)) return (await import('./search-index.ts')).searchIndexCommand(index, query, config, out, err);
  const indexOnly = (['offset', 'dense-only', 'sparse-only', 'file', 'document'] as const).filter((k) => config[k] !== SEARCH_DEFAULTS[k]);
  if (indexOnly.length) throw new UsageError(`lexembed search: --${indexOnly[0]} works on an index (lexembed index <folder> --index <where>), not on ${index}, an output of lexembed embed`);
  const meta = readMeta(index);
  const source = await openModelSource(config);
  try {
    const hits = await searchIndex(source, index, meta, query, { top: config.top, rerank: config.rerank, candidates: config.candidates });
    if (config.json) out(JSON.stringify(hits.map((h, i) => ({ rank: i + 1, ...hitRecord(h, query) }))));
    else if (!hits.length) out(`no rows in ${index}`);
    else for (const [i, h] of hits.entries()) out(describeHit(i + 1, h, config.rerank, query));
    if (hits.some((h) => h.text === undefined)) err(`lexembed search: some passages could not be read back from ${meta.source?.inputs.join(', ') ?? 'the input'} (moved or changed since lexembed embed?); ids and offsets are shown`);
    return 0;
  } finally {
    await source.dispose();
  }
}

const SEARCH_DEFAULTS = { offset: 0, 'dense-only': false, 'sparse-only': false, file: '', document: '' } as const;

/**
 * An index made by lexembed index: a postgres:// URL, or a folder (not a JSONL output file); with
 * --remote, also the name of one the server holds that is not here.
 */
function isIndexLocation(location: string, remote: string): boolean {
  if (isPostgresUrl(location)) return true;
  if (remote && !existsSync(location) && !/\.jsonl$/i.test(location)) return true;
  return existsSync(location) && statSync(location).isDirectory();
}

/** OUT.meta.json, or a UsageError saying why the output cannot be searched. */
export function readMeta(index: string): IndexMeta {
  if (!existsSync(index) && /\.jsonl$/i.test(index)) throw new UsageError(`lexembed search: no such file: ${index} (the --output of lexembed embed)`);
  if (!existsSync(index)) throw new UsageError(`lexembed search: no index (or output of lexembed embed) at ${index}: make an index with npx lexembed index <folder of documents> --index ${index}, or give the folder or postgres:// URL of one`);
  const path = metaPathOf(index);
  if (!existsSync(path)) throw new UsageError(`lexembed search: ${index} has no ${path} saying which model made it; search outputs written by lexembed embed`);
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as IndexMeta;
  } catch (error) {
    throw new UsageError(`lexembed search: ${path} is not readable JSON (${messageOf(error)})`);
  }
}

/**
 * The `top` best rows of `index` for `query` (reranked among `candidates` with `rerank`), each
 * with its passage where the input can be read back. Refuses a model other than the output's.
 */
export async function searchIndex(source: ModelSource, index: string, meta: IndexMeta, query: string, options: { top: number; rerank: boolean; candidates: number }): Promise<Hit[]> {
  const made = meta.settings.model;
  const now = await source.identity();
  // Document vectors recorded with their vectors fingerprint are compared by its dense parts (a new
  // query side keeps the output); else by the whole fingerprint, where both are known.
  if (made.vectors && now.vectors) {
    const differ = vectorPartsThatDiffer(made.vectors, now.vectors, DENSE_PARTS);
    if (differ.length) {
      throw new UsageError(
        `lexembed search: ${index} was embedded by model ${made.id ?? made.name} (fingerprint ${made.fingerprint}), and the query would be embedded by ${now.id ?? now.name} (fingerprint ${now.fingerprint}): their vectors do not compare, because ${describeVectorParts(differ)} ${differ.length > 1 ? 'differ' : 'differs'}. Search with the model that embedded it (--model <its folder>, the same --dtype; or --remote <its server>), or embed the input again`,
      );
    }
  } else if (made.fingerprint && now.fingerprint && made.fingerprint !== now.fingerprint) {
    throw new UsageError(
      `lexembed search: ${index} was embedded by model ${made.id ?? made.name} (fingerprint ${made.fingerprint}), and the query would be embedded by ${now.id ?? now.name} (fingerprint ${now.fingerprint}): their vectors do not compare. Search with the model that embedded it (--model <its folder>, the same --dtype; or --remote <its server>), or embed the input again`,
    );
  }
  // Documents embedded as retrieval/document are asked with retrieval/query; otherwise as they were embedded.
  const task = meta.settings.task === 'retrieval/document' ? 'retrieval/query' : (meta.settings.task as 'retrieval/query' | null);
  const response = await source.embeddings.create({ model: source.modelName, texts: [query], task, dimensions: meta.settings.dimensions });
  const q = response.embeddings[0]!.embedding;
  const keep = options.rerank ? Math.max(options.top, options.candidates) : options.top;
  const best = await topRows(index, q, keep);
  await readPassages(best, meta.source);
  if (!options.rerank || !best.length) return best.slice(0, options.top);
  const readable = best.filter((h) => h.text !== undefined && /\S/.test(h.text));
  if (!readable.length) throw new Error(`--rerank reads the passages, and none could be read back from ${meta.source?.inputs.join(', ') ?? 'the input'}`);
  const ranked = await source.rerankings.create({ model: source.rerankModelName, query, texts: readable.map((h) => h.text!) });
  const reranked = ranked.results.map((r) => Object.assign(readable[r.index]!, { score: r.score }));
  return reranked.slice(0, options.top);
}

/** The `k` rows of the output closest to `q` by cosine (the vectors are unit length), best first. */
async function topRows(index: string, q: readonly number[], k: number): Promise<Hit[]> {
  const best: Hit[] = [];
  const lines = createInterface({ input: createReadStream(index, { encoding: 'utf8' }), crlfDelay: Infinity });
  let lineNo = 0;
  for await (const line of lines) {
    lineNo++;
    if (!line.trim()) continue;
    let row: { id: string | number; chunk?: number; start?: number; end?: number; embedding: number[] } & Partial<Record<string, number>>;
    try {
      row = JSON.parse(line);
    } catch {
      throw new Error(`${index}:${lineNo}: not a JSON line (a torn last line? run lexembed embed again to finish the output)`);
    }
    if (!Array.isArray(row.embedding) || row.embedding.length !== q.length) {
      throw new Error(`${index}:${lineNo}: the embedding has ${Array.isArray(row.embedding) ? row.embedding.length : 'no'} components where the query has ${q.length}`);
    }
    let dot = 0;
    for (let i = 0; i < q.length; i++) dot += q[i]! * row.embedding[i]!;
    if (best.length === k && dot <= best[k - 1]!.score) continue;
    const name = (['page', 'paragraph', 'line'] as const).find((u) => typeof row[u] === 'number');
    const unit = name ? { name, number: row[name]!, last: row[`${name}_end`] ?? row[name]! } : undefined;
    const hit: Hit = { id: row.id, chunk: row.chunk, start: row.start, end: row.end, score: dot, cosine: dot, ...(unit ? { unit } : {}) };
    let at = best.length;
    while (at > 0 && best[at - 1]!.score < dot) at--;
    best.splice(at, 0, hit);
    if (best.length > k) best.pop();
  }
  return best;
}

/** Fills each hit's text from the input the output was made from (documents re-read, corpus rows matched by id). */
async function readPassages(hits: Hit[], from: EmbedSource | undefined): Promise<void> {
  if (!from || !hits.length || !from.inputs.every((p) => existsSync(p))) return;
  const wanted = new Map<string, Hit[]>();
  for (const h of hits) wanted.set(String(h.id), [...(wanted.get(String(h.id)) ?? []), h]);
  const fill = (id: string, text: string) => {
    for (const h of wanted.get(id) ?? []) h.text = h.start !== undefined && h.end !== undefined ? text.slice(h.start, h.end) : text;
  };
  if (from.format === 'documents') {
    const { files } = listDocuments(from.inputs);
    const reader = new DocumentReader(files.filter((f) => wanted.has(f.id)));
    for await (const row of reader.rows()) if ('id' in row) fill(row.id, row.text);
    return;
  }
  for await (const row of readCorpus(from.inputs[0]!, { format: from.format as CorpusFormat, idField: from.id_field, textField: from.text_field })) {
    if ('id' in row && wanted.has(row.id)) fill(row.id, row.text);
  }
}

/** { page: 2 } or { page: 2, page_end: 3 } (likewise paragraph, line). */
export function unitFields(h: { readonly unit?: { readonly name: string; readonly number: number; readonly last: number } | null }): Record<string, number> {
  if (!h.unit) return {};
  return h.unit.last === h.unit.number ? { [h.unit.name]: h.unit.number } : { [h.unit.name]: h.unit.number, [`${h.unit.name}_end`]: h.unit.last };
}

function hitRecord(h: Hit, query: string) {
  return {
    score: h.score,
    ...(h.score !== h.cosine ? { cosine: h.cosine } : {}),
    id: h.id,
    ...(h.chunk !== undefined ? { chunk: h.chunk, start: h.start, end: h.end } : {}),
    ...unitFields(h),
    text: h.text ?? null,
    excerpt: h.text === undefined ? null : excerptOf(h.text, query),
  };
}

function describeHit(rank: number, h: Hit, reranked: boolean, query: string): string {
  const units = h.unit && (h.unit.last === h.unit.number ? `${h.unit.name} ${h.unit.number}` : `${h.unit.name}s ${h.unit.number}–${h.unit.last}`);
  const where = [String(h.id), units ?? '', h.chunk !== undefined ? `chunk ${h.chunk}, characters ${h.start}–${h.end}` : ''].filter(Boolean).join(', ');
  const score = reranked ? `${h.score.toFixed(3)} (cosine ${h.cosine.toFixed(3)})` : h.score.toFixed(3);
  const passage = h.text === undefined ? '' : `\n   ${JSON.stringify(excerptOf(h.text, query))}`;
  return `${rank}. ${score}  ${where}${passage}`;
}
