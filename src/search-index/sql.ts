// The two SQL engines an index lives in, behind one small interface: PGlite (PostgreSQL compiled
// to WebAssembly, with pgvector, in a folder on disk: the embedded default, no server) and a
// PostgreSQL server with pgvector (`postgres://…`, the `pg` driver: a team's server, Citus). Both
// run the same SQL (schema.ts, store.ts), so the embedded index and the server one answer alike.

import { existsSync, readdirSync, statfsSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** A connection to the index's database: plain queries and one transaction at a time. */
export interface Sql {
  /** pglite (a folder) or postgres (a server). */
  readonly engine: 'pglite' | 'postgres';
  /** Where it is, for messages (a server's password left out). */
  readonly where: string;
  query<T = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<T[]>;
  /** Runs `work` in one transaction: all of it is committed, or none (an error rolls it back). */
  transaction<T>(work: (tx: SqlQuery) => Promise<T>): Promise<T>;
  /**
   * Holds the index's one writer lock until close, or answers false when another process holds it
   * (PostgreSQL: a session advisory lock; a PGlite folder is locked whole when it is opened).
   */
  tryWriterLock(): Promise<boolean>;
  /** A folder index's folder (PGlite): where files beside its database go. */
  readonly folder?: string;
  /** A select's rows in PostgreSQL's binary COPY format, in one piece (PGlite only: a server's index is searched by its graph, search.ts). */
  copyOut?(select: string): Promise<Uint8Array>;
  /** Bytes free on the disk that holds a folder index (null for a server: it reports a full disk itself). */
  freeBytes(): number | null;
  close(): Promise<void>;
}

export type SqlQuery = Pick<Sql, 'query'>;

/** True for a location that names a PostgreSQL server rather than a folder. */
export const isPostgresUrl = (location: string): boolean => /^postgres(ql)?:\/\//i.test(location);

/**
 * The most write-ahead log an embedded index keeps between checkpoints (PostgreSQL's max_wal_size),
 * and so at rest after a run of writes: 64 MB kept 39 MB of log beside 22 MB of data for 1,000
 * passages; 16 MB wrote 10,000 passages as fast (28.5 and 30.5 s against 28.8 and 31.9, same run).
 */
const PGLITE_WAL_MB = 16;

/**
 * The write-ahead log's segment size a new embedded index is made with, in MB (initdb's
 * --wal-segsize; PostgreSQL's default is 16). An idle database keeps at least two segments, so 16 MB
 * ones made half of a new small index's folder (a folder of 25 contracts: 66 MB, 33 of them log).
 */
const PGLITE_NEW_WAL_SEGMENT_MB = 1;

/** The databases initdb makes that an index never uses (CREATE DATABASE's templates): 7 MB each. */
const UNUSED_TEMPLATES = ['template0', 'template1'];

/**
 * The embedded index's page cache (PostgreSQL's shared_buffers), in MB: three quarters of its data
 * on disk, from PGlite's 128 MB up to 1 GB (LEXEMBED_INDEX_CACHE_MB sets it). PGlite reads every
 * page it has not cached through its file system, and it holds the whole cache in memory from
 * the start, so a small index keeps the default. Searched with 200 questions, same run, two rounds
 * each: the 113,697 real passages of bench:index-recall (738 MB) p50 94-102 ms with 512 MB against
 * 135-168 ms with 128 MB; a million bench:index-scale chunks (4.6 GB) 98-122 ms with 1 GB against
 * 132-135 ms (the query's embedding included); resident memory 1.1 and 1.6 GB against 0.7 GB.
 */
const PAGE_CACHE_MB = { least: 128, most: 1024, share: 0.75, step: 16 };

/** The page cache for the index in `folder`, in MB: PAGE_CACHE_MB's share of its data, or what LEXEMBED_INDEX_CACHE_MB says. */
export function pageCacheMbOf(folder: string, env = process.env.LEXEMBED_INDEX_CACHE_MB): number {
  const set = pageCacheSetting(env);
  if (set !== null) return set;
  const { least, most, share, step } = PAGE_CACHE_MB;
  const wanted = Math.ceil((bytesUnder(join(folder, 'base')) * share) / 2 ** 20 / step) * step;
  return Math.min(most, Math.max(least, wanted));
}

/** LEXEMBED_INDEX_CACHE_MB's page cache in MB, null when it is not set; a RangeError naming it when it is not a size (location.ts says it as an IndexError). */
export function pageCacheSetting(env = process.env.LEXEMBED_INDEX_CACHE_MB): number | null {
  const text = env?.trim();
  if (!text) return null;
  const mb = Number(text);
  if (!/^\d+$/.test(text) || mb < 16 || mb > 2048) throw new RangeError(`LEXEMBED_INDEX_CACHE_MB must be a whole number of MB from 16 to 2048 (got "${env}"): the embedded index's page cache`);
  return mb;
}

/** The bytes of the files under `dir` (0 where it does not exist). */
function bytesUnder(dir: string): number {
  if (!existsSync(dir)) return 0;
  return readdirSync(dir, { withFileTypes: true }).reduce((sum, e) => sum + (e.isDirectory() ? bytesUnder(join(dir, e.name)) : e.isFile() ? statSync(join(dir, e.name)).size : 0), 0);
}

/** An embedded PostgreSQL (PGlite + pgvector) in `folder`, created if it does not exist. */
export async function openPglite(folder: string, where = folder): Promise<Sql> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { vector } = await import('@electric-sql/pglite-pgvector');
  const fresh = !existsSync(join(folder, 'PG_VERSION'));
  // PGlite runs no checkpointer or autovacuum of its own: without a cap its write-ahead log kept
  // 1.1 GB of a 1.6 GB index of 100,000 passages after a checkpoint (bench:index-scale). An idle
  // one keeps at least min_wal_size. PostgreSQL wants both at least two segments: an index made
  // before the segments were 1 MB has 16 MB ones (and keeps its 64 MB and 32 MB of then).
  const segmentMb = fresh ? PGLITE_NEW_WAL_SEGMENT_MB : walSegmentMbOf(folder);
  const startParams = [...PGlite.defaultStartParams, '-c', `max_wal_size=${Math.max(PGLITE_WAL_MB, 4 * segmentMb)}MB`, '-c', `min_wal_size=${Math.max(4, 2 * segmentMb)}MB`, '-c', `shared_buffers=${pageCacheMbOf(folder)}MB`];
  const db = await PGlite.create({ dataDir: folder, extensions: { vector }, startParams, initDbStartParams: [`--wal-segsize=${PGLITE_NEW_WAL_SEGMENT_MB}`] });
  if (fresh) {
    for (const name of UNUSED_TEMPLATES) {
      await db.query(`update pg_database set datistemplate = false where datname = $1`, [name]);
      await db.query(`drop database if exists ${name}`);
    }
  }
  return {
    engine: 'pglite',
    where,
    query: async (text, params) => (await db.query(text, params as unknown[])).rows as never,
    transaction: (work) => db.transaction((tx) => work({ query: async (text, params) => (await tx.query(text, params as unknown[])).rows as never })),
    tryWriterLock: async () => true,
    async copyOut(select) {
      const { blob } = await db.query(`copy (${select}) to '/dev/blob' with (format binary)`);
      if (!blob) throw new Error(`PGlite gave no rows for: ${select}`);
      return new Uint8Array(await blob.arrayBuffer());
    },
    freeBytes: () => {
      const disk = statfsSync(folder);
      return disk.bavail * disk.bsize;
    },
    close: () => db.close(),
  };
}

