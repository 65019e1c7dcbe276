// The embedded index's sparse side: an inverted index whose postings carry their weights, in files
// beside the database (POSTINGS_FOLDER), so a query adds up its terms' postings instead of asking
// PGlite for thousands of candidates' whole sparse vectors. Why not the engine: PGlite answers the
// sparse list from a GIN index of terms and then reads each candidate's row and its 180-term
// vector: at 113,697 real passages 22 ms a query, most of it visiting the rows; the postings give
// the exact idf-weighted dot product of every passage holding a query term in a few milliseconds.
//
// Segments: each a file of the postings of a range of passages (term directory, then per term its
// passages' ids and weights in id order), listed by a manifest written last (write, then rename),
// so a run killed at any point leaves the manifest and files of before it. Passages written since
// the manifest's last id make a new segment (ids only grow); those of files gone are dropped at
// search time by the sign bits' table (which holds exactly the passages the index has) and from a
// segment when it is rewritten; small segments at the end are merged, so there are few.
import { closeSync, fstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { type SignBitsTable, writeAll } from './sign-bits.ts';
import type { SqlQuery } from './sql.ts';

/** The folder, in an index folder, of the sparse postings' segments and their manifest. */
export const POSTINGS_FOLDER = 'sparse-postings';

/** A segment changed under the process that holds it open (cut short, or unreadable): it is to be opened (checked) again. */
export class PostingsDamaged extends Error {
  override readonly name = 'PostingsDamaged';
}

/** A binary COPY of a select (Sql.copyOut: PGlite's). */
type Copy = (select: string) => Promise<Uint8Array>;

const MANIFEST = 'manifest.json';
/** 2: the segments' checksums are CRC-32 (format 1's, a sum of words by place, missed a sign flipped in every weight). */
const MANIFEST_FORMAT = 2;
const SEGMENT_MAGIC = 'LXSPOST1';
/**
 * A segment file: SEGMENT_MAGIC, then (u32) its passages, terms and postings; then the passages'
 * ids (u32 each, ascending), their sparse vectors' CRC-32s, the terms in order (u32), where each term's postings start (u32, one more than
 * the terms), and the postings: per term, in passage id order, the id (u32) and weight (f32).
 */
const SEGMENT_HEADER_BYTES = 20;
/** Passages per segment at most: the postings of 50,000 real passages are about 72 MB, inverted in memory when written. */
const SEGMENT_PASSAGES = 50_000;
/**
 * Passage ids read by one COPY: PGlite gathers a COPY in its own memory, which never shrinks, and a
 * real passage's sparse vector is about 1.5 KB (20,000 of them, 30 MB).
 */
const COPY_RANGE = 20_000;
/** A segment whose passages are more than this share gone (files removed or changed) is written again without them. */
const GONE_SHARE = 0.25;
/** The last passages read compared with the database's when the postings are opened (lastAreTheDatabases). */
const SAMPLED = 32;
/** Bytes read at a time to check a segment's checksum. */
const READ_CHUNK = 1 << 20;

interface SegmentEntry {
  readonly file: string;
  readonly passages: number;
  readonly postings: number;
  readonly bytes: number;
  readonly checksum: number;
}

interface Manifest {
  readonly format: number;
  /** PostgreSQL's system identifier: a folder whose database was made again is another. */
  readonly database: string;
  readonly vocabularySize: number;
  /** The last passage id the segments were read up to. */
  readonly last: number;
  readonly segments: readonly SegmentEntry[];
}

/** A segment's postings as written or merged: per term (in order), its passages' ids and weights. */
interface Inverted {
  readonly passages: Uint32Array;
  /** Each passage's sparse vector's CRC-32 (its terms, then its values), to compare with the database's (lastAreTheDatabases). */
  readonly hashes: Uint32Array;
  readonly terms: Uint32Array;
  readonly starts: Uint32Array;
  readonly ids: Uint32Array;
  readonly weights: Float32Array;
}

/** A query's terms (ascending) and their weights (the query's value times the term's idf). */
export interface WeightedTerms {
  readonly terms: readonly number[];
  readonly weights: readonly number[];
}

/** The postings of the embedded index at `folder`, brought up to date with `table` (the passages the index holds). */
export async function openPostings(sql: SqlQuery, copy: Copy, folder: string, table: SignBitsTable, vocabularySize: number, held?: SparsePostings): Promise<SparsePostings> {
  const where = join(folder, POSTINGS_FOLDER);
  // The same table (sign-bits.ts makes a new one whenever the passages change): the same passages.
  if (held && held.where === where && held.table === table) return held;
  return SparsePostings.open(sql, copy, where, table, vocabularySize, held);
}

/**
 * Closes a segment's file once nothing holds the segment: a segment is shared by the postings of
 * before and after an update (a search may still be reading the ones of before), and those an
 * update merges away are closed when the last search holding them is done.
 */
const unheld = new FinalizationRegistry<number>((fd) => {
  try {
    closeSync(fd);
  } catch {
    // Closed already.
  }
});

/** A segment open for reading: its term directory in memory, its postings read from the file per term. */
class Segment {
  private constructor(
    readonly entry: SegmentEntry,
    private readonly fd: number,
    readonly passages: Uint32Array,
    readonly hashes: Uint32Array,
    private readonly terms: Uint32Array,
    private readonly starts: Uint32Array,
    private readonly postingsAt: number,
  ) {
    unheld.register(this, fd, this);
  }

  /** The segment in `path` if it is whole (its size and checksum the manifest's), else null. */
  static open(path: string, entry: SegmentEntry): Segment | null {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch {
      return null;
    }
    try {
      if (fstatSync(fd).size !== entry.bytes) throw new Error('size');
      const chunk = Buffer.alloc(Math.min(READ_CHUNK, entry.bytes));
      let checksum = 0;
      let head: Buffer | null = null;
      for (let at = 0; at < entry.bytes; ) {
        const n = readSync(fd, chunk, 0, Math.min(chunk.length, entry.bytes - at), at);
        if (n <= 0) throw new Error('short');
        checksum = crc32(chunk.subarray(0, n), checksum);
        if (at === 0) head = Buffer.from(chunk.subarray(0, Math.min(n, SEGMENT_HEADER_BYTES)));
        at += n;
      }
      if (checksum !== entry.checksum || !head || head.toString('latin1', 0, 8) !== SEGMENT_MAGIC) throw new Error('checksum');
      const passages = head.readUInt32LE(8);
      const terms = head.readUInt32LE(12);
      const postings = head.readUInt32LE(16);
      if (passages !== entry.passages || postings !== entry.postings) throw new Error('counts');
      const directory = Buffer.alloc(4 * (2 * passages + 2 * terms + 1));
      if (readSync(fd, directory, 0, directory.length, SEGMENT_HEADER_BYTES) !== directory.length) throw new Error('short');
      const words = new Uint32Array(directory.buffer, directory.byteOffset, directory.length >> 2);
      const postingsAt = SEGMENT_HEADER_BYTES + directory.length;
      if (postingsAt + 8 * postings !== entry.bytes) throw new Error('size');
      return new Segment(entry, fd, words.subarray(0, passages), words.subarray(passages, 2 * passages), words.subarray(2 * passages, 2 * passages + terms), words.subarray(2 * passages + terms), postingsAt);
    } catch {
      closeSync(fd);
      return null;
    }
  }

  /** Where `term`'s postings are (a range of posting numbers), or null where no passage here holds it. */
  range(term: number): [number, number] | null {
    const { terms } = this;
    let lo = 0;
    let hi = terms.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const t = terms[mid]!;
      if (t === term) return [this.starts[mid]!, this.starts[mid + 1]!];
      if (t < term) lo = mid + 1;
      else hi = mid - 1;
    }
    return null;
  }

  /** Postings `from` to `to` read into `into` (id and weight each, 8 bytes). */
  read(from: number, to: number, into: Buffer): void {
    const bytes = 8 * (to - from);
    let read: number;
    try {
      read = readSync(this.fd, into, 0, bytes, this.postingsAt + 8 * from);
    } catch (error) {
      throw new PostingsDamaged(`the sparse postings file ${this.entry.file} cannot be read (${(error as Error).message})`);
    }
    if (read !== bytes) throw new PostingsDamaged(`the sparse postings file ${this.entry.file} is shorter than written`);
  }

  /** Every posting, per term (to merge or rewrite the segment). */
  inverted(): Inverted {
    const all = Buffer.alloc(8 * this.entry.postings);
    this.read(0, this.entry.postings, all);
    const pairs = new Uint32Array(all.buffer, all.byteOffset, 2 * this.entry.postings);
    const ids = new Uint32Array(this.entry.postings);
    const weights = new Float32Array(this.entry.postings);
    const floats = new Float32Array(all.buffer, all.byteOffset, 2 * this.entry.postings);
    for (let i = 0; i < ids.length; i++) {
      ids[i] = pairs[2 * i]!;
      weights[i] = floats[2 * i + 1]!;
    }
    return { passages: this.passages, hashes: this.hashes, terms: this.terms, starts: this.starts, ids, weights };
  }

  /** Closes its file now (when the index is closed). */
  close(): void {
    if (!unheld.unregister(this)) return;
    closeSync(this.fd);
  }
}

