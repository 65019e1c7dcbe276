// The index's tables and what it records about itself, the same in PGlite and PostgreSQL:
//   lexembed_index     one row: the schema version, the model that made the vectors (name, id,
//                      fingerprint, and the vectors fingerprint: what makes a passage's vectors),
//                      the dense width, the sparse vocabulary size, the chunk size
//   lexembed_files     one row per indexed file: root + path, content hash, its terms' counts, its
//                      context (the opening lines that name it: title, parties) with their sparse
//                      vector and a GIN index of its terms, so a question that names a document can
//                      be scoped to it
//   lexembed_passages  one row per chunk: text, offsets, page/paragraph/line, the dense vector as
//                      bits (for the HNSW candidate search) and int8 (for rescoring)
//   lexembed_sparse    one row per chunk: its sparse vector (and file), on a server with a GIN
//                      index of its terms: the sparse side's inverted index (an embedded index's
//                      is its postings files, postings.ts). A table of its own (format 3): a
//                      query reads thousands of candidates' sparse vectors, and from a narrow table
//                      that fits the page cache, not from rows 4 KB wide (at 100,000 passages the
//                      sparse list's p50 fell from 375 to 147 ms cold, 33 ms warm)
//   lexembed_terms     how many passages hold each sparse index (the corpus's idf), and row -1
//                      counts the passages
// A file's passages, its row and the counts change in one transaction, so an interrupted run
// leaves whole files.
import type { Problem } from '../contract/index.ts';
import { describeVectorParts, vectorPartsThatDiffer, type VectorsFingerprint } from '../embedder/fingerprint.ts';
import { contextOf } from './context.ts';
import type { Sql, SqlQuery } from './sql.ts';

/** Bumped when the tables change shape; an index made by a newer lexembed is refused, not misread. */
export const SCHEMA_VERSION = 4;

/** Which vectors an index holds: it only answers queries embedded the same way. */
export interface IndexSettings {
  /**
   * The model that made the index, and what its passages' vectors depend on (`vectors`: the graph,
   * the tokenizer, the document settings, the sparse table; absent in an index written before
   * lexembed recorded it, until recordVectors adds it).
   */
  readonly model: { readonly name: string; readonly id: string | null; readonly fingerprint: string | null; readonly vectors?: VectorsFingerprint | null };
  readonly dimensions: number;
  readonly vocabularySize: number;
  readonly chunkTokens: number;
}

/** Why an index cannot be used, with what to do: the CLI prints it and exits 2. */
export class IndexError extends Error {
  override readonly name = 'IndexError';
  /** The model's problem where the model refused (a server answers it as it is: a full queue stays a 503). */
  readonly problem?: Problem;

  constructor(message: string, problem?: Problem) {
    super(message);
    if (problem) this.problem = problem;
  }
}

/** The passage count's row in lexembed_terms. */
export const PASSAGES_ROW = -1;

/** PostgreSQL's SQLSTATE for a write in a read-only transaction (a hot standby's, or default_transaction_read_only). */
const READ_ONLY_TRANSACTION = '25006';

/** The settings recorded in the index, or null when it has no tables yet. */
export async function readSettings(sql: SqlQuery, where: string): Promise<(IndexSettings & { schemaVersion: number; lexembedVersion: string }) | null> {
  const [table] = await sql.query<{ present: boolean }>(`select to_regclass('lexembed_index') is not null as present`);
  if (!table?.present) return null;
  const [row] = await sql.query<{ schema_version: number; settings: IndexSettings; lexembed_version: string }>('select schema_version, settings, lexembed_version from lexembed_index');
  if (!row) throw new IndexError(`${where}: the index's table lexembed_index is empty (an index whose creation was cut off?); remove it and run lexembed index again`);
  if (row.schema_version > SCHEMA_VERSION) {
    throw new IndexError(`${where} was written by lexembed ${row.lexembed_version} (index format ${row.schema_version}); this lexembed reads format ${SCHEMA_VERSION} and older: upgrade lexembed to use it`);
  }
  return { ...row.settings, schemaVersion: row.schema_version, lexembedVersion: row.lexembed_version };
}

