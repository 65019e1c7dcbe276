// lexembed's search index as a library: passages of legal documents with their text, place and
// vectors in an embedded PostgreSQL (PGlite + pgvector, a folder) or a PostgreSQL server with
// pgvector, kept up to date file by file and searched hybrid (dense + sparse) by default.
//
//   const index = await openIndex('contracts.index', { embedder });
//   await index.update(['contracts/']);          // { added: [...], changed: [], ..., unchanged: 25 }
//   const hits = await index.search('governing law of the supply agreement', { top: 5 });
//   await index.close();
import { join } from 'node:path';
import type { EmbedOptions, Embedder } from '../embedder/types.ts';
import { messageOf } from '../util/message-of.ts';
import { LEXEMBED_VERSION } from '../version.ts';
import { openLocation } from './location.ts';
import { indexModelOf, sparsevecLiteral, type IndexModel } from './model.ts';
import { addContextTermsIndex, buildDenseGraph, checkSameVectors, ensureSchema, hasContextTermsIndex, hasDenseGraph, IndexError, keepSparseRowsInline, readSettings, recordVectors, SCHEMA_VERSION, sparseTableOf, upgradeIndex, type IndexSettings } from './schema.ts';
import { hitOf, PASSAGE_COLUMNS, searchPassages, type IndexLayout, type PassageRow, type SearchHit, type SearchOptions } from './search.ts';
import { openPostings, POSTINGS_FOLDER, PostingsDamaged, type SparsePostings } from './postings.ts';
import { signBitsOfIndex, type SignBitsTable } from './sign-bits.ts';
import type { Sql } from './sql.ts';
import { settleWrites } from './store.ts';
import { updateIndex, type UpdateEvent, type UpdateReport } from './update.ts';

export { IndexError } from './schema.ts';
export type { SearchHit, SearchMode, SearchOptions } from './search.ts';
export type { UpdateEvent, UpdateReport } from './update.ts';

/** Passage size when an index is made: 256 tokens, as lexembed embed cuts documents. */
export const DEFAULT_CHUNK_TOKENS = 256;
/** The longest query searched, in characters (a query is one text the model reads whole). */
export const MAX_QUERY_CHARACTERS = 10_000;

export interface OpenIndexOptions {
  /** The loaded model (loadModelFolder): one that makes the index's vectors, checked by its vectors fingerprint (schema.ts checkSameVectors). */
  readonly embedder: Embedder;
  /** Make the index when there is none (default true); false: an IndexError says how to make it. */
  readonly create?: boolean;
  /** Tokens per passage for a new index (default 256); an existing index keeps its own. */
  readonly chunkTokens?: number;
}

export interface SearchIndex {
  /** Where it is: a folder, or the server's URL without its password. */
  readonly where: string;
  readonly engine: 'pglite' | 'postgres';
  /** Indexes what is new, changed, renamed or gone under `inputs` (folders or files). */
  update(inputs: readonly string[], onEvent?: (e: UpdateEvent) => void): Promise<UpdateReport>;
  /** The best passages for `query`; `embed` carries a server request's signal and lease to the query's embedding. */
  search(query: string, options?: SearchOptions, embed?: EmbedOptions): Promise<SearchHit[]>;
  /** A passage by its id (SearchHit.passageId) with up to `neighbours` passages of its file before and after it, in order; null if there is none. */
  passage(id: string, neighbours?: number): Promise<{ passage: SearchHit; before: SearchHit[]; after: SearchHit[] } | null>;
  /** Counts of files and passages. */
  stats(): Promise<{ files: number; passages: number; settings: IndexSettings | null }>;
  close(): Promise<void>;
}