export class SparsePostings {
  /** Scores by passage id (reused query to query: 0 after each), the ids touched, and the postings read. */
  private scores = new Float32Array(0);
  private touched: Uint32Array<ArrayBuffer> = new Uint32Array(1024);
  private buffer = Buffer.alloc(1 << 16);

  private constructor(
    readonly where: string,
    readonly table: SignBitsTable,
    private readonly segments: readonly Segment[],
  ) {
    const rows = table.rowsById();
    this.live = segments.map((s) => s.passages.every((id) => id < rows.length && rows[id]! >= 0));
  }

  /** Per segment, whether every passage it holds is in the table (none of a file gone). */
  private readonly live: boolean[];

  /**
   * The postings in `where` brought up to `table`'s passages: segments of the manifest that are
   * whole and of this database kept (those `held` has open, shared), the passages written since read
   * from the database into new ones; where a segment is missing or damaged, or the segments'
   * passages are not exactly the table's, all read again from the database.
   */
  static async open(sql: SqlQuery, copy: Copy, where: string, table: SignBitsTable, vocabularySize: number, held?: SparsePostings): Promise<SparsePostings> {
    const { database, last } = table.stamp;
    mkdirSync(where, { recursive: true });
    const manifest = readManifest(where);
    const reusable = new Map(held?.segments.map((s) => [s.entry.file, s]));
    let segments: Segment[] = [];
    let from = 0;
    if (manifest && manifest.database === database && manifest.vocabularySize === vocabularySize) {
      for (const entry of manifest.segments) {
        const open = reusable.get(entry.file) ?? Segment.open(join(where, entry.file), entry);
        if (!open) break;
        segments.push(open);
      }
      if (segments.length === manifest.segments.length) from = manifest.last;
      else segments = [];
    }
    const write = (inverted: Inverted) => writeSegment(where, inverted);
    segments.push(...(await readAfter(sql, copy, from, vocabularySize)).map(write));
    segments = compacted(segments, table, write);
    if (!holdsExactly(segments, table) || (from > 0 && !(await lastAreTheDatabases(copy, segments, from)))) {
      // Not the table's passages: read whole.
      segments = (await readAfter(sql, copy, 0, vocabularySize)).map(write);
      from = 0;
    }
    // Ids only grow: the highest read stays the place to read on from, even once its file is gone.
    const upTo = Math.max(from, last);
    const names = segments.map((s) => s.entry.file);
    if (!manifest || upTo !== manifest.last || names.join() !== manifest.segments.map((e) => e.file).join()) {
      writeManifest(where, { format: MANIFEST_FORMAT, database, vocabularySize, last: upTo, segments: segments.map((s) => s.entry) });
    }
    // Files of segments merged away, or written by a run killed before its manifest (a search of
    // the postings of before may still read those it holds open).
    const kept = new Set([...names, MANIFEST]);
    for (const name of readdirSync(where)) if (!kept.has(name)) rmSync(join(where, name), { force: true });
    return new SparsePostings(where, table, segments);
  }