/** Creates the tables for `settings` (in one transaction), or checks that the index's match them. */
export async function ensureSchema(sql: Sql, settings: IndexSettings, lexembedVersion: string): Promise<void> {
  const found = await readSettings(sql, sql.where);
  if (found) return checkSameVectors(found, settings, sql.where);
  await sql.transaction(async (tx) => {
    await tx.query('create extension if not exists vector');
    await tx.query(`create table lexembed_index (schema_version int not null, lexembed_version text not null, settings jsonb not null, created_at timestamptz not null default now())`);
    await tx.query('insert into lexembed_index (schema_version, lexembed_version, settings) values ($1, $2, $3)', [SCHEMA_VERSION, lexembedVersion, JSON.stringify(settings)]);
    await tx.query(`create function lexembed_sparse_terms(v sparsevec) returns int[] language sql immutable parallel safe as $$
      select coalesce(array_agg(split_part(e, ':', 1)::int - 1), '{}')
      from unnest(string_to_array(btrim(split_part(v::text, '/', 1), '{}'), ',')) as e $$`);
    await tx.query(`create table lexembed_files (
      id serial primary key, root text not null, path text not null, sha256 text not null, bytes bigint not null,
      unit text, passages int not null, terms int[] not null, term_counts int[] not null,
      indexed_at timestamptz not null default now(), context text, context_sparse sparsevec(${settings.vocabularySize}), unique (root, path))`);
    await tx.query(`create table lexembed_passages (
      id bigserial primary key, file_id int not null references lexembed_files(id) on delete cascade,
      chunk int not null, start_offset int not null, end_offset int not null, unit_first int, unit_last int,
      body text not null, bits bit(${settings.dimensions}) not null, dense bytea not null, unique (file_id, chunk))`);
    // A server's dense shortlist comes from the graph; an embedded index's from its bits in memory (sign-bits.ts).
    if (sql.engine === 'postgres') await tx.query(CREATE_DENSE_GRAPH);
    await addContextTermsIndex(tx);
    await createSparseTable(tx, settings.vocabularySize, sql.engine);
    await tx.query('create table lexembed_terms (term int primary key, df int not null)');
    await tx.query('insert into lexembed_terms values ($1, 0)', [PASSAGES_ROW]);
  });
}

/**
 * Records the vectors fingerprint in an index written before lexembed recorded it (one that
 * checkSameVectors accepted by its whole fingerprint, so these are its vectors' parts), in one
 * transaction; nothing is embedded again. False where the server takes no writes (a read
 * replica): the index is searched as it is, and a writer records it.
 */
export async function recordVectors(sql: Sql, vectors: VectorsFingerprint): Promise<boolean> {
  try {
    await sql.transaction(async (tx) => {
      const [row] = await tx.query<{ settings: IndexSettings }>('select settings from lexembed_index for update');
      if (row?.settings.model.vectors) return;
      await tx.query(`update lexembed_index set settings = jsonb_set(settings, '{model,vectors}', $1::jsonb)`, [JSON.stringify(vectors)]);
    });
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === READ_ONLY_TRANSACTION) return false;
    throw error;
  }
}

/**
 * The sparse side's table and, on a server, its inverted index: which passages hold a term (GIN
 * over the sparse vector's indices, counted from 0 as lexembed_terms counts them); search.ts reads
 * candidates from it. An embedded index's inverted index is its postings files (postings.ts).
 */
async function createSparseTable(tx: SqlQuery, vocabularySize: number, engine: Sql['engine']): Promise<void> {
  await tx.query(`create table lexembed_sparse (
    id bigint primary key references lexembed_passages(id) on delete cascade, file_id int not null, sparse sparsevec(${vocabularySize}) not null)
    with (toast_tuple_target = ${INLINE_ROW_BYTES})`);
  if (engine === 'postgres') await tx.query(CREATE_SPARSE_TERMS_INDEX);
}

const SPARSE_TERMS_INDEX = 'lexembed_sparse_gin';
const CREATE_SPARSE_TERMS_INDEX = `create index if not exists ${SPARSE_TERMS_INDEX} on lexembed_sparse using gin (lexembed_sparse_terms(sparse))`;

/**
 * Drops the sparse table's GIN index from an embedded index made with one: its postings files
 * (postings.ts) find a query's passages, and the GIN index took 1.0 KB a real passage and its
 * upkeep at each write.
 */
export async function dropSparseTermsIndex(sql: SqlQuery): Promise<void> {
  await sql.query(`drop index if exists ${SPARSE_TERMS_INDEX}`);
}

/** Whether the index has the sparse terms' GIN index (a server's; an embedded index made before its postings files). */
export async function hasSparseTermsIndex(sql: SqlQuery): Promise<boolean> {
  const [row] = await sql.query<{ present: boolean }>(`select to_regclass('${SPARSE_TERMS_INDEX}') is not null as present`);
  return row?.present === true;
}

