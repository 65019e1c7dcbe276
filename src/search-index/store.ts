// The index's writes and reads in SQL, one function per operation; every write that touches a
// file's passages also moves the corpus counts (lexembed_terms) in the same transaction.
import type { SparseVector } from '../embedder/sparse.ts';
import { PASSAGES_ROW } from './schema.ts';
import { signBits, sparsevecLiteral, toInt8 } from './model.ts';
import type { Sql, SqlQuery } from './sql.ts';

/** A file as the index knows it. */
export interface IndexedFile {
  readonly id: number;
  readonly root: string;
  readonly path: string;
  readonly sha256: string;
  readonly passages: number;
}

/** A passage to store: where it is in its file, its text and vectors. */
export interface NewPassage {
  readonly chunk: number;
  readonly start: number;
  readonly end: number;
  readonly unitFirst: number | null;
  readonly unitLast: number | null;
  readonly body: string;
  readonly dense: Float32Array;
  readonly sparse: SparseVector;
}

export async function listFiles(sql: SqlQuery): Promise<IndexedFile[]> {
  return sql.query<IndexedFile>('select id, root, path, sha256, passages from lexembed_files order by root, path');
}

/** Removes a file, its passages and their part of the corpus counts. */
export async function removeFile(tx: SqlQuery, fileId: number): Promise<void> {
  const [row] = await tx.query<{ terms: number[]; term_counts: number[]; passages: number }>('delete from lexembed_files where id = $1 returning terms, term_counts, passages', [fileId]);
  if (!row) return;
  await addCounts(tx, row.terms, row.term_counts.map((n) => -n), -row.passages);
}

/** A file that moved without changing: only its path changes. */
export async function renameFile(tx: SqlQuery, fileId: number, root: string, path: string): Promise<void> {
  await tx.query('update lexembed_files set root = $2, path = $3 where id = $1', [fileId, root, path]);
}

/** Stores a file with its passages (in the caller's transaction) and adds them to the corpus counts. */
export async function insertFile(
  tx: SqlQuery,
  file: { root: string; path: string; sha256: string; bytes: number; unit: string | null; context: string; contextSparse: SparseVector },
  passages: readonly NewPassage[],
  vocabularySize: number,
): Promise<void> {
  const df = new Map<number, number>();
  for (const p of passages) for (const t of p.sparse.indices) df.set(t, (df.get(t) ?? 0) + 1);
  const terms = [...df.keys()].sort((a, b) => a - b);
  const [row] = await tx.query<{ id: number }>(
    'insert into lexembed_files (root, path, sha256, bytes, unit, passages, terms, term_counts, context, context_sparse) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::sparsevec) returning id',
    [file.root, file.path, file.sha256, file.bytes, file.unit, passages.length, terms, terms.map((t) => df.get(t)!), file.context, sparsevecLiteral(file.contextSparse, vocabularySize)],
  );
  // Rows go in a few hundred at a time: one statement each, the vectors as text PostgreSQL casts.
  for (let at = 0; at < passages.length; at += 200) {
    const some = passages.slice(at, at + 200);
    await tx.query(
      `with made as (
         insert into lexembed_passages (file_id, chunk, start_offset, end_offset, unit_first, unit_last, body, bits, dense)
         select $1, c, s, e, uf, ul, b, bits::bit(${some[0]!.dense.length}), decode(d, 'base64')
         from unnest($2::int[], $3::int[], $4::int[], $5::int[], $6::int[], $7::text[], $8::text[], $9::text[]) as t(c, s, e, uf, ul, b, bits, d)
         returning id, chunk)
       insert into lexembed_sparse (id, file_id, sparse)
       select made.id, $1, t.sp::sparsevec from made join unnest($2::int[], $10::text[]) as t(c, sp) on t.c = made.chunk`,
      [
        row!.id,
        some.map((p) => p.chunk),
        some.map((p) => p.start),
        some.map((p) => p.end),
        some.map((p) => p.unitFirst),
        some.map((p) => p.unitLast),
        some.map((p) => p.body),
        some.map((p) => signBits(p.dense)),
        some.map((p) => Buffer.from(toInt8(p.dense).buffer).toString('base64')),
        some.map((p) => sparsevecLiteral(p.sparse, vocabularySize)),
      ],
    );
  }
  await addCounts(tx, terms, terms.map((t) => df.get(t)!), passages.length);
}