  /**
   * The `length` passages with the highest dot product with the query (each weight times the
   * passage's value of the term, summed in float32 as pgvector sums it), of every passage that holds
   * one of its terms, those of files `allowed` passes where it is given; best first (ties by id).
   */
  top(query: WeightedTerms, length: number, allowed?: (file: number) => boolean): { id: string; score: number }[] {
    const rows = this.table.rowsById();
    if (this.scores.length < rows.length) this.scores = new Float32Array(rows.length);
    const { scores } = this;
    let touched = 0;
    for (let segmentAt = 0; segmentAt < this.segments.length; segmentAt++) {
      const segment = this.segments[segmentAt]!;
      for (let k = 0; k < query.terms.length; k++) {
        const range = segment.range(query.terms[k]!);
        if (!range) continue;
        const n = range[1] - range[0];
        if (this.buffer.length < 8 * n) this.buffer = Buffer.alloc(8 * n * 2);
        segment.read(range[0], range[1], this.buffer);
        const ids = new Uint32Array(this.buffer.buffer, this.buffer.byteOffset, 2 * n);
        const values = new Float32Array(this.buffer.buffer, this.buffer.byteOffset, 2 * n);
        const weight = Math.fround(query.weights[k]!);
        if (this.touched.length < touched + n) this.touched = growTo(this.touched, touched + n);
        touched = accumulate(ids, values, n, weight, scores, this.touched, touched, this.live[segmentAt] ? null : rows);
      }
    }
    const best = new TopScores(length);
    for (let i = 0; i < touched; i++) {
      const id = this.touched[i]!;
      const score = scores[id]!;
      // Listed twice (a weight so small its product was 0): counted at its first.
      if (score === 0) continue;
      scores[id] = 0;
      if (score > 0 && (!allowed || allowed(this.table.fileOfRow(rows[id]!)))) best.offer(id, score);
    }
    return best.sorted().map(({ id, score }) => ({ id: String(id), score }));
  }