/** The write-ahead log's segment size of an existing embedded index, in MB (its segment files' size). */
function walSegmentMbOf(folder: string): number {
  const wal = join(folder, 'pg_wal');
  const segment = existsSync(wal) ? readdirSync(wal).find((name) => /^[0-9A-F]{24}$/.test(name)) : undefined;
  return segment ? Math.max(1, Math.round(statSync(join(wal, segment)).size / 2 ** 20)) : 16;
}

/**
 * A PostgreSQL server with pgvector, through the `pg` driver: one connection, its queries one at
 * a time (a transaction holds it whole), and the writer lock a session advisory lock on it.
 */
export async function openPostgres(url: string): Promise<Sql> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  // A dropped connection's error (the server restarted) fails the next query, not the process.
  client.on('error', () => {});
  await client.connect();
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const run = queue.then(work, work);
    queue = run.catch(() => {});
    return run;
  };
  const query = async (text: string, params?: readonly unknown[]) => (await client.query(text, params as unknown[])).rows;
  let locked = false;
  return {
    engine: 'postgres',
    where: redactPassword(url),
    query: (text, params) => serial(() => query(text, params)),
    transaction: (work) =>
      serial(async () => {
        await query('begin');
        try {
          const result = await work({ query });
          await query('commit');
          return result;
        } catch (error) {
          await query('rollback').catch(() => {});
          throw error;
        }
      }),
    freeBytes: () => null,
    async tryWriterLock() {
      if (!locked) locked = (await serial(() => query(`select pg_try_advisory_lock(hashtext('lexembed_index')) as ok`)))[0]?.ok === true;
      return locked;
    },
    close: () => client.end(),
  };
}

/** postgres://user:secret@host/db → postgres://user:***@host/db */
export function redactPassword(url: string): string {
  return url.replace(/^(postgres(?:ql)?:\/\/[^:/@]+:)[^@]*@/i, '$1***@');
}
