// The embedded index's dense shortlist: every passage's sign bits held in memory and scanned whole
// for the query's nearest by Hamming distance (hamming.wat: WebAssembly SIMD, 16 bytes of bits a
// step), in place of pgvector's HNSW graph, which PGlite walks one node at a time. Exact, and at
// 113,697 real passages 2 ms a query against the graph's 24 ms (its search of 1,000 nearest).
//
// The folder is locked to one process, so only that process's writes change the passages while it
// holds the bits. It reads them at its first search and keeps them in a file beside the database
// (SIGN_BITS_FILE), stamped with the passages they are of; the next process reads the file, and
// where the index changed since, brings it up to date from the database: the passages of files
// gone are dropped (a file's passages go with it, and a changed file is a new file row) and those
// written since are read (ids only grow), so a run that adds 1,000 passages to a million reads
// 1,000 rows, not a million.
import { closeSync, openSync, readSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { Sql, SqlQuery } from './sql.ts';

/** hamming.wat assembled (wabt's wat2wasm with SIMD; tests/search-index/sign-bits.test.ts checks the two agree). */
export const HAMMING_WASM = 'AGFzbQEAAAABEgJgBn9/f39/fwBgBH9/f38BfwIPAQNlbnYGbWVtb3J5AgABAwMCAAEHFQIHaGFtbWluZwAAB2NvbGxlY3QAAQr5AQK0AQMCfwJ7An8gASACIANsaiEGAkADQCABIAZPDQH9DAAAAAAAAAAAAAAAAAAAAAAhCEEAIQcDQCAIIAAgB2r9AAQAIAEgB2r9AAQA/VH9Yv19/Y4BIQggB0EQaiEHIAcgA0kNAAsgCP1/IQkgCf0bACAJ/RsBaiAJ/RsCIAn9GwNqaiEKIAQgCjsBACAFIApBAnRqIQsgCyALKAIAQQFqNgIAIARBAmohBCABIANqIQEMAAsLC0EBAn8CQANAIAQgAU8NASAAIARBAXRqLwEAIAJNBEAgAyAFQQJ0aiAENgIAIAVBAWohBQsgBEEBaiEEDAALCyAFCw==';

/** The file in an index folder that keeps its passages' sign bits for the next process to open. */
export const SIGN_BITS_FILE = 'sign-bits';

/** A binary COPY of a select (Sql.copyOut: PGlite's). */
type Copy = (select: string) => Promise<Uint8Array>;

/** An embedded index's bits (SignBitsTable.open); undefined for a server's index, searched by its graph. */
export async function signBitsOfIndex(sql: Pick<Sql, 'copyOut' | 'folder' | 'query'>, width: number, held?: SignBitsTable): Promise<SignBitsTable | undefined> {
  const copy = sql.copyOut?.bind(sql);
  if (!copy || !sql.folder) return undefined;
  return SignBitsTable.open(sql, copy, width, join(sql.folder, SIGN_BITS_FILE), held);
}

/**
 * Which passages a table holds: the database's (PostgreSQL's system identifier: a folder whose
 * database was made again is another), its passage count and its last passage id.
 */
export interface Stamp {
  readonly database: string;
  readonly passages: number;
  readonly last: number;
}

async function passagesStamp(sql: SqlQuery): Promise<Stamp> {
  const [row] = await sql.query<{ database: string; passages: number | null; last: string | null }>(
    'select (select system_identifier::text from pg_control_system()) as database, (select df from lexembed_terms where term = -1)::float8 as passages, (select max(id) from lexembed_passages)::text as last',
  );
  return { database: row?.database ?? '', passages: Number(row?.passages ?? 0), last: Number(row?.last ?? 0) };
}

const sameStamp = (a: Stamp, b: Stamp) => a.database === b.database && a.passages === b.passages && a.last === b.last;

const FILE_MAGIC = 'LXSBITS5';
/**
 * The file's header: FILE_MAGIC, the width and count (u32), the passages and last id (f64), the
 * database (32 bytes of text), the records' CRC-32 (u32; appended records continue it; format 4's sum of words by place missed a flipped high bit in every word) and 4 bytes unused;
 * then a record per passage: its id (f64), file (i32), 4 bytes unused and its bits (stride bytes).
 * A run that only added passages appends their records and then writes the header: a run killed
 * between the two leaves the file as it was, its count unchanged. A file whose records do not
 * give the header's checksum (damaged on disk) is read again from the database.
 */
const HEADER_BYTES = 72;
const recordBytes = (stride: number) => 16 + stride;
/** Records read or written at a time. */
const RECORDS_AT_ONCE = 4096;

const SELECT_ROWS = 'select id, file_id, bits from lexembed_passages';

/** The last passages of a table read from its file compared with the database's (lastAreTheDatabases). */
const SAMPLED = 32;

/** Passage ids read by one COPY (rowsAfter). */
const COPY_RANGE = 100_000;

/** Writes all of `data` at `position`. */
export function writeAll(fd: number, data: Uint8Array, position: number): void {
  for (let at = 0; at < data.length; ) at += writeSync(fd, data, at, data.length - at, position + at);
}

/**
 * The rows of the passages with ids above `after`, read COPY_RANGE ids at a time: a COPY's rows are
 * gathered in PGlite's own memory, which never shrinks (a million passages read in one COPY left
 * 0.6 GB more resident).
 */
async function rowsAfter(sql: SqlQuery, copy: Copy, width: number, after: number): Promise<ReturnType<typeof copiedRows>> {
  const [range] = await sql.query<{ first: string | null; last: string | null }>('select min(id)::text as first, max(id)::text as last from lexembed_passages where id > $1', [after]);
  const parts: ReturnType<typeof copiedRows>[] = [];
  for (let from = Number(range?.first ?? 1), last = Number(range?.last ?? 0); from <= last; from += COPY_RANGE) {
    parts.push(copiedRows(await copy(`${SELECT_ROWS} where id >= ${from} and id < ${from + COPY_RANGE}`), width));
  }
  return {
    count: parts.reduce((n, p) => n + p.count, 0),
    into(table, at) {
      for (const part of parts) {
        part.into(table, at);
        at += part.count;
      }
    },
  };
}

/** hamming.wat's functions. */
interface Kernel {
  hamming(q: number, base: number, n: number, stride: number, out: number, hist: number): void;
  collect(out: number, n: number, cut: number, dest: number): number;
}

/**
 * A table's memory: the query's bits, every passage's (each padded to whole 16-byte SIMD words),
 * their distances (u16), the distances' histogram (i32) and the rows collected (i32).
 */
function layoutOf(width: number, count: number) {
  const stride = Math.ceil(width / 128) * 16;
  const base = stride;
  const out = base + count * stride;
  const hist = Math.ceil((out + 2 * count) / 4) * 4;
  const rows = hist + 4 * (width + 1);
  return { stride, query: 0, base, out, hist, rows, end: rows + 4 * count };
}

/** A passage on the shortlist: its id and its sign score (signSums). */
export interface Shortlisted {
  readonly id: string;
  readonly sign: number;
}

/**
 * Rows of SELECT_ROWS in PostgreSQL's binary COPY format (the header, then per row: a field count,
 * each field's length and its bytes in network order; bit(n) as varbit_send writes it: its length
 * in bits, then the bits): how many, and a reader that puts them in a table's arrays from row `at`.
 */
function copiedRows(data: Uint8Array, width: number): { count: number; into(table: SignBitsTable, at: number): void } {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const bytes = Math.ceil(width / 8);
  const rowBytes = 2 + 4 + 8 + 4 + 4 + 4 + 4 + bytes;
  const first = 11 + 4 + 4 + view.getInt32(11 + 4);
  const count = Math.max(0, Math.floor((data.length - first - 2) / rowBytes));
  const wrong = (what: string) => new Error(`the index's sign bits are not as written (${what})`);
  if (first + count * rowBytes + 2 > data.length || view.getInt16(first + count * rowBytes) !== -1) throw wrong(`no end after ${count} rows`);
  return {
    count,
    into(table, at) {
      const { ids, files, heap, stride, base } = table.arrays;
      for (let i = 0, row = first; i < count; i++, row += rowBytes) {
        if (view.getInt16(row) !== 3 || view.getInt32(row + 2) !== 8 || view.getInt32(row + 14) !== 4 || view.getInt32(row + 22) !== bytes + 4 || view.getInt32(row + 26) !== width) throw wrong(`row ${i + 1} of ${count}`);
        ids[at + i] = Number(view.getBigInt64(row + 6));
        files[at + i] = view.getInt32(row + 18);
        heap.set(data.subarray(row + 30, row + 30 + bytes), base + (at + i) * stride);
      }
    },
  };
}

export class SignBitsTable {
  /** The passages it holds (set when it is read). */
  stamp: Stamp = { database: '', passages: -1, last: -1 };
  /** How many of its first rows the file holds as its records, under which stamp (null: the file is to be written whole). */
  private persisted: { readonly count: number; readonly stamp: Stamp; readonly checksum: number } | null = null;

  private constructor(
    readonly width: number,
    readonly count: number,
    private readonly ids: Float64Array,
    private readonly files: Int32Array,
    private readonly memory: WebAssembly.Memory,
    private readonly kernel: Kernel,
  ) {}

  /** Each passage id's row (-1 where the index has no such passage), made at its first use. */
  private rowOfId: Int32Array | null = null;

  /** Each passage id's row in the table, -1 where it holds none (ids up to the highest it holds). */
  rowsById(): Int32Array {
    if (!this.rowOfId) {
      const rows = new Int32Array(this.ids.reduce((a, b) => Math.max(a, b), 0) + 1).fill(-1);
      this.ids.forEach((id, row) => (rows[id] = row));
      this.rowOfId = rows;
    }
    return this.rowOfId;
  }

  /** The file of the passage in `row`. */
  fileOfRow(row: number): number {
    return this.files[row]!;
  }

  /** Where the query, the passages' bits, their distances, the distances' histogram and the rows collected are in memory. */
  private get layout() {
    return layoutOf(this.width, this.count);
  }

  /** The arrays rows are read into (copiedRows). */
  get arrays() {
    return { ids: this.ids, files: this.files, heap: new Uint8Array(this.memory.buffer), ...this.layout };
  }

  /** An empty table of `count` rows. */
  private static async make(width: number, count: number): Promise<SignBitsTable> {
    const memory = new WebAssembly.Memory({ initial: Math.max(1, Math.ceil(layoutOf(width, count).end / 65536)) });
    const { instance } = await WebAssembly.instantiate(Buffer.from(HAMMING_WASM, 'base64'), { env: { memory } });
    return new SignBitsTable(width, count, new Float64Array(count), new Int32Array(count), memory, instance.exports as unknown as Kernel);
  }

  /**
   * Every passage's id, file and sign bits read from the database by binary COPY (rowsAfter; 113,697
   * passages in 0.4-0.8 s here with the table's files cached, 2.6-4.2 s from disk: the bits are in
   * the passages' rows, beside their text and int8 vectors).
   */
  static async load(sql: SqlQuery, copy: Copy, width: number): Promise<SignBitsTable> {
    const rows = await rowsAfter(sql, copy, width, 0);
    const table = await SignBitsTable.make(width, rows.count);
    rows.into(table, 0);
    return table;
  }

  /**
   * The index's table: the one `held` (this process's, read before) or its file where either is of
   * these passages; where the index changed since, brought up to date from the database
   * (refreshed) and written to the file again; where there is neither (or the file is of another
   * database), read whole from the database. A file that cannot be written is left as it was (it
   * only saves the next process a read).
   */
  static async open(sql: SqlQuery, copy: Copy, width: number, file: string, held?: SignBitsTable): Promise<SignBitsTable> {
    const stamp = await passagesStamp(sql);
    let found = held?.stamp.database === stamp.database ? held : await SignBitsTable.read(file, width, stamp.database).catch(() => null);
    if (found && found !== held && !(await found.lastAreTheDatabases(sql))) found = null;
    if (found && sameStamp(found.stamp, stamp)) return found;
    const table = found ? await found.refreshed(sql, copy, stamp) : await SignBitsTable.load(sql, copy, width);
    table.stamp = stamp;
    table.save(file);
    return table;
  }

  /**
   * Whether the table's last passages (SAMPLED of those up to its last id) have the database's bits:
   * a database restored from a backup under a newer file has other passages under the same ids
   * (and, with the files written since, the same count), which the stamp alone does not tell.
   */
  private async lastAreTheDatabases(sql: SqlQuery): Promise<boolean> {
    const rows = await sql.query<{ id: string; b: string }>(`select id::text as id, encode(varbit_send(bits), 'base64') as b from lexembed_passages where id <= $1 order by id desc limit ${SAMPLED}`, [this.stamp.last]);
    const byId = this.rowsById();
    const { heap, base, stride } = this.arrays;
    const bytes = Math.ceil(this.width / 8);
    return rows.every((r) => {
      const row = Number(r.id) < byId.length ? byId[Number(r.id)]! : -1;
      return row >= 0 && Buffer.from(r.b, 'base64').subarray(4).equals(heap.subarray(base + row * stride, base + row * stride + bytes));
    });
  }

  /** This table brought up to `now`: the passages of files no longer in the index dropped, those written after its last read; read whole if that does not give the stamp's passages. */
  private async refreshed(sql: SqlQuery, copy: Copy, now: Stamp): Promise<SignBitsTable> {
    const files = new Set((await sql.query<{ id: number }>('select id from lexembed_files')).map((r) => r.id));
    const last = this.ids.reduce((a, b) => Math.max(a, b), 0);
    const added = await rowsAfter(sql, copy, this.width, last);
    let kept = 0;
    for (let i = 0; i < this.count; i++) if (files.has(this.files[i]!)) kept++;
    const table = await SignBitsTable.make(this.width, kept + added.count);
    const from = this.arrays;
    const to = table.arrays;
    for (let i = 0, at = 0; i < this.count; i++) {
      if (!files.has(from.files[i]!)) continue;
      to.ids[at] = from.ids[i]!;
      to.files[at] = from.files[i]!;
      to.heap.set(from.heap.subarray(from.base + i * from.stride, from.base + (i + 1) * from.stride), to.base + at * to.stride);
      at++;
    }
    added.into(table, kept);
    // Nothing dropped: the file's records are still this table's first rows.
    if (kept === this.count) table.persisted = this.persisted;
    const newest = table.ids.reduce((a, b) => Math.max(a, b), 0);
    return table.count === now.passages && newest === now.last ? table : SignBitsTable.load(sql, copy, this.width);
  }

  /** The table in `file` and the stamp it was written with, or null where there is none of this database and width. */
  private static async read(file: string, width: number, database: string): Promise<SignBitsTable | null> {
    const found = SignBitsTable.headerOf(file, width);
    if (found?.stamp.database !== database) return null;
    const { stamp } = found;
    const fd = openSync(file, 'r');
    try {
      const table = await SignBitsTable.make(width, found.count);
      const { ids, files, heap, base, stride } = table.arrays;
      const size = recordBytes(stride);
      const records = Buffer.alloc(size * Math.min(RECORDS_AT_ONCE, table.count));
      let checksum = 0;
      for (let first = 0; first < table.count; first += RECORDS_AT_ONCE) {
        const n = Math.min(RECORDS_AT_ONCE, table.count - first);
        if (readSync(fd, records, 0, n * size, HEADER_BYTES + first * size) !== n * size) return null;
        checksum = crc32(records.subarray(0, n * size), checksum);
        for (let i = 0; i < n; i++) {
          ids[first + i] = records.readDoubleLE(i * size);
          files[first + i] = records.readInt32LE(i * size + 8);
          heap.set(records.subarray(i * size + 16, (i + 1) * size), base + (first + i) * stride);
        }
      }
      if (checksum !== found.checksum) return null;
      table.persisted = { count: table.count, stamp, checksum };
      table.stamp = stamp;
      return table;
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Writes the table to `file` with its stamp: the records of the rows added since the file was
   * written, then the header, where the file holds this table's first rows; else whole, then
   * renamed over it. A failure leaves the file as it was (or none).
   */
  save(file: string): void {
    const kept = this.persisted;
    const onDisk = kept && SignBitsTable.headerOf(file, this.width);
    if (kept && onDisk && onDisk.count === kept.count && onDisk.checksum === kept.checksum && sameStamp(onDisk.stamp, kept.stamp)) {
      try {
        const fd = openSync(file, 'r+');
        try {
          const checksum = this.writeRecords(fd, kept.count, kept.checksum);
          writeAll(fd, this.header(checksum), 0);
          this.persisted = { count: this.count, stamp: this.stamp, checksum };
        } finally {
          closeSync(fd);
        }
        return;
      } catch {
        // Written whole below.
      }
    }
    const partial = `${file}.partial`;
    try {
      const fd = openSync(partial, 'w');
      let checksum: number;
      try {
        checksum = this.writeRecords(fd, 0, 0);
        writeAll(fd, this.header(checksum), 0);
      } finally {
        closeSync(fd);
      }
      renameSync(partial, file);
      this.persisted = { count: this.count, stamp: this.stamp, checksum };
    } catch {
      rmSync(partial, { force: true });
    }
  }

  /** The count and stamp `file`'s header holds for bits of this width, or null. */
  private static headerOf(file: string, width: number): { count: number; stamp: Stamp; checksum: number } | null {
    try {
      const fd = openSync(file, 'r');
      try {
        const header = Buffer.alloc(HEADER_BYTES);
        if (readSync(fd, header, 0, HEADER_BYTES, 0) !== HEADER_BYTES || header.toString('latin1', 0, 8) !== FILE_MAGIC || header.readUInt32LE(8) !== width) return null;
        return { count: header.readUInt32LE(12), stamp: { passages: header.readDoubleLE(16), last: header.readDoubleLE(24), database: header.toString('latin1', 32, 64).replace(/\0+$/, '') }, checksum: header.readUInt32LE(64) };
      } finally {
        closeSync(fd);
      }
    } catch {
      return null;
    }
  }

  private header(checksum: number): Buffer {
    const header = Buffer.alloc(HEADER_BYTES);
    header.writeUInt32LE(checksum, 64);
    header.write(FILE_MAGIC, 0, 'latin1');
    header.writeUInt32LE(this.width, 8);
    header.writeUInt32LE(this.count, 12);
    header.writeDoubleLE(this.stamp.passages, 16);
    header.writeDoubleLE(this.stamp.last, 24);
    header.write(this.stamp.database.slice(0, 32), 32, 'latin1');
    return header;
  }

  /** Writes the records of rows `from` on, in their places; their checksum continued from `sum` (that of the records before them). */
  private writeRecords(fd: number, from: number, sum: number): number {
    const { ids, files, heap, base, stride } = this.arrays;
    const size = recordBytes(stride);
    const records = Buffer.alloc(size * Math.max(1, Math.min(RECORDS_AT_ONCE, this.count - from)));
    for (let first = from; first < this.count; first += RECORDS_AT_ONCE) {
      const n = Math.min(RECORDS_AT_ONCE, this.count - first);
      records.fill(0);
      for (let i = 0; i < n; i++) {
        records.writeDoubleLE(ids[first + i]!, i * size);
        records.writeInt32LE(files[first + i]!, i * size + 8);
        records.set(heap.subarray(base + (first + i) * stride, base + (first + i + 1) * stride), i * size + 16);
      }
      sum = crc32(records.subarray(0, n * size), sum);
      writeAll(fd, records.subarray(0, n * size), HEADER_BYTES + first * size);
    }
    return sum;
  }

  /**
   * The `length` passages nearest the query's signs by Hamming distance (all those tied with the
   * last, so a little more), only those of files `allowed` passes where it is given; each with its
   * sign score, best first.
   */
  nearest(q: Float32Array, length: number, allowed?: (file: number) => boolean): Shortlisted[] {
    const { stride, query, base, out, hist, rows } = this.layout;
    const heap = new Uint8Array(this.memory.buffer);
    heap.fill(0, query, query + stride);
    for (let i = 0; i < q.length; i++) if (q[i]! > 0) heap[query + (i >> 3)]! |= 0x80 >> (i & 7);
    const histogram = new Uint32Array(this.memory.buffer, hist, this.width + 1).fill(0);
    this.kernel.hamming(query, base, this.count, stride, out, hist);
    const distance = new Uint16Array(this.memory.buffer, out, this.count);
    // Of the files a filter leaves, counted again here (the kernel counted every passage).
    const keep = allowed ? Uint8Array.from(this.files, (f) => (allowed(f) ? 1 : 0)) : null;
    if (keep) {
      histogram.fill(0);
      for (let i = 0; i < this.count; i++) if (keep[i]) histogram[distance[i]!]!++;
    }
    // Distances are whole numbers up to the width: counted, the length-th nearest's is the cut.
    let cut = 0;
    for (let taken = 0; cut < this.width && taken + histogram[cut]! < length; cut++) taken += histogram[cut]!;
    const collected = this.kernel.collect(out, this.count, cut, rows);
    const sums = signSums(q);
    const bytes = Math.ceil(this.width / 8);
    const found: Shortlisted[] = [];
    for (const i of new Int32Array(this.memory.buffer, rows, collected)) {
      if (keep && !keep[i]) continue;
      let sign = 0;
      for (let j = 0, at = base + i * stride; j < bytes; j++) sign += sums[j * 256 + heap[at + j]!]!;
      found.push({ id: String(this.ids[i]), sign });
    }
    return found.sort((a, b) => b.sign - a.sign);
  }
}

/**
 * Per byte of a bit string, the query's values summed with the signs of each of the byte's 256
 * values (a set bit +q, a clear one -q; the first bit the byte's high one): a passage's sign score
 * is one lookup a byte, not eight.
 */
export function signSums(q: Float32Array): Float64Array {
  const width = Math.ceil(q.length / 8);
  const sums = new Float64Array(width * 256);
  for (let j = 0; j < width; j++) {
    const at = j * 256;
    // The byte 0 (every sign negative), then each value from the one without its lowest set bit.
    let none = 0;
    for (let k = 0; k < 8 && j * 8 + k < q.length; k++) none -= q[j * 8 + k]!;
    sums[at] = none;
    for (let v = 1; v < 256; v++) {
      const low = v & -v;
      const i = j * 8 + 7 - Math.log2(low);
      sums[at + v] = sums[at + (v ^ low)]! + (i < q.length ? 2 * q[i]! : 0);
    }
  }
  return sums;
}