  close(): void {
    for (const s of this.segments) s.close();
  }
}

/**
 * Adds a term's `n` postings (id and value, interleaved) times its weight to the passages' scores,
 * listing in `list` from `touched` on each passage it scores first; the new length of the list. With
 * `rows`, the passages the table does not hold (of files gone) are passed over.
 */
function accumulate(ids: Uint32Array, values: Float32Array, n: number, weight: number, scores: Float32Array, list: Uint32Array, touched: number, rows: Int32Array | null): number {
  // Every weight and value is above 0, so a score of 0 is one not yet listed.
  for (let i = 0; i < 2 * n; i += 2) {
    const id = ids[i]!;
    if (rows !== null && (id >= rows.length || rows[id]! < 0)) continue;
    const score = scores[id]!;
    if (score === 0) list[touched++] = id;
    scores[id] = score + Math.fround(weight * values[i + 1]!);
  }
  return touched;
}

/** The `length` best (score, then the lower id) of those offered. */
class TopScores {
  private readonly ids: number[] = [];
  private readonly scores: number[] = [];
  constructor(private readonly length: number) {}

  offer(id: number, score: number): void {
    const { ids, scores } = this;
    if (ids.length === this.length && !better(score, id, scores[0]!, ids[0]!)) return;
    // A min-heap on (score, id): its root the worst kept.
    if (ids.length < this.length) {
      ids.push(id);
      scores.push(score);
      for (let i = ids.length - 1; i > 0; ) {
        const up = (i - 1) >> 1;
        if (!better(scores[up]!, ids[up]!, scores[i]!, ids[i]!)) break;
        swap(ids, scores, i, up);
        i = up;
      }
      return;
    }
    ids[0] = id;
    scores[0] = score;
    for (let i = 0; ; ) {
      const l = 2 * i + 1;
      const r = l + 1;
      let worst = i;
      if (l < ids.length && better(scores[worst]!, ids[worst]!, scores[l]!, ids[l]!)) worst = l;
      if (r < ids.length && better(scores[worst]!, ids[worst]!, scores[r]!, ids[r]!)) worst = r;
      if (worst === i) break;
      swap(ids, scores, i, worst);
      i = worst;
    }
  }