/** Opens (or makes) the index at `location`: a folder for the embedded engine, or a postgres:// URL. */
export async function openIndex(location: string, options: OpenIndexOptions): Promise<SearchIndex> {
  const model = indexModelOf(options.embedder);
  const sql = await openLocation(location, { create: options.create ?? true });
  try {
    const found = await readSettings(sql, sql.where);
    let settings: IndexSettings | null = found;
    // An older format is searched as it is (format 1 without document contexts) until a writer upgrades it.
    let version = found?.schemaVersion ?? SCHEMA_VERSION;
    if (settings) {
      checkSameVectors(settings, { ...model.settings, chunkTokens: settings.chunkTokens }, sql.where);
      // An index written before lexembed recorded its vectors fingerprint, accepted by its whole
      // one: these are its vectors' parts, recorded so that a later release that keeps them keeps it.
      const vectors = model.settings.model.vectors;
      if (!settings.model.vectors && settings.model.fingerprint && vectors && (await recordVectors(sql, vectors))) settings = { ...settings, model: { ...settings.model, vectors } };
    } else if (options.create === false) throw new IndexError(`no index at ${sql.where}: make one with lexembed index <folder of documents> --index ${location}`);
    let contextTerms = settings ? await hasContextTermsIndex(sql) : true;
    const current = () => (settings ? { settings, layout: { contexts: version >= 2, sparseTable: sparseTableOf(version), contextTerms } } : null);
    return handle(sql, model, current, async () => {
      if (settings) {
        if (version < SCHEMA_VERSION) await upgradeIndex(sql, version, async (texts) => (await model.sparseOf(texts, 'relative')).map((v) => sparsevecLiteral(v, settings!.vocabularySize)), settings.vocabularySize);
        version = SCHEMA_VERSION;
        if (!contextTerms) await addContextTermsIndex(sql);
        contextTerms = true;
        await keepSparseRowsInline(sql);
        return settings;
      }
      const made = { ...model.settings, chunkTokens: options.chunkTokens ?? DEFAULT_CHUNK_TOKENS };
      if (made.chunkTokens > model.maxChunkTokens) throw new IndexError(`--chunk-tokens ${made.chunkTokens} is more than the model reads of a passage (${model.maxChunkTokens})`);
      await ensureSchema(sql, made, LEXEMBED_VERSION);
      settings = made;
      return settings;
    });
  } catch (error) {
    await sql.close();
    throw error;
  }
}

