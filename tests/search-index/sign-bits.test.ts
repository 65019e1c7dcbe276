// The embedded index's dense shortlist (sign-bits.ts): the WebAssembly kernel is its source
// assembled, and the in-memory scan of every passage's sign bits, read from a real PGlite by a
// binary COPY, gives exactly the nearest by Hamming distance (a plain JavaScript count beside it),
// ordered by the query's sign score, within the files a filter leaves.
import { appendFileSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import wabtInit from 'wabt';
import type { Embedder } from '../../src/embedder/types.ts';
import { loadModelFolder, STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { openIndex, type SearchIndex } from '../../src/search-index/index.ts';
import { openLocation } from '../../src/search-index/location.ts';
import { HAMMING_WASM, SIGN_BITS_FILE, SignBitsTable, signBitsOfIndex, signSums } from '../../src/search-index/sign-bits.ts';

let db: PGlite;
const sql = { query: async <T,>(text: string, params?: readonly unknown[]) => (await db.query<T>(text, params as unknown[])).rows };
const copy = async (select: string) => new Uint8Array(await (await db.query(`copy (${select}) to '/dev/blob' with (format binary)`)).blob!.arrayBuffer());

beforeAll(async () => {
  db = await PGlite.create({ extensions: { vector } });
});
afterAll(async () => {
  await db.close();
});

/** A seeded generator, so a failure repeats. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

async function passagesOf(width: number, count: number, files: number, next: () => number): Promise<{ id: number; file: number; bits: string }[]> {
  await db.query('drop table if exists lexembed_passages');
  await db.query(`create table lexembed_passages (id bigint primary key, file_id int not null, bits bit(${width}) not null)`);
  // A few bit strings repeat (copied clauses): ties at the cut.
  const rows = Array.from({ length: count }, (_, i) => ({ id: 1000 + 7 * i, file: 1 + Math.floor(next() * files), bits: Array.from({ length: width }, () => (next() < 0.5 ? '1' : '0')).join('') }));
  for (let i = 0; i < count; i += 10) rows[i + 1] = { ...rows[i + 1]!, bits: rows[i]!.bits };
  await db.query('insert into lexembed_passages select * from unnest($1::bigint[], $2::int[], $3::text[]::bit varying[])', [rows.map((r) => r.id), rows.map((r) => r.file), rows.map((r) => r.bits)]);
  return rows;
}

describe('the sign bits held in memory', () => {
  it('runs hamming.wat as it is written (the embedded bytes are its assembly)', async () => {
    const wabt = await wabtInit();
    const source = readFileSync(join(import.meta.dirname, '../../src/search-index/hamming.wat'), 'utf8');
    const assembled = wabt.parseWat('hamming.wat', source, { simd: true }).toBinary({}).buffer;
    expect(Buffer.from(assembled).toString('base64')).toBe(HAMMING_WASM);
  });

  for (const width of [13, 200, 1792]) {
    it(`finds exactly the nearest by Hamming distance, ties included, best sign score first (${width} bits)`, async () => {
      const next = random(width);
      const rows = await passagesOf(width, 3000, 40, next);
      const table = await SignBitsTable.load(sql, copy, width);
      expect(table.count).toBe(rows.length);
      const q = Float32Array.from({ length: width }, () => next() - 0.5);
      const distance = (bits: string) => [...bits].filter((b, i) => (b === '1') !== q[i]! > 0).length;
      const sign = (bits: string) => [...bits].reduce((s, b, i) => s + (b === '1' ? q[i]! : -q[i]!), 0);
      for (const allowed of [undefined, (file: number) => file % 3 === 0]) {
        const found = table.nearest(q, 100, allowed);
        const eligible = rows.filter((r) => !allowed || allowed(r.file)).map((r) => ({ ...r, d: distance(r.bits) })).sort((a, b) => a.d - b.d);
        const cut = eligible[99]!.d;
        const want = eligible.filter((r) => r.d <= cut);
        expect(found.length).toBe(want.length);
        expect(found.length).toBeGreaterThanOrEqual(100);
        expect(new Set(found.map((f) => f.id))).toEqual(new Set(want.map((r) => String(r.id))));
        const byId = new Map(rows.map((r) => [String(r.id), r]));
        for (const f of found) expect(f.sign).toBeCloseTo(sign(byId.get(f.id)!.bits), 4);
        expect(found.map((f) => f.sign)).toEqual([...found.map((f) => f.sign)].sort((a, b) => b - a));
      }
    }, 60_000);
  }

  it('an empty index, and fewer passages than asked for', async () => {
    await passagesOf(64, 0, 1, random(1));
    expect((await SignBitsTable.load(sql, copy, 64)).nearest(new Float32Array(64).fill(1), 10)).toEqual([]);
    await passagesOf(64, 5, 1, random(2));
    expect((await SignBitsTable.load(sql, copy, 64)).nearest(new Float32Array(64).fill(1), 10)).toHaveLength(5);
  });

  it('refuses bits of another width than the index\'s, or cut short, not reading them wrong', async () => {
    await passagesOf(64, 3, 1, random(3));
    await expect(SignBitsTable.load(sql, copy, 128)).rejects.toThrow(/not as written/);
    await expect(SignBitsTable.load(sql, copy, 8)).rejects.toThrow(/not as written/);
    const whole = await copy('select id, file_id, bits from lexembed_passages');
    for (const cut of [whole.length - 1, whole.length - 40]) await expect(SignBitsTable.load(sql, async () => whole.subarray(0, cut), 64)).rejects.toThrow(/not as written/);
  });

  it('a byte\'s sums: each of its 256 values the query\'s values with their signs', () => {
    const q = Float32Array.from({ length: 11 }, (_, i) => i - 4.5);
    const sums = signSums(q);
    for (const [byte, value] of [[0, 0], [0, 255], [0, 0b10100001], [1, 0b11100000], [1, 0b11111111]] as const) {
      let want = 0;
      for (let k = 0; k < 8 && byte * 8 + k < q.length; k++) want += (value >> (7 - k)) & 1 ? q[byte * 8 + k]! : -q[byte * 8 + k]!;
      expect(sums[byte * 256 + value]).toBeCloseTo(want, 10);
    }
  });
});

describe('an index\'s sign bits through its runs (the file beside its database, and updates)', () => {
  let dir: string;
  let embedder: Embedder;
  const CLAUSES = [
    'The tenant shall keep the garden free of weeds and cut the lawn every fortnight.',
    'The supplier shall deliver the steel beams to the Rotterdam warehouse by ship.',
    'The employee shall not disclose the recipe of the secret sauce to any competitor.',
    'The borrower shall repay the loan in twelve equal monthly instalments.',
    'The licensee may install the software on three computers at one site.',
    'The insurer shall pay for water damage caused by a burst pipe in winter.',
  ];
  const NEW = 'The keeper shall feed the zoo\'s elephants hay and fresh bananas every morning.';
  const top = async (index: SearchIndex, query: string) => (await index.search(query, { top: 5, mode: 'dense' })).map((h) => `${h.file}#${h.chunk}`);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'lexembed-sign-bits-'));
    mkdirSync(join(dir, 'docs'));
    CLAUSES.forEach((clause, i) => writeFileSync(join(dir, 'docs', `clause-${i}.txt`), `${clause}\n\nThe parties agree to this clause.`));
    embedder = await loadModelFolder(STATIC_MODEL_DIR, {});
  }, 120_000);
  afterAll(async () => {
    await embedder?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a run that adds a file: its passages are in the next dense search; a new process reads the same bits from the file', async () => {
    const location = join(dir, 'index');
    const file = join(location, SIGN_BITS_FILE);
    let index = await openIndex(location, { embedder });
    await index.update([join(dir, 'docs')]);
    expect((await top(index, 'who feeds the elephants in the zoo'))[0]).not.toMatch(/^elephants/);
    expect(existsSync(file)).toBe(true);
    const before = readFileSync(file);
    const inode = statSync(file).ino;
    writeFileSync(join(dir, 'docs', 'elephants.txt'), NEW);
    const report = await index.update([join(dir, 'docs')]);
    expect(report.added).toEqual(['elephants.txt']);
    const asked = await top(index, 'who feeds the elephants in the zoo');
    expect(asked[0]).toBe('elephants.txt#0');
    // The new passage's record appended to the same file, its header written after.
    const after = readFileSync(file);
    expect(statSync(file).ino).toBe(inode);
    expect(after.length).toBeGreaterThan(before.length);
    expect(after.subarray(72, before.length).equals(before.subarray(72))).toBe(true);
    await index.close();
    // Read from the file (also with bytes after its last record: a run killed before it wrote the
    // header), or from the database when the file is gone or is garbage: the same hits.
    // Damaged on disk with its header whole: records of other bits, or a garbage id.
    const damaged = (where: (size: number, record: number) => number[]) => () => {
      const bytes = readFileSync(file);
      const count = bytes.readUInt32LE(12);
      const size = 16 + Math.ceil(embedder.maxDimensions / 128) * 16; // a record: id, file, bits
      for (let r = 0; r < count; r++) for (const at of where(size, 72 + r * size)) bytes[at] = (bytes[at]! * 31 + r + 7) & 0xff;
      writeFileSync(file, bytes);
    };
    const otherBits = damaged((size, record) => Array.from({ length: size - 16 }, (_, i) => record + 16 + i));
    const garbageId = damaged((_, record) => (record === 72 ? [record + 6, record + 7] : []));
    // The high bit of every word of bits flipped: a sum of words by place missed it.
    const highBits = () => {
      const bytes = readFileSync(file);
      const size = 16 + Math.ceil(embedder.maxDimensions / 128) * 16;
      for (let r = 0; r < bytes.readUInt32LE(12); r++) for (let at = 72 + r * size + 16 + 3; at < 72 + (r + 1) * size; at += 4) bytes[at] = bytes[at]! ^ 0x80;
      writeFileSync(file, bytes);
    };
    // The bits as the table holds them (its sign scores; in an index this small every passage is
    // rescored, so the hits alone would not show other bits).
    const q = Float32Array.from({ length: embedder.maxDimensions }, (_, i) => Math.cos(i));
    const bitsOf = async () => {
      const sql = await openLocation(location, { create: false });
      try {
        return (await signBitsOfIndex(sql, embedder.maxDimensions))!.nearest(q, 100);
      } finally {
        await sql.close();
      }
    };
    const held = await bitsOf();
    for (const prepare of [() => {}, () => appendFileSync(file, Buffer.alloc(1000, 7)), otherBits, garbageId, highBits, () => unlinkSync(file), () => writeFileSync(file, 'not sign bits')]) {
      prepare();
      expect(await bitsOf()).toEqual(held);
      prepare();
      index = await openIndex(location, { embedder, create: false });
      expect(await top(index, 'who feeds the elephants in the zoo')).toEqual(asked);
      await index.close();
    }
  }, 120_000);

  it('a file left from before a run that removed passages is not used: the removed are not found, the added are', async () => {
    const location = join(dir, 'index');
    const file = join(location, SIGN_BITS_FILE);
    let index = await openIndex(location, { embedder, create: false });
    await top(index, 'steel beams delivered to Rotterdam');
    copyFileSync(file, join(dir, 'old-sign-bits'));
    unlinkSync(join(dir, 'docs', 'clause-1.txt'));
    writeFileSync(join(dir, 'docs', 'clause-1b.txt'), 'The carrier shall ship the copper wire to the Antwerp depot by rail.');
    const inode = statSync(file).ino;
    const report = await index.update([join(dir, 'docs')]);
    expect(report).toMatchObject({ added: ['clause-1b.txt'], removed: ['clause-1.txt'] });
    expect(statSync(file).ino).not.toBe(inode); // written whole again: a passage was dropped
    await index.close();
    copyFileSync(join(dir, 'old-sign-bits'), file);
    index = await openIndex(location, { embedder, create: false });
    const hits = await index.search('copper wire shipped to Antwerp by rail', { top: 10, mode: 'dense' });
    expect(hits[0]!.file).toBe('clause-1b.txt');
    expect(hits.map((h) => h.file)).not.toContain('clause-1.txt');
    await index.close();
    // Brought up to date from the old file, they are the bits read whole from the database.
    unlinkSync(file);
    index = await openIndex(location, { embedder, create: false });
    expect(await index.search('copper wire shipped to Antwerp by rail', { top: 10, mode: 'dense' })).toEqual(hits);
    await index.close();
  }, 120_000);

  it('an index kept inside the folder it indexes: its own files are not documents, nor listed as left out', async () => {
    const docs = join(dir, 'with-index');
    mkdirSync(docs);
    CLAUSES.slice(0, 2).forEach((t, i) => writeFileSync(join(docs, `c-${i}.txt`), t));
    const index = await openIndex(join(docs, 'self.index'), { embedder });
    try {
      for (const unchanged of [0, 2]) expect(await index.update([docs])).toMatchObject({ added: unchanged ? [] : ['c-0.txt', 'c-1.txt'], unchanged, ignored: [] });
    } finally {
      await index.close();
    }
  }, 120_000);

  it('a file from another index\'s folder (another database with as many passages) is not used', async () => {
    const [mine, other] = [join(dir, 'a-docs'), join(dir, 'b-docs')];
    mkdirSync(mine);
    mkdirSync(other);
    CLAUSES.slice(0, 3).forEach((t, i) => writeFileSync(join(mine, `a-${i}.txt`), t));
    const texts = ['The pilot shall land the aircraft at the nearest airport in a storm.', 'The baker shall deliver fresh bread to the hotel before dawn.', 'The gardener shall prune the roses in early spring.'];
    texts.forEach((t, i) => writeFileSync(join(other, `o-${i}.txt`), t));
    const [a, b] = [join(dir, 'a.index'), join(dir, 'b.index')];
    for (const [location, docs] of [[a, mine], [b, other]] as const) {
      const index = await openIndex(location, { embedder });
      await index.update([docs]);
      await index.close();
    }
    // What the table gives (ids and sign scores: its bits), opened as a search opens it.
    const q = Float32Array.from({ length: embedder.maxDimensions }, (_, i) => Math.sin(i));
    const asked = async (location: string) => {
      const sql = await openLocation(location, { create: false });
      try {
        return (await signBitsOfIndex(sql, embedder.maxDimensions))!.nearest(q, 3);
      } finally {
        await sql.close();
      }
    };
    const own = await asked(b);
    expect(own).toHaveLength(3);
    expect(await asked(a)).not.toEqual(own);
    // Both indexes' stamps but the database's agree: three passages, the same last id.
    copyFileSync(join(a, SIGN_BITS_FILE), join(b, SIGN_BITS_FILE));
    expect(await asked(b)).toEqual(own);
  }, 120_000);
});
