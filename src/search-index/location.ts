// Where an index is: a folder (PGlite inside it, locked by one process at a time) or a PostgreSQL
// URL. Opening says plainly what is wrong: a folder that is something else, an index in use, one
// that does not exist yet when only a search was asked for.
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { messageOf } from '../util/message-of.ts';
import { IndexError } from './schema.ts';
import { isPostgresUrl, openPglite, openPostgres, pageCacheSetting, type Sql } from './sql.ts';

/** The file that marks a folder as a lexembed index. */
export const MARKER_FILE = 'lexembed-index.json';
const MARKER = { format: 'lexembed-index', engine: 'pglite', database: 'pgdata' };

/**
 * Opens the index at `location`. `create` makes a missing folder index (for writers); a search of
 * a missing one is an IndexError saying how to make it.
 */
export async function openLocation(location: string, options: { create: boolean }): Promise<Sql> {
  if (isPostgresUrl(location)) {
    try {
      const sql = await openPostgres(location);
      await sql.query('select 1');
      return sql;
    } catch (error) {
      throw new IndexError(`cannot reach the PostgreSQL server ${location.replace(/:[^:@/]*@/, ':***@')}: ${messageOf(error)}; is it running, is the URL right, and does it have pgvector (create extension vector)?`);
    }
  }
  // A setting that cannot be used stops the open before a new folder is made.
  try {
    pageCacheSetting();
  } catch (error) {
    throw new IndexError(messageOf(error));
  }
  const folder = resolve(location);
  if (!existsSync(folder)) {
    if (!options.create) throw new IndexError(`no index at ${location}: make one with lexembed index <folder of documents> --index ${location}`);
    mkdirSync(folder, { recursive: true });
  }
  if (!statSync(folder).isDirectory()) throw new IndexError(`${location} is a file, not an index folder: give the folder lexembed index made (or a new one), or a postgres:// URL`);
  const marker = join(folder, MARKER_FILE);
  if (!existsSync(marker)) {
    if (readdirSync(folder).length > 0) {
      throw new IndexError(
        options.create
          ? `${location} is not a lexembed index (it has no ${MARKER_FILE}) and is not empty: give an empty or new folder for a new index`
          : `${location} is not a lexembed index (it has no ${MARKER_FILE}): search the folder lexembed index made, or make one: lexembed index ${location} --index ${location.replace(/\/+$/, '')}.index`,
      );
    }
    if (!options.create) throw new IndexError(`no index at ${location}: make one with lexembed index <folder of documents> --index ${location}`);
    writeFileSync(marker, JSON.stringify(MARKER, null, 2) + '\n');
  } else {
    let found: unknown;
    try {
      found = JSON.parse(readFileSync(marker, 'utf8'));
    } catch (error) {
      throw new IndexError(`${marker} is not readable JSON (${messageOf(error)}): the index is damaged; remove ${location} and run lexembed index again`);
    }
    if ((found as { format?: string })?.format !== MARKER.format) throw new IndexError(`${marker} does not describe a lexembed index: give another folder`);
  }
  const release = takeFolderLock(folder, location);
  try {
    const sql = await openPglite(join(folder, MARKER.database), location);
    return { ...sql, folder, close: async () => (await sql.close(), release()) };
  } catch (error) {
    release();
    if (error instanceof IndexError) throw error;
    throw new IndexError(`the index at ${location} cannot be opened (${messageOf(error)}): it may be damaged; remove it and run lexembed index again`);
  }
}

/**
 * Fails fast, before a model is loaded, when the folder index at `location` is held by a live
 * process (opening it would be refused anyway); a URL or a free folder passes.
 */
export function checkNotInUse(location: string): void {
  if (isPostgresUrl(location)) return;
  const path = join(resolve(location), 'lock');
  if (!existsSync(path)) return;
  const holder = readLock(path);
  if (holder && holder.host === hostname() && !isAlive(holder.pid)) return;
  throw inUse(location, path, holder);
}

function inUse(location: string, path: string, holder: { pid: number; host: string } | null): IndexError {
  const who = holder ? `process ${holder.pid}${holder.host === hostname() ? '' : ` on ${holder.host}`}` : 'another process';
  return new IndexError(`the index at ${location} is in use by ${who} (a lexembed index, search, serve or mcp run): wait for it to finish, or send searches to the server that holds it (--remote). If no such process runs, remove ${path}`);
}

/**
 * The folder's lock: PGlite is one process's database, so one process at a time opens it (a
 * second index or search run is refused, not let in to corrupt it). A lock left by a killed
 * process (its pid gone) is taken over.
 */
function takeFolderLock(folder: string, location: string): () => void {
  const path = join(folder, 'lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, JSON.stringify({ pid: process.pid, host: hostname() }));
      closeSync(fd);
      return () => rmSync(path, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = readLock(path);
      if (holder && holder.host === hostname() && !isAlive(holder.pid)) {
        rmSync(path, { force: true });
        continue;
      }
      throw inUse(location, path, holder);
    }
  }
  throw new IndexError(`cannot take the lock ${path}: remove it if no lexembed process uses the index`);
}

function readLock(path: string): { pid: number; host: string } | null {
  try {
    const lock = JSON.parse(readFileSync(path, 'utf8')) as { pid: number; host: string };
    return typeof lock.pid === 'number' ? lock : null;
  } catch {
    return null; // being written this instant, or torn: treated as held
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