function handle(sql: Sql, model: IndexModel, current: () => { settings: IndexSettings; layout: IndexLayout } | null, made: () => Promise<IndexSettings>): SearchIndex {
  const memory = inMemory(sql);
  return {
    where: sql.where,
    engine: sql.engine,
    async update(inputs, onEvent) {
      if (!(await sql.tryWriterLock())) throw new IndexError(`another lexembed index run is writing to ${sql.where}: wait for it to finish (one writer at a time)`);
      const settings = await made();
      const held = memory.release();
      const report = await updateIndex(sql, model, settings.chunkTokens, settings.vocabularySize, inputs, onEvent).catch(async (error: unknown) => {
        // The files written before the error are searched with the graph; where it cannot be built
        // now (a full disk), the run's own error is the one to report, and the next run builds it.
        await completeDenseGraph(sql, onEvent).catch(() => {});
        throw error;
      });
      await completeDenseGraph(sql, onEvent);
      await settleWrites(sql, { removed: report.changed.length + report.removed.length > 0 });
      const now = current();
      if (now) await memory.refresh(now, held);
      return report;
    },
    async search(query, options, embed) {
      const now = current();
      if (!now) throw new IndexError(`the index at ${sql.where} is empty: add documents with lexembed index <folder> --index ${sql.where}`);
      if (!/\S/.test(query)) throw new IndexError('the query is empty: give a question or words to search for');
      if (query.length > MAX_QUERY_CHARACTERS) throw new IndexError(`the query has ${query.length.toLocaleString('en')} characters; a query is searched as one text of at most ${MAX_QUERY_CHARACTERS.toLocaleString('en')}: ask with its key words or a sentence`);
      const top = options?.top ?? 10;
      const offset = options?.offset ?? 0;
      if (!Number.isInteger(top) || top < 1 || top > 1000) throw new IndexError(`top must be an integer from 1 to 1000 (got ${top})`);
      if (!Number.isInteger(offset) || offset < 0 || offset > 10_000) throw new IndexError(`offset must be an integer from 0 to 10000 (got ${offset})`);
      const embedded = await model.embedQuery(query, embed);
      const search = async () =>
        searchPassages(sql, { ...embedded, rest: restOfQuery(model, query) }, now.settings.vocabularySize, { ...options, top, offset }, now.layout, await memory.bitsOf(now), options?.mode === 'dense' ? undefined : await memory.postingsOf(now));
      try {
        return await search();
      } catch (error) {
        if (!(error instanceof PostingsDamaged)) throw error;
        // A segment changed under this process (a file cut short or replaced): checked and made
        // again from the database, not reused, and the search asked again.
        memory.forgetPostings();
        return search();
      }
    },
    async passage(id, neighbours = 0) {
      if (!/^\d{1,18}$/.test(id)) throw new IndexError(`passage ids are whole numbers (a search hit's passageId), not "${id}"`);
      if (!Number.isInteger(neighbours) || neighbours < 0 || neighbours > 10) throw new IndexError(`neighbours must be an integer from 0 to 10 (got ${neighbours})`);
      const rows = await sql.query<PassageRow>(
        `select ${PASSAGE_COLUMNS} from lexembed_passages p join lexembed_files f on f.id = p.file_id
         join lexembed_passages hit on hit.file_id = p.file_id and hit.id = $1::bigint
         where p.chunk between hit.chunk - $2::int and hit.chunk + $2::int order by p.chunk`,
        [id, neighbours],
      );
      const at = rows.findIndex((r) => r.id === id);
      if (at < 0) return null;
      const hits = rows.map((r) => hitOf(r, 0, 0));
      return { passage: hits[at]!, before: hits.slice(0, at), after: hits.slice(at + 1) };
    },
    async stats() {
      const settings = current()?.settings;
      if (!settings) return { files: 0, passages: 0, settings: null };
      const [row] = await sql.query<{ files: number; passages: number }>(`select (select count(*) from lexembed_files)::int as files, (select df from lexembed_terms where term = -1)::int as passages`);
      return { files: row?.files ?? 0, passages: row?.passages ?? 0, settings };
    },
    async close() {
      await memory.close();
      await sql.close();
    },
  };
}

/**
 * The embedded index's sign bits and sparse postings, read at its first search that needs them
 * (from the files beside its database that the last process to read them left, else from the
 * database) and again after each update.
 */
function inMemory(sql: Sql) {
  let bits: Promise<SignBitsTable | undefined> | null = null;
  let postings: Promise<SparsePostings | undefined> | null = null;
  const bitsOf = (now: { settings: IndexSettings }) => {
    bits ??= signBitsOfIndex(sql, now.settings.dimensions).catch((error: unknown) => {
      bits = null;
      throw new IndexError(`cannot read the passages' sign bits of the index at ${sql.where} (${messageOf(error)}): it may be damaged; remove it and run lexembed index again`);
    });
    return bits;
  };
  type Held = { bits?: Promise<SignBitsTable | undefined>; postings?: Promise<SparsePostings | undefined> };
  return {
    bitsOf,
    postingsOf(now: { settings: IndexSettings; layout: IndexLayout }) {
      postings ??= bitsOf(now).then((table) =>
        postingsOfIndex(sql, now, table).catch((error: unknown) => {
          postings = null;
          throw postingsError(sql, error);
        }),
      );
      return postings;
    },
    /** Before a run's writes: searches meanwhile read them afresh; what was held is brought up to date after the run (refresh). */
    release(): Held {
      const held = { bits: bits?.catch(() => undefined), postings: postings?.catch(() => undefined) };
      bits = null;
      postings = null;
      return held;
    },
    /** After a run: those held (or the folder's files of them) brought up to date and written for the next process. */
    async refresh(now: { settings: IndexSettings; layout: IndexLayout }, held: Held) {
      const table = signBitsOfIndex(sql, now.settings.dimensions, await held.bits);
      const posted = table.then(async (t) => postingsOfIndex(sql, now, t, await held.postings));
      [bits, postings] = [table, posted];
      // Where they cannot be read or written now, the next search tries again (and says why).
      await posted.catch(() => {
        if (bits === table) bits = null;
        if (postings === posted) postings = null;
      });
    },
    forgetPostings() {
      postings = null;
    },
    async close() {
      (await postings?.catch(() => undefined))?.close();
    },
  };
}

