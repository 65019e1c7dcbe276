// Bringing an index up to date with folders of documents: files are told apart by path and
// content hash, so a run embeds only what is new or changed, moves what was renamed, removes what
// is gone and counts each kind. Each file's passages are written in one transaction: a run killed
// at any point leaves every file either fully indexed in its old or its new version, and the next
// run finishes the rest. A file that cannot be read is reported with the reason, never skipped
// in silence, and is tried again by the next run.
import { createHash } from 'node:crypto';
import { readFileSync, statSync, type Stats } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { DocumentError, unitAt } from '../documents/extract.ts';
import { DocumentReader, listDocuments } from '../node/documents.ts';
import { contextOf } from './context.ts';
import { dropDenseGraph, dropSparseTermsIndex, IndexError } from './schema.ts';
import type { IndexModel } from './model.ts';
import { insertFile, listFiles, removeFile, renameFile, type IndexedFile, type NewPassage, VACUUM_COUNTS_EVERY, vacuumCounts } from './store.ts';
import type { Sql } from './sql.ts';

/** What a run did, file by file counted. */
export interface UpdateReport {
  added: string[];
  changed: string[];
  renamed: { from: string; to: string }[];
  removed: string[];
  unchanged: number;
  /** Files that could not be read (with why): not in the index, tried again next run. */
  failed: { file: string; reason: string }[];
  /** Files of kinds the index does not read (not PDF, DOCX, TXT or Markdown). */
  ignored: string[];
  passagesAdded: number;
}

export type UpdateEvent =
  | { kind: 'file'; file: string; passages: number; done: number; total: number }
  | { kind: 'failed'; file: string; reason: string }
  /** The dense graph is being built over the passages of a first load (index.ts): minutes at a million. */
  | { kind: 'graph'; passages: number };

/** Passages embedded per model call. */
const EMBED_BATCH = 32;
/**
 * Free disk a folder index keeps before it writes a file: PGlite stops and does not recover
 * cleanly when its disk fills (measured: the process hangs), and it may start a 16 MB write-ahead
 * log segment at any write; and about this much per passage (a passage's row, its index entries
 * and their log, 16.7 KB measured at 100,000 passages, doubled).
 */
const RESERVED_FREE_BYTES = 64 * 1024 * 1024;
const BYTES_PER_PASSAGE = 40 * 1024;

interface FoundFile {
  readonly root: string;
  readonly path: string;
  readonly abs: string;
  readonly sha256: string;
  readonly bytes: number;
}

