// The embedded index's sparse postings (postings.ts), on a real PGlite index: they give exactly the
// ranking pgvector gives over every passage (same scores, float32 summed alike), within a filter;
// they follow the index through runs that add and remove files (a small segment a run, merged), and
// a damaged, missing or foreign segment or manifest is read again from the database, not trusted.
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Embedder } from '../../src/embedder/types.ts';
import { loadModelFolder, STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { openIndex, type SearchIndex } from '../../src/search-index/index.ts';
import { openLocation } from '../../src/search-index/location.ts';
import { indexModelOf, sparsevecLiteral } from '../../src/search-index/model.ts';
import { openPostings, POSTINGS_FOLDER } from '../../src/search-index/postings.ts';
import { SignBitsTable, signBitsOfIndex } from '../../src/search-index/sign-bits.ts';
import { idfOf } from '../../src/search-index/search.ts';
import { corpusCounts } from '../../src/search-index/store.ts';

const SUBJECTS = ['rent', 'steel beams', 'secret recipe', 'loan instalments', 'software licence', 'water damage', 'elephant feed', 'copper wire', 'roof repairs', 'grain harvest', 'ship charter', 'patent royalties'];
const ACTIONS = ['shall pay for', 'shall deliver', 'may terminate the agreement over', 'shall keep records of', 'shall insure', 'must give notice about'];
const PARTIES = ['The tenant', 'The supplier', 'The borrower', 'The licensee', 'The carrier', 'The insurer', 'The employee'];

/** A file of a few clauses (seeded, so each file's text is its own). */
function clauses(n: number): string {
  const lines: string[] = [];
  for (let k = 0; k < 3 + (n % 4); k++) {
    const i = n * 7 + k * 3;
    lines.push(`${PARTIES[i % PARTIES.length]} ${ACTIONS[(i * 5 + n) % ACTIONS.length]} the ${SUBJECTS[(i * 11 + k) % SUBJECTS.length]} within ${3 + ((i * 13) % 40)} days of clause ${n}.${k}.`);
  }
  return lines.join('\n\n');
}

const QUESTIONS = ['who pays for the water damage', 'delivery of steel beams within days', 'notice about the patent royalties', 'terminate the agreement over the grain harvest', 'records of the ship charter'];

describe('the sparse postings of an embedded index', () => {
  let dir: string;
  let embedder: Embedder;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'lexembed-postings-'));
    mkdirSync(join(dir, 'docs'));
    for (let n = 0; n < 30; n++) writeFileSync(join(dir, 'docs', `contract-${String(n).padStart(2, '0')}.txt`), clauses(n));
    embedder = await loadModelFolder(STATIC_MODEL_DIR, {});
  }, 120_000);
  afterAll(async () => {
    await embedder?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Opens the index at `location` (made where `create`), runs `work` on it and closes it. */
  async function withIndex<T>(location: string, work: (index: SearchIndex) => Promise<T>, create = true): Promise<T> {
    const index = await openIndex(location, { embedder, create });
    try {
      return await work(index);
    } finally {
      await index.close();
    }
  }

  /** The postings' top 100 and pgvector's exact ranking over every passage, for each question (within the files `only` names). */
  async function bothRankings(location: string, only?: RegExp) {
    const model = indexModelOf(embedder);
    const sql = await openLocation(location, { create: false });
    try {
      const table = (await signBitsOfIndex(sql, embedder.maxDimensions))!;
      const postings = await openPostings(sql, sql.copyOut!.bind(sql), sql.folder!, table, model.settings.vocabularySize);
      const files = new Map((await sql.query<{ id: number; path: string }>('select id, path from lexembed_files')).map((r) => [r.id, r.path]));
      const allowed = only && ((file: number) => only.test(files.get(file) ?? ''));
      const out = [];
      for (const question of QUESTIONS) {
        const { sparse } = await model.embedQuery(question);
        const counts = await corpusCounts(sql, sparse.indices);
        const idf = idfOf(counts);
        const order = [...sparse.indices.keys()].sort((a, b) => sparse.indices[a]! - sparse.indices[b]!).filter((i) => sparse.values[i]! * idf(sparse.indices[i]!) > 0);
        const posted = postings.top({ terms: order.map((i) => sparse.indices[i]!), weights: order.map((i) => sparse.values[i]! * idf(sparse.indices[i]!)) }, 100, allowed);
        const exact = await sql.query<{ id: string; d: number; path: string }>(
          `select s.id::text as id, s.sparse <#> $1::sparsevec as d, f.path from lexembed_sparse s join lexembed_files f on f.id = s.file_id where s.sparse <#> $1::sparsevec < 0 order by d, s.id limit 1000`,
          [sparsevecLiteral(sparse, model.settings.vocabularySize, idf)],
        );
        const want = exact.filter((r) => !only || only.test(r.path)).slice(0, 100);
        out.push({ question, posted: posted.map((p) => `${p.id} ${p.score}`), exact: want.map((r) => `${r.id} ${-r.d}`) });
      }
      return out;
    } finally {
      await sql.close();
    }
  }

  it('give exactly pgvector\'s dot products over every passage, best first, within a file filter', async () => {
    const location = join(dir, 'exact.index');
    await withIndex(location, (index) => index.update([join(dir, 'docs')]));
    for (const only of [undefined, /contract-1\d/]) {
      for (const { question, posted, exact } of await bothRankings(location, only)) {
        expect(exact.length, question).toBeGreaterThan(5);
        expect(posted, `${question} ${only ?? ''}`).toEqual(exact);
      }
    }
    expect(existsSync(join(location, POSTINGS_FOLDER, 'manifest.json'))).toBe(true);
    // Its postings are its inverted index: no GIN index of the sparse table's terms to keep up.
    const sql = await openLocation(location, { create: false });
    try {
      expect(await sql.query(`select to_regclass('lexembed_sparse_gin') is null as none`)).toEqual([{ none: true }]);
    } finally {
      await sql.close();
    }
  }, 180_000);

  it('a query with terms most passages hold: the postings of its others find the passages, the common ones\' weights from the database complete the best scores', async () => {
    // Over 500 passages (MIN_SELECTIVE_DF) hold "the" and "shall": each query's common terms.
    const docs = join(dir, 'many');
    mkdirSync(docs);
    for (let n = 0; n < 640; n++) writeFileSync(join(docs, `m-${String(n).padStart(3, '0')}.txt`), clauses(n).split('\n\n')[n % 3]!);
    const location = join(dir, 'many.index');
    const questions = QUESTIONS.map((q) => `the tenant shall ${q}`);
    const found = await withIndex(location, async (index) => {
      await index.update([docs]);
      const lists: string[][] = [];
      for (const question of questions) lists.push((await index.search(question, { mode: 'sparse', top: 10, documentContext: false })).map((h) => `${h.passageId} ${h.score.toFixed(4)}`));
      return lists;
    });
    const model = indexModelOf(embedder);
    const sql = await openLocation(location, { create: false });
    try {
      let common = 0;
      for (const [i, question] of questions.entries()) {
        const { sparse } = await model.embedQuery(question);
        const counts = await corpusCounts(sql, sparse.indices);
        common += sparse.indices.filter((t) => (counts.df.get(t) ?? 0) > 500).length;
        const idf = idfOf(counts);
        const exact = await sql.query<{ id: string; d: number }>('select id::text as id, sparse <#> $1::sparsevec as d from lexembed_sparse order by d, id limit 10', [sparsevecLiteral(sparse, model.settings.vocabularySize, idf)]);
        expect(found[i], question).toEqual(exact.map((r) => `${r.id} ${(-r.d).toFixed(4)}`));
      }
      expect(common).toBeGreaterThanOrEqual(questions.length);
    } finally {
      await sql.close();
    }
  }, 240_000);

  it('follow the runs that add and remove files: a small segment a run, merged; the removed not found', async () => {
    const docs = join(dir, 'growing');
    mkdirSync(docs);
    for (let n = 0; n < 10; n++) writeFileSync(join(docs, `c-${n}.txt`), clauses(n));
    const location = join(dir, 'growing.index');
    const segments = () => readdirSync(join(location, POSTINGS_FOLDER)).filter((f) => f !== 'manifest.json');
    const index = await openIndex(location, { embedder });
    try {
      await index.update([docs]);
      await index.search('water damage', { mode: 'sparse' });
      expect(segments()).toHaveLength(1);
      const animals = ['giraffes', 'penguins', 'zebras', 'otters', 'lemurs', 'tapirs', 'flamingos', 'walruses'];
      for (let n = 10; n < 18; n++) {
        writeFileSync(join(docs, `c-${n}.txt`), `${clauses(n)}\n\nThe zookeeper shall feed the ${animals[n - 10]} twice a day.`);
        expect((await index.update([docs])).added).toEqual([`c-${n}.txt`]);
        const hits = await index.search(`who feeds the ${animals[n - 10]}`, { mode: 'sparse', top: 3 });
        expect(hits[0]?.file).toBe(`c-${n}.txt`);
      }
      // Eight runs, each a segment of one file, merged as they come: a few segments, not nine.
      expect(segments().length).toBeLessThanOrEqual(4);
      unlinkSync(join(docs, 'c-12.txt'));
      writeFileSync(join(docs, 'c-13.txt'), 'The ferryman shall carry the sheep across the river.');
      expect(await index.update([docs])).toMatchObject({ removed: ['c-12.txt'], changed: ['c-13.txt'] });
      const files = (await index.search('who feeds the lemurs', { mode: 'sparse', top: 100 })).map((h) => h.file);
      expect(files).not.toContain('c-12.txt');
      expect((await index.search('ferryman carries the sheep across the river', { mode: 'sparse', top: 1 }))[0]?.file).toBe('c-13.txt');
    } finally {
      await index.close();
    }
    for (const { question, posted, exact } of await bothRankings(location)) expect(posted, question).toEqual(exact);
  }, 240_000);

  it('a segment cut short under an open index: the next search checks them again and answers the same; postings that cannot be written: a clear error, and --dense-only still answers', async () => {
    const location = join(dir, 'exact.index');
    const folder = join(location, POSTINGS_FOLDER);
    const hits = async (index: SearchIndex, mode: 'hybrid' | 'sparse' | 'dense') => (await index.search(QUESTIONS[0]!, { mode, top: 10 })).map((h) => `${h.file}#${h.chunk} ${h.score.toFixed(5)}`);
    await withIndex(
      location,
      async (index) => {
        const before = await hits(index, 'sparse');
        const segment = join(folder, readdirSync(folder).find((f) => f.startsWith('segment-'))!);
        writeFileSync(segment, readFileSync(segment).subarray(0, 64));
        expect(await hits(index, 'sparse')).toEqual(before);
      },
      false,
    );
    const want = await withIndex(location, async (index) => ({ hybrid: await hits(index, 'hybrid'), dense: await hits(index, 'dense') }), false);
    // A plain file where the postings' folder goes: nothing can be written there.
    rmSync(folder, { recursive: true });
    writeFileSync(folder, 'not a folder');
    await withIndex(
      location,
      async (index) => {
        expect(await hits(index, 'dense')).toEqual(want.dense);
        await expect(index.search(QUESTIONS[0]!)).rejects.toThrow(/cannot write the sparse postings .* free space on that disk, or let this user write there, and search again .*--dense-only searches do without them/);
        unlinkSync(folder);
        expect(await hits(index, 'hybrid')).toEqual(want.hybrid);
      },
      false,
    );
  }, 240_000);

  it('a database restored from a backup under newer sign bits and postings: they are not taken for its passages', async () => {
    const docs = join(dir, 'restored');
    mkdirSync(docs);
    for (let n = 0; n < 6; n++) writeFileSync(join(docs, `r-${n}.txt`), clauses(n));
    const location = join(dir, 'restored.index');
    const run = () => withIndex(location, (index) => index.update([docs]));
    await run();
    cpSync(join(location, 'pgdata'), join(dir, 'pgdata-backup'), { recursive: true });
    writeFileSync(join(docs, 'zoo.txt'), 'The zookeeper shall feed the giraffes fresh acacia leaves every morning.');
    expect((await run()).added).toEqual(['zoo.txt']);
    // pgdata alone restored (the sign bits and postings of the run since left), then a run that
    // writes another file: its passages and file get the ids the zoo's had.
    rmSync(join(location, 'pgdata'), { recursive: true });
    cpSync(join(dir, 'pgdata-backup'), join(location, 'pgdata'), { recursive: true });
    unlinkSync(join(docs, 'zoo.txt'));
    writeFileSync(join(docs, 'ferry.txt'), 'The ferryman shall carry the sheep across the river before the flood.');
    expect((await run()).added).toEqual(['ferry.txt']);
    await withIndex(
      location,
      async (index) => {
        for (const mode of ['hybrid', 'dense', 'sparse'] as const) {
          expect((await index.search('the ferryman carries sheep across the river', { mode, top: 1 }))[0]?.file, mode).toBe('ferry.txt');
          const fed = await index.search('who feeds the giraffes acacia leaves', { mode, top: 3 });
          expect(fed.map((h) => h.text).join(' '), mode).not.toContain('giraffes');
        }
      },
      false,
    );
    // The sign bits as the run left them in their file are the database's (all are rescored in an
    // index this small, so the hits alone would not show stale bits).
    const sql = await openLocation(location, { create: false });
    try {
      const q = Float32Array.from({ length: embedder.maxDimensions }, (_, i) => Math.sin(i));
      const held = (await signBitsOfIndex(sql, embedder.maxDimensions))!.nearest(q, 100);
      expect(held).toEqual((await SignBitsTable.load(sql, sql.copyOut!.bind(sql), embedder.maxDimensions)).nearest(q, 100));
    } finally {
      await sql.close();
    }
  }, 240_000);

  it('a damaged, missing or foreign segment or manifest is read again from the database, and leftovers of a killed run removed', async () => {
    const location = join(dir, 'exact.index');
    const folder = join(location, POSTINGS_FOLDER);
    const want = await bothRankings(location);
    const segment = () => join(folder, readdirSync(folder).find((f) => f.startsWith('segment-') && !f.endsWith('.partial'))!);
    // A segment: a 20-byte header (its passages, terms and postings at 8, 12, 16), the passages'
    // ids and hashes, the terms, their starts, then per posting an id and a weight (8 bytes).
    const flip = (path: string, at: (postingsAt: number, postings: number) => number[], mask = 0x40) => {
      const bytes = readFileSync(path);
      const postingsAt = 20 + 4 * (2 * bytes.readUInt32LE(8) + 2 * bytes.readUInt32LE(12) + 1);
      for (const i of at(postingsAt, bytes.readUInt32LE(16))) bytes[i] = bytes[i]! ^ mask;
      writeFileSync(path, bytes);
    };
    const everyPosting = (offset: number) => (postingsAt: number, postings: number) => Array.from({ length: postings }, (_, k) => postingsAt + 8 * k + offset);
    // Another index's postings (another database with its own passages).
    const other = join(dir, 'other.index');
    await withIndex(other, async (index) => {
      await index.update([join(dir, 'growing')]);
      await index.search('water damage');
    });
    const damages: [string, () => void][] = [
      ['the weights changed', () => flip(segment(), everyPosting(7))],
      ['every weight\'s sign flipped', () => flip(segment(), everyPosting(7), 0x80)],
      ['the ids changed', () => flip(segment(), everyPosting(1))],
      ['the directory changed', () => flip(segment(), (postingsAt) => [postingsAt - 6])],
      ['a segment gone', () => unlinkSync(segment())],
      ['a segment cut short', () => writeFileSync(segment(), readFileSync(segment()).subarray(0, 100))],
      ['the manifest garbage', () => writeFileSync(join(folder, 'manifest.json'), '{"format":1,"segments":[{"file":"x"')],
      ['the manifest gone', () => unlinkSync(join(folder, 'manifest.json'))],
      ['another index\'s postings', () => {
        rmSync(folder, { recursive: true });
        mkdirSync(folder);
        for (const f of readdirSync(join(other, POSTINGS_FOLDER))) copyFileSync(join(other, POSTINGS_FOLDER, f), join(folder, f));
      }],
      ['a killed run\'s segment', () => writeFileSync(join(folder, 'segment-1-2-x.partial'), 'half written')],
    ];
    for (const [what, damage] of damages) {
      damage();
      expect(await bothRankings(location), what).toEqual(want);
      expect(readdirSync(folder).filter((f) => f.endsWith('.partial')), what).toEqual([]);
    }
  }, 240_000);
});