async function addCounts(tx: SqlQuery, terms: readonly number[], counts: readonly number[], passages: number): Promise<void> {
  if (terms.length) {
    await tx.query(
      `insert into lexembed_terms (term, df) select * from unnest($1::int[], $2::int[])
       on conflict (term) do update set df = lexembed_terms.df + excluded.df`,
      [terms, counts],
    );
    // Only a removal takes counts to 0, and only of its own terms: not a scan of every term's row
    // at each file written (724,233 rows at 113,697 real passages).
    if (counts.some((n) => n < 0)) await tx.query('delete from lexembed_terms where term = any($1::int[]) and df <= 0', [terms]);
  }
  await tx.query('update lexembed_terms set df = df + $2 where term = $1', [PASSAGES_ROW, passages]);
}

/**
 * After a run of writes: moves a server's sparse GIN index's pending entries into its tree (fast to
 * add to, slow to search: every query reads the whole pending list until then), and vacuums what the run
 * left dead: every file rewrites the counts of the terms it holds (PGlite runs no autovacuum, and
 * lexembed_terms grew to 87 MB at 100,000 passages), and a changed or removed file its passages;
 * and checkpoints an embedded index that wrote much log since its last (cutLog). Outside a
 * transaction (VACUUM cannot run in one).
 */
export async function settleWrites(sql: Writer, options: { removed?: boolean } = {}): Promise<void> {
  await sql.query(`select gin_clean_pending_list(index) from (select to_regclass('lexembed_sparse_gin') as index) i where index is not null`);
  await sql.query(`vacuum lexembed_terms, lexembed_files${options.removed ? ', lexembed_passages, lexembed_sparse' : ''}`);
  await cutLog(sql);
}

/**
 * Vacuums the term counts during a long run (outside a transaction): each file rewrites the rows
 * of every term it holds, and a vacuum only lets later writes reuse the space, so without one
 * every VACUUM_COUNTS_EVERY files the table grows with the run (to 87 MB over 100,000 passages).
 * And checkpoints an embedded index that wrote much log since its last (cutLog).
 */
export async function vacuumCounts(sql: Writer): Promise<void> {
  await sql.query('vacuum lexembed_terms');
  await cutLog(sql);
}

/** What the writes between two runs' steps need of a connection: queries, and which engine it is. */
export type Writer = Pick<Sql, 'query' | 'engine'>;

/**
 * Write-ahead log an embedded index lets a run write before it checkpoints: PGlite is PostgreSQL
 * in single-user mode, which starts no checkpoint when its log passes max_wal_size (only a
 * server's checkpointer does), so a long run kept all of it: 3.3 GB of log beside 0.75 GB of data
 * while 113,697 passages were written (bench:index-recall), gone only when the index was closed
 * (its shutdown checkpoint). A checkpoint writes out every changed page (up to PGlite's 128 MB
 * of buffers): after every batch of files it cost a run of 5,611 passages 123.6 s against 119.8 s
 * without (the same run; noise of a few seconds here), and one per this much log (about 9,000
 * passages) bounds a long run's disk use with a few of them.
 */
const CHECKPOINT_AFTER_LOG_BYTES = 256 * 2 ** 20;

/** A checkpoint in an embedded index once `after` bytes of log were written since the last; a PostgreSQL server checkpoints by itself. */
export async function cutLog(sql: Writer, after = CHECKPOINT_AFTER_LOG_BYTES): Promise<void> {
  if (sql.engine !== 'pglite') return;
  const [row] = await sql.query<{ bytes: string }>(`select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), (pg_control_checkpoint()).redo_lsn)::text as bytes`);
  if (Number(row?.bytes) >= after) await sql.query('checkpoint');
}

/** Files (or, for long files, thousands of passages) written between two vacuumCounts. */
export const VACUUM_COUNTS_EVERY = { files: 20, passages: 2_000 };

/** How many passages there are, and how many hold each term asked for. */
export interface CorpusCounts {
  readonly passages: number;
  readonly df: ReadonlyMap<number, number>;
}

/** How many passages hold each of `terms`, and how many passages there are. */
export async function corpusCounts(sql: SqlQuery, terms: readonly number[]): Promise<CorpusCounts> {
  const rows = await sql.query<{ term: number; df: number }>('select term, df from lexembed_terms where term = any($1::int[])', [[PASSAGES_ROW, ...terms]]);
  const df = new Map(rows.map((r) => [r.term, r.df]));
  return { passages: df.get(PASSAGES_ROW) ?? 0, df };
}