/** The embedded index's sparse postings brought up to date with `table` (those `held` reused where they are); undefined for a server's index, or an older format's. */
async function postingsOfIndex(sql: Sql, now: { settings: IndexSettings; layout: IndexLayout }, table: SignBitsTable | undefined, held?: SparsePostings): Promise<SparsePostings | undefined> {
  if (!table || !sql.copyOut || !sql.folder) return undefined;
  // An older format's sparse vectors are in its passages' rows: searched as they are until a writer upgrades it.
  if (now.layout.sparseTable !== sparseTableOf(SCHEMA_VERSION)) return undefined;
  return openPostings(sql, sql.copyOut.bind(sql), sql.folder, table, now.settings.vocabularySize, held);
}

/** Why the postings could not be opened, with what to do: a folder that takes no writes (a full disk), or files that cannot be read. */
function postingsError(sql: Sql, error: unknown): IndexError {
  const folder = join(sql.folder ?? '', POSTINGS_FOLDER);
  const code = (error as { code?: string }).code ?? '';
  if (['ENOSPC', 'EDQUOT', 'EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EEXIST', 'EISDIR'].includes(code)) {
    return new IndexError(`cannot write the sparse postings of the index at ${sql.where} in ${folder} (${messageOf(error)}): free space on that disk, or let this user write there, and search again (they are made again from the index's database; --dense-only searches do without them)`);
  }
  return new IndexError(`cannot read the sparse postings of the index at ${sql.where} (${messageOf(error)}): delete ${folder} (it is made again from the index's database) and search again; if that fails too, the index may be damaged: remove it and run lexembed index again`);
}

/**
 * A server index: builds the dense graph a first load (or one cut off) left to the end, saying so
 * first (it takes minutes at a million passages). An embedded index has none (update.ts drops one
 * made before, ahead of its writes).
 */
async function completeDenseGraph(sql: Sql, onEvent?: (e: UpdateEvent) => void): Promise<void> {
  if (sql.engine === 'pglite') return;
  if (await hasDenseGraph(sql)) return;
  const [row] = await sql.query<{ n: number }>('select count(*)::int as n from lexembed_passages');
  onEvent?.({ kind: 'graph', passages: row?.n ?? 0 });
  await buildDenseGraph(sql);
}

/**
 * The query's dense vector without the words whose sparse terms are in `terms` (those that name a
 * document): the words' sparse vectors are made once per search, and each distinct rest embedded
 * once (named documents that are copies of one another name the same words).
 */
function restOfQuery(model: IndexModel, query: string): (terms: ReadonlySet<number>) => Promise<Float32Array | null> {
  const words = query.match(/[\p{L}\p{N}]+/gu) ?? [];
  let vectors: ReturnType<IndexModel['sparseOf']> | undefined;
  const embedded = new Map<string, Promise<Float32Array>>();
  return async (terms) => {
    const asked = await (vectors ??= model.sparseOf(words, 'tf'));
    const naming = asked.map((v) => v.indices.some((t) => terms.has(t)));
    // Nothing names the document, or nothing but the name (and words the sparse side skips) is asked.
    if (!naming.includes(true) || !asked.some((v, i) => !naming[i] && v.indices.length)) return null;
    const rest = words.filter((_, i) => !naming[i]).join(' ');
    if (!embedded.has(rest)) embedded.set(rest, model.embedQuery(rest).then((q) => q.dense));
    return embedded.get(rest)!;
  };
}