/**
 * Sparse rows up to this size stay in the table's pages (PostgreSQL's most; its default moves a
 * row over 2 KB out of line, to TOAST, and a passage with more than about 250 terms went there).
 * A query reads thousands of candidates' sparse vectors, and each TOASTed one is another index
 * lookup and page: at 113,697 real passages the sparse list's p50 fell from 60 to 43 ms (hybrid
 * 106 to 87 ms) with every row inline, the table 0.8 % larger; the same rewrite with the default
 * target changed neither.
 */
const INLINE_ROW_BYTES = 8160;

/**
 * Keeps the sparse rows written from now on inline in an index made before INLINE_ROW_BYTES (no
 * new format: an older lexembed reads such rows as before). The rows written before stay as they
 * are until the table is rewritten (on a PostgreSQL server: VACUUM FULL lexembed_sparse).
 */
export async function keepSparseRowsInline(sql: SqlQuery): Promise<void> {
  const [row] = await sql.query<{ inline: boolean }>(`select coalesce('toast_tuple_target=${INLINE_ROW_BYTES}' = any(reloptions), false) as inline from pg_class where oid = 'lexembed_sparse'::regclass`);
  if (!row?.inline) await sql.query(`alter table lexembed_sparse set (toast_tuple_target = ${INLINE_ROW_BYTES})`);
}

/**
 * The dense side's HNSW graph over the passages' sign bits: a PostgreSQL server's index takes its
 * dense shortlist from it (search.ts). An embedded index has none: it scans every passage's bits in
 * memory (sign-bits.ts), exactly and faster than PGlite walks the graph, and without it a write
 * adds no graph node and a first load builds no graph (at 113,697 real passages the graph was 73 s
 * of a 309 s first load and about 545 bytes a passage).
 */
const DENSE_GRAPH = 'lexembed_passages_bits';
const CREATE_DENSE_GRAPH = `create index if not exists ${DENSE_GRAPH} on lexembed_passages using hnsw (bits bit_hamming_ops)`;

/**
 * Memory an embedded index builds its dense graph in: pgvector builds it in memory while it fits
 * (about 0.6 KB a passage), and on in its pages, far slower, after. A PostgreSQL server builds it
 * in the maintenance_work_mem its administrator set.
 */
const GRAPH_BUILD_MEMORY = '1GB';

/**
 * Drops the dense graph: before a server index's first load (update.ts), whose rows go in without
 * it: the 113,697 real passages of bench:index-recall took 309 s written so, the graph built once
 * over them after (buildDenseGraph), against 524 s with each passage inserted into the graph as it
 * was written (same run; searched meanwhile, the dense shortlist is an exact scan of every
 * passage's bits: the same passages, slower); and from an embedded index made with one (index.ts).
 */
export async function dropDenseGraph(sql: SqlQuery): Promise<void> {
  await sql.query(`drop index if exists ${DENSE_GRAPH}`);
}

/** Whether the index has its dense graph (false during a first load, or after one was cut off until the next run builds it). */
export async function hasDenseGraph(sql: SqlQuery): Promise<boolean> {
  const [row] = await sql.query<{ present: boolean }>(`select to_regclass('${DENSE_GRAPH}') is not null as present`);
  return row?.present === true;
}

/** Builds the dense graph where it is missing: after a first load, or where one was cut off. */
export async function buildDenseGraph(sql: Sql): Promise<void> {
  await sql.transaction(async (tx) => {
    if (sql.engine === 'pglite') await tx.query(`set local maintenance_work_mem = '${GRAPH_BUILD_MEMORY}'`);
    await tx.query(CREATE_DENSE_GRAPH);
  });
}

/** The GIN index of the files' contexts' terms (search.ts finds a question's named files by it). */
const CONTEXT_TERMS_INDEX = 'lexembed_files_context_gin';

/**
 * Adds the contexts' terms index where it is missing (an index written before lexembed made
 * it: no new format, since an older lexembed reads and writes an index that has it as before).
 * Contexts are one row per file, so it is built in moments.
 */
export async function addContextTermsIndex(sql: SqlQuery): Promise<void> {
  await sql.query(`create index if not exists ${CONTEXT_TERMS_INDEX} on lexembed_files using gin (lexembed_sparse_terms(context_sparse))`);
}

/** Whether the index has the contexts' terms index (a reader without it scores every context). */
export async function hasContextTermsIndex(sql: SqlQuery): Promise<boolean> {
  const [row] = await sql.query<{ present: boolean }>(`select to_regclass('${CONTEXT_TERMS_INDEX}') is not null as present`);
  return row?.present === true;
}

/** Where an index of `version` keeps its passages' sparse vectors. */
export const sparseTableOf = (version: number): 'lexembed_sparse' | 'lexembed_passages' => (version >= 3 ? 'lexembed_sparse' : 'lexembed_passages');