  sorted(): { id: number; score: number }[] {
    return this.ids.map((id, i) => ({ id, score: this.scores[i]! })).sort((a, b) => b.score - a.score || a.id - b.id);
  }
}

const better = (score: number, id: number, than: number, thanId: number) => score > than || (score === than && id < thanId);

function swap(ids: number[], scores: number[], i: number, j: number): void {
  [ids[i], ids[j]] = [ids[j]!, ids[i]!];
  [scores[i], scores[j]] = [scores[j]!, scores[i]!];
}

function growTo(array: Uint32Array, length: number): Uint32Array<ArrayBuffer> {
  const grown = new Uint32Array(Math.max(length, array.length * 2));
  grown.set(array);
  return grown;
}

/**
 * Whether the last passages the segments were read up to (SAMPLED of them) have the database's
 * sparse vectors: a database restored from a backup under newer postings has other passages under
 * the same ids, which the ids alone do not tell.
 */
async function lastAreTheDatabases(copy: Copy, segments: readonly Segment[], last: number): Promise<boolean> {
  const rows = parsedRows(await copy(`select id, sparse from lexembed_sparse where id <= ${last} order by id desc limit ${SAMPLED}`));
  const hashes = hashesOf(rows);
  return [...rows.ids].every((id, r) => {
    for (const s of segments) {
      const at = indexOf(s.passages, id);
      if (at >= 0) return s.hashes[at] === hashes[r];
    }
    return false;
  });
}