/** Indexes what changed under `inputs` (folders or files) since the last run. */
export async function updateIndex(sql: Sql, model: IndexModel, chunkTokens: number, vocabularySize: number, inputs: readonly string[], onEvent: (e: UpdateEvent) => void = () => {}): Promise<UpdateReport> {
  const report: UpdateReport = { added: [], changed: [], renamed: [], removed: [], unchanged: 0, failed: [], ignored: [], passagesAdded: 0 };
  const found = new Map<string, FoundFile[]>();
  // Files missing from a folder given are removed; a file given alone removes nothing else.
  const folders = new Set<string>();
  for (const input of inputs) {
    const { root, files, ignored, folder } = findFiles(input);
    report.ignored.push(...ignored);
    found.set(root, [...(found.get(root) ?? []), ...files]);
    if (folder) folders.add(root);
  }
  const indexed = await listFiles(sql);
  const toEmbed: { file: FoundFile; replaces: IndexedFile | null }[] = [];
  const moves: { file: IndexedFile; to: FoundFile }[] = [];
  const removals: IndexedFile[] = [];
  for (const [root, files] of found) {
    const before = new Map(indexed.filter((f) => f.root === root).map((f) => [f.path, f]));
    const now = new Map(files.map((f) => [f.path, f]));
    const gone = folders.has(root) ? [...before.values()].filter((f) => !now.has(f.path)) : [];
    for (const file of files) {
      const old = before.get(file.path);
      if (old?.sha256 === file.sha256) report.unchanged++;
      else if (old) toEmbed.push({ file, replaces: old });
      else {
        const moved = gone.findIndex((g) => g.sha256 === file.sha256);
        if (moved >= 0) moves.push({ file: gone.splice(moved, 1)[0]!, to: file });
        else toEmbed.push({ file, replaces: null });
      }
    }
    removals.push(...gone);
  }
  if (moves.length || removals.length) {
    await sql.transaction(async (tx) => {
      for (const m of moves) await renameFile(tx, m.file.id, m.to.root, m.to.path);
      for (const r of removals) await removeFile(tx, r.id);
    });
    report.renamed.push(...moves.map((m) => ({ from: m.file.path, to: m.to.path })));
    report.removed.push(...removals.map((r) => r.path));
  }

  // A server index's first load writes its passages before the dense graph, which is built over
  // them at the end; an embedded index has no graph nor the sparse terms' GIN index (one made
  // before loses them before its writes: its sign bits and postings files take their place).
  if (sql.engine === 'pglite' || (!indexed.length && toEmbed.length)) await dropDenseGraph(sql);
  if (sql.engine === 'pglite') await dropSparseTermsIndex(sql);
  const reader = new DocumentReader(toEmbed.map(({ file }) => ({ id: file.path, path: file.abs })));
  const since = { files: 0, passages: 0 };
  for (const [i, { file, replaces }] of toEmbed.entries()) {
    const doc = await reader.extract({ id: file.path, path: file.abs });
    if (doc instanceof Error) {
      const why = doc instanceof DocumentError ? doc.reason : doc.message.startsWith(`${file.path}: `) ? doc.message.slice(file.path.length + 2) : doc.message;
      const reason = replaces ? `${why} (the index keeps the version it read before)` : why;
      report.failed.push({ file: file.path, reason });
      onEvent({ kind: 'failed', file: file.path, reason });
      continue;
    }
    const chunks = model.chunk(doc.text, chunkTokens).filter((c) => /\S/.test(c.text));
    const passages: NewPassage[] = [];
    for (let at = 0; at < chunks.length; at += EMBED_BATCH) {
      const batch = chunks.slice(at, at + EMBED_BATCH);
      const { dense, sparse } = await model.embedPassages(batch.map((c) => c.text));
      batch.forEach((c, j) =>
        passages.push({ chunk: at + j, start: c.start, end: c.end, unitFirst: unitAt(doc, c.start), unitLast: unitAt(doc, Math.max(c.start, c.end - 1)), body: c.text, dense: dense[j]!, sparse: sparse[j]! }),
      );
    }
    checkFreeSpace(sql, file.path, passages.length, report);
    const context = contextOf(doc.text);
    const [contextSparse] = await model.sparseOf([context], 'relative');
    await sql.transaction(async (tx) => {
      if (replaces) await removeFile(tx, replaces.id);
      await insertFile(tx, { root: file.root, path: file.path, sha256: file.sha256, bytes: file.bytes, unit: doc.unit, context, contextSparse: contextSparse! }, passages, vocabularySize);
    });
    (replaces ? report.changed : report.added).push(file.path);
    report.passagesAdded += passages.length;
    since.files++;
    since.passages += passages.length;
    if (since.files >= VACUUM_COUNTS_EVERY.files || since.passages >= VACUUM_COUNTS_EVERY.passages) {
      await vacuumCounts(sql);
      since.files = since.passages = 0;
    }
    onEvent({ kind: 'file', file: file.path, passages: passages.length, done: i + 1, total: toEmbed.length });
  }
  return report;
}

/**
 * Stops the run, with the fix, before a write that could fill the disk of a folder index: every
 * file written so far stays indexed, and the next run goes on from there.
 */
function checkFreeSpace(sql: Sql, file: string, passages: number, report: UpdateReport): void {
  const free = sql.freeBytes();
  const needed = RESERVED_FREE_BYTES + passages * BYTES_PER_PASSAGE;
  if (free === null || free >= needed) return;
  const mb = (n: number) => `${Math.floor(n / 1024 / 1024)} MB`;
  const done = report.added.length + report.changed.length;
  throw new IndexError(
    `the disk that holds ${sql.where} has ${mb(free)} free, and writing ${file} (${passages} passages) safely needs ${mb(needed)}: free some space, or index into a location on a bigger disk, and run lexembed index again. Nothing was lost: the ${done} files written in this run, and all indexed before, are kept, and the next run goes on from ${file}`,
  );
}

/** The document files under one input (a folder, walked; or one file), hashed. */
function findFiles(input: string): { root: string; files: FoundFile[]; ignored: string[]; folder: boolean } {
  let stat: Stats;
  try {
    stat = statSync(input);
  } catch {
    throw new IndexError(`no such file or folder: ${input}. Nothing was changed in the index; to take a folder's files out of it, run lexembed index with the folder emptied, or index into a new location`);
  }
  const root = resolve(stat.isDirectory() ? input : dirname(input));
  const folder = stat.isDirectory();
  const { files, ignored } = stat.isDirectory() ? listDocuments([input]) : { files: [{ id: basename(input), path: input }], ignored: [] };
  return {
    root,
    ignored,
    folder,
    files: files.map((f) => {
      const bytes = readFileSync(f.path);
      return { root, path: f.id, abs: f.path, sha256: createHash('sha256').update(bytes).digest('hex'), bytes: bytes.length };
    }),
  };
}