/**
 * Brings an older index to this format, in one transaction, embedding nothing again: format 1 gets
 * each file's context (its opening lines, from its first passage's text) with their sparse vector;
 * format 2 moves the passages' sparse vectors to their own table. The space the old column held is
 * reused by later writes (PostgreSQL's VACUUM FULL gives it back).
 */
export async function upgradeIndex(sql: Sql, version: number, sparseOf: (texts: readonly string[]) => Promise<string[]>, vocabularySize: number): Promise<void> {
  await sql.transaction(async (tx) => {
    if (version < 2) await addFileContexts(tx, sparseOf, vocabularySize);
    if (version < 3) {
      await createSparseTable(tx, vocabularySize, sql.engine);
      await tx.query('insert into lexembed_sparse (id, file_id, sparse) select id, file_id, sparse from lexembed_passages');
      await tx.query('drop index if exists lexembed_passages_terms');
      await tx.query('alter table lexembed_passages drop column sparse');
    }
    // Format 4: an embedded index's sparse terms are found by its postings files (postings.ts), not
    // a GIN index, which a lexembed of format 3 expects; its version refuses the index, as it should.
    if (sql.engine === 'pglite') await dropSparseTermsIndex(tx);
    await tx.query('update lexembed_index set schema_version = $1', [SCHEMA_VERSION]);
  });
}

/** Format 1 to 2: each file's context and its sparse vector (in the caller's transaction). */
async function addFileContexts(tx: SqlQuery, sparseOf: (texts: readonly string[]) => Promise<string[]>, vocabularySize: number): Promise<void> {
  await tx.query(`alter table lexembed_files add column if not exists context text, add column if not exists context_sparse sparsevec(${vocabularySize})`);
  const rows = await tx.query<{ id: number; body: string }>('select f.id, p.body from lexembed_files f join lexembed_passages p on p.file_id = f.id and p.chunk = 0 order by f.id');
  for (let at = 0; at < rows.length; at += 200) {
    const some = rows.slice(at, at + 200);
    const contexts = some.map((r) => contextOf(r.body));
    const vectors = await sparseOf(contexts);
    await tx.query(
      `update lexembed_files f set context = t.c, context_sparse = t.v::sparsevec from unnest($1::int[], $2::text[], $3::text[]) as t(id, c, v) where f.id = t.id`,
      [some.map((r) => r.id), contexts, vectors],
    );
  }
}

/**
 * Refuses vectors another model (or another width, vocabulary or chunking) would make. An index
 * that records its vectors fingerprint is compared by it: a model release that leaves the graph,
 * the tokenizer, the document settings and the sparse table as they were (a new query side, id or
 * description) keeps the index, and one that changes any of them is refused naming it. An index
 * written before (its whole fingerprint alone) is compared by that, as then.
 */
export function checkSameVectors(found: IndexSettings, wanted: IndexSettings, where: string): void {
  const a = found.model;
  const b = wanted.model;
  const what = 'Use the model that made the index (--model <its folder>, the same --dtype), or index into a new location';
  if (a.vectors && b.vectors) {
    const [made, now] = [a.vectors, b.vectors];
    const differ = vectorPartsThatDiffer(made, now);
    if (differ.length) {
      throw new IndexError(
        `${where} holds vectors of model ${a.id ?? a.name} and this model is ${b.id ?? b.name}: their vectors do not compare, because ${describeVectorParts(differ)} ${differ.length > 1 ? 'differ' : 'differs'} (${differ.map((p) => `${p} ${made[p]} there, ${now[p]} now`).join('; ')}). ${what}`,
      );
    }
  }
  const sameModel = (a.vectors && b.vectors) || (a.fingerprint === b.fingerprint && a.name === b.name);
  if (!sameModel || found.dimensions !== wanted.dimensions || found.vocabularySize !== wanted.vocabularySize) {
    throw new IndexError(
      `${where} holds vectors of model ${a.id ?? a.name} (fingerprint ${a.fingerprint}, ${found.dimensions} dimensions), and this model is ${b.id ?? b.name} (fingerprint ${b.fingerprint}, ${wanted.dimensions} dimensions): their vectors do not compare. ${what}`,
    );
  }
  if (found.chunkTokens !== wanted.chunkTokens) {
    throw new IndexError(`${where} was indexed in chunks of ${found.chunkTokens} tokens, not ${wanted.chunkTokens}: pass --chunk-tokens ${found.chunkTokens}, or index into a new location`);
  }
}