/** Where `value` is in the ascending `array`, or -1. */
function indexOf(array: Uint32Array, value: number): number {
  for (let lo = 0, hi = array.length - 1; lo <= hi; ) {
    const mid = (lo + hi) >>> 1;
    if (array[mid] === value) return mid;
    if (array[mid]! < value) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/** Whether the segments hold every passage of the table once, and none other it has. */
function holdsExactly(segments: readonly Segment[], table: SignBitsTable): boolean {
  const rows = table.rowsById();
  const seen = new Uint8Array(table.count);
  let held = 0;
  for (const s of segments) {
    for (const id of s.passages) {
      const row = id < rows.length ? rows[id]! : -1;
      if (row < 0) continue;
      if (seen[row]) return false;
      seen[row] = 1;
      held++;
    }
  }
  return held === table.count;
}

/**
 * The segments with those more than GONE_SHARE gone written again without them, and each last
 * segment merged with the one before it while the two fit in one and it is at least half the size
 * of that one (so a run that adds a file makes a small segment, and many runs a few).
 */
function compacted(segments: readonly Segment[], table: SignBitsTable, write: (inverted: Inverted) => Segment): Segment[] {
  const rows = table.rowsById();
  const live = (id: number) => id < rows.length && rows[id]! >= 0;
  const out: Segment[] = [];
  for (const s of segments) {
    const gone = s.passages.reduce((n, id) => n + (live(id) ? 0 : 1), 0);
    if (gone > s.entry.passages * GONE_SHARE) {
      const kept = filtered(s.inverted(), live);
      if (kept.passages.length) out.push(write(kept));
    } else out.push(s);
    for (;;) {
      const b = out[out.length - 1];
      const a = out[out.length - 2];
      if (!a || !b || a.entry.passages + b.entry.passages > SEGMENT_PASSAGES || 2 * b.entry.passages < a.entry.passages) break;
      out.splice(-2, 2, write(filtered(mergedInverted(a.inverted(), b.inverted()), live)));
    }
  }
  return out;
}

/** Two segments' postings as one (`b`'s passages after `a`'s, so each term's stay in id order). */
function mergedInverted(a: Inverted, b: Inverted): Inverted {
  const terms: number[] = [];
  const starts: number[] = [0];
  const ids = new Uint32Array(a.ids.length + b.ids.length);
  const weights = new Float32Array(ids.length);
  let n = 0;
  const copy = (from: Inverted, k: number) => {
    for (let p = from.starts[k]!; p < from.starts[k + 1]!; p++, n++) {
      ids[n] = from.ids[p]!;
      weights[n] = from.weights[p]!;
    }
  };
  for (let i = 0, j = 0; i < a.terms.length || j < b.terms.length; ) {
    const ta = i < a.terms.length ? a.terms[i]! : Infinity;
    const tb = j < b.terms.length ? b.terms[j]! : Infinity;
    const term = Math.min(ta, tb);
    if (ta === term) copy(a, i++);
    if (tb === term) copy(b, j++);
    terms.push(term);
    starts.push(n);
  }
  const passages = new Uint32Array(a.passages.length + b.passages.length);
  passages.set(a.passages);
  passages.set(b.passages, a.passages.length);
  const hashes = new Uint32Array(passages.length);
  hashes.set(a.hashes);
  hashes.set(b.hashes, a.hashes.length);
  return { passages, hashes, terms: Uint32Array.from(terms), starts: Uint32Array.from(starts), ids, weights };
}

/** The postings of the passages `keep` passes. */
function filtered(x: Inverted, keep: (id: number) => boolean): Inverted {
  const terms: number[] = [];
  const starts: number[] = [0];
  const ids = new Uint32Array(x.ids.length);
  const weights = new Float32Array(x.ids.length);
  let n = 0;
  for (let k = 0; k < x.terms.length; k++) {
    const before = n;
    for (let p = x.starts[k]!; p < x.starts[k + 1]!; p++) {
      if (!keep(x.ids[p]!)) continue;
      ids[n] = x.ids[p]!;
      weights[n++] = x.weights[p]!;
    }
    if (n > before) {
      terms.push(x.terms[k]!);
      starts.push(n);
    }
  }
  return { passages: x.passages.filter(keep), hashes: x.hashes.filter((_, i) => keep(x.passages[i]!)), terms: Uint32Array.from(terms), starts: Uint32Array.from(starts), ids: ids.slice(0, n), weights: weights.slice(0, n) };
}

/**
 * The sparse vectors of the passages with ids above `after`, read COPY_RANGE ids at a time and
 * inverted SEGMENT_PASSAGES passages at a time.
 */
async function readAfter(sql: SqlQuery, copy: Copy, after: number, vocabularySize: number): Promise<Inverted[]> {
  const [range] = await sql.query<{ first: string | null; last: string | null }>('select min(id)::text as first, max(id)::text as last from lexembed_sparse where id > $1', [after]);
  const first = Number(range?.first ?? 1);
  const last = Number(range?.last ?? 0);
  if (last >= 2 ** 32) throw new Error(`passage ids above 2^32 (${last}): the sparse postings hold 32-bit ids`);
  const out: Inverted[] = [];
  let rows: ParsedRows[] = [];
  let held = 0;
  const flush = () => {
    if (held) out.push(inverted(rows, vocabularySize));
    rows = [];
    held = 0;
  };
  for (let from = first; from <= last; from += COPY_RANGE) {
    const part = parsedRows(await copy(`select id, sparse from lexembed_sparse where id >= ${from} and id < ${from + COPY_RANGE} order by id`));
    rows.push(part);
    held += part.ids.length;
    if (held >= SEGMENT_PASSAGES) flush();
  }
  flush();
  return out;
}

/** Passages' ids and sparse vectors as read: the i-th's terms and values from offsets[i] to offsets[i + 1]. */
interface ParsedRows {
  readonly ids: Uint32Array;
  readonly offsets: Uint32Array;
  readonly terms: Uint32Array;
  readonly values: Float32Array;
}

/**
 * Rows of (id bigint, sparse sparsevec) in PostgreSQL's binary COPY format; pgvector's sparsevec_send
 * writes the dimensions, the count, a word unused, the indices (from 0) and the values (float4).
 */
function parsedRows(data: Uint8Array): ParsedRows {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const wrong = (what: string) => new Error(`the index's sparse vectors are not as written (${what})`);
  const ids: number[] = [];
  const offsets: number[] = [0];
  let total = 0;
  let at = 11 + 4 + 4 + view.getInt32(11 + 4);
  // First pass: the rows' places and sizes.
  const places: number[] = [];
  for (;;) {
    if (at + 2 > data.length) throw wrong('no end');
    const fields = view.getInt16(at);
    if (fields === -1) break;
    if (fields !== 2 || view.getInt32(at + 2) !== 8) throw wrong(`row ${ids.length + 1}`);
    ids.push(Number(view.getBigInt64(at + 6)));
    const bytes = view.getInt32(at + 14);
    const nnz = view.getInt32(at + 22);
    if (bytes !== 12 + 8 * nnz) throw wrong(`row ${ids.length}'s vector`);
    places.push(at + 30);
    total += nnz;
    offsets.push(total);
    at += 18 + bytes;
  }
  const terms = new Uint32Array(total);
  const values = new Float32Array(total);
  for (let r = 0; r < places.length; r++) {
    const start = offsets[r]!;
    const nnz = offsets[r + 1]! - start;
    const place = places[r]!;
    for (let i = 0; i < nnz; i++) {
      terms[start + i] = view.getInt32(place + 4 * i);
      values[start + i] = view.getFloat32(place + 4 * nnz + 4 * i);
    }
  }
  return { ids: Uint32Array.from(ids), offsets: Uint32Array.from(offsets), terms, values };
}

/** Rows (in id order) inverted: per term, the passages holding it in id order, with their values. */
function inverted(parts: readonly ParsedRows[], vocabularySize: number): Inverted {
  // A count per term of the vocabulary (hashed terms: 16.8 million, 67 MB while a segment is made).
  const cursor = new Uint32Array(vocabularySize + 1);
  let postings = 0;
  for (const part of parts) {
    for (const term of part.terms) {
      if (term >= vocabularySize) throw new Error(`the index's sparse vectors hold term ${term}, beyond its vocabulary of ${vocabularySize}`);
      cursor[term]!++;
    }
    postings += part.terms.length;
  }
  const terms: number[] = [];
  const starts: number[] = [];
  let at = 0;
  for (let t = 0; t < vocabularySize; t++) {
    const n = cursor[t]!;
    if (!n) continue;
    terms.push(t);
    starts.push(at);
    cursor[t] = at;
    at += n;
  }
  starts.push(at);
  const ids = new Uint32Array(postings);
  const weights = new Float32Array(postings);
  for (const part of parts) {
    for (let r = 0; r < part.ids.length; r++) {
      for (let p = part.offsets[r]!; p < part.offsets[r + 1]!; p++) {
        const slot = cursor[part.terms[p]!]!++;
        ids[slot] = part.ids[r]!;
        weights[slot] = part.values[p]!;
      }
    }
  }
  const passages = new Uint32Array(parts.reduce((n, p) => n + p.ids.length, 0));
  const hashes = new Uint32Array(passages.length);
  let r = 0;
  for (const part of parts) {
    passages.set(part.ids, r);
    hashes.set(hashesOf(part), r);
    r += part.ids.length;
  }
  return { passages, hashes, terms: Uint32Array.from(terms), starts: Uint32Array.from(starts), ids, weights };
}

/** Each row's sparse vector's CRC-32: its terms' bytes, then its values'. */
function hashesOf(rows: ParsedRows): Uint32Array {
  return Uint32Array.from(rows.ids, (_, r) => {
    const [from, to] = [rows.offsets[r]!, rows.offsets[r + 1]!];
    const terms = new Uint8Array(rows.terms.buffer, rows.terms.byteOffset + 4 * from, 4 * (to - from));
    return crc32(new Uint8Array(rows.values.buffer, rows.values.byteOffset + 4 * from, 4 * (to - from)), crc32(terms));
  });
}

/** Writes a segment file (then renamed into place) and opens it. */
function writeSegment(where: string, x: Inverted): Segment {
  const head = Buffer.alloc(SEGMENT_HEADER_BYTES);
  head.write(SEGMENT_MAGIC, 0, 'latin1');
  head.writeUInt32LE(x.passages.length, 8);
  head.writeUInt32LE(x.terms.length, 12);
  head.writeUInt32LE(x.ids.length, 16);
  const directory = Buffer.alloc(4 * (2 * x.passages.length + x.terms.length + x.starts.length));
  const words = new Uint32Array(directory.buffer, directory.byteOffset, directory.length >> 2);
  words.set(x.passages);
  words.set(x.hashes, x.passages.length);
  words.set(x.terms, 2 * x.passages.length);
  words.set(x.starts, 2 * x.passages.length + x.terms.length);
  const name = `segment-${x.passages[0] ?? 0}-${x.passages[x.passages.length - 1] ?? 0}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  const path = join(where, name);
  const partial = `${path}.partial`;
  const fd = openSync(partial, 'w');
  let checksum = 0;
  let at = 0;
  try {
    const put = (data: Uint8Array) => {
      checksum = crc32(data, checksum);
      writeAll(fd, data, at);
      at += data.length;
    };
    put(head);
    put(directory);
    const block = Buffer.alloc(8 * Math.min(x.ids.length, 1 << 20) || 8);
    const pairs = new Uint32Array(block.buffer, block.byteOffset, block.length >> 2);
    const floats = new Float32Array(block.buffer, block.byteOffset, block.length >> 2);
    for (let first = 0; first < x.ids.length; first += block.length >> 3) {
      const n = Math.min(block.length >> 3, x.ids.length - first);
      for (let i = 0; i < n; i++) {
        pairs[2 * i] = x.ids[first + i]!;
        floats[2 * i + 1] = x.weights[first + i]!;
      }
      put(block.subarray(0, 8 * n));
    }
  } finally {
    closeSync(fd);
  }
  renameSync(partial, path);
  const entry = { file: name, passages: x.passages.length, postings: x.ids.length, bytes: at, checksum };
  const segment = Segment.open(path, entry);
  if (!segment) throw new Error(`the sparse postings segment ${path} just written cannot be read back`);
  return segment;
}

function readManifest(where: string): Manifest | null {
  try {
    const m = JSON.parse(readFileSync(join(where, MANIFEST), 'utf8')) as Manifest;
    return m.format === MANIFEST_FORMAT && Array.isArray(m.segments) ? m : null;
  } catch {
    return null;
  }
}

function writeManifest(where: string, manifest: Manifest): void {
  const path = join(where, MANIFEST);
  writeFileSync(`${path}.partial`, JSON.stringify(manifest));
  renameSync(`${path}.partial`, path);
}
