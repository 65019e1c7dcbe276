// The index through its library API on the static bundled model (real ONNX, real PGlite with
// pgvector in a folder): documents in, the right clause out with its page; a second run touches
// exactly what changed; the dense-only ranking equals exact float cosine; and every bad input is
// an IndexError that says what to do, with nothing in the index lost.
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Embedder } from '../../src/embedder/types.ts';
import { loadModelFolder, STATIC_MODEL_DIR, TEST_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { IndexError, openIndex, type SearchIndex, type UpdateEvent } from '../../src/search-index/index.ts';
import { MARKER_FILE, openLocation } from '../../src/search-index/location.ts';
import type { Sql } from '../../src/search-index/sql.ts';
import { indexModelOf } from '../../src/search-index/model.ts';
import { cutLog, insertFile, type NewPassage, vacuumCounts } from '../../src/search-index/store.ts';
import { buildDenseGraph, ensureSchema, hasDenseGraph, SCHEMA_VERSION } from '../../src/search-index/schema.ts';
import { signScorer } from '../../src/search-index/search.ts';
import { makePdf } from '../support/documents.ts';
import { contractText, TOPICS, writeContracts } from '../support/contracts.ts';

let dir: string;
let docs: string;
let embedder: Embedder;
let index: SearchIndex;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lexembed-index-'));
  docs = join(dir, 'contracts');
  await writeContracts(docs, 12);
  writeFileSync(join(docs, 'damaged.pdf'), makePdf([['1. Rent is due monthly.']]).slice(0, 200));
  writeFileSync(join(docs, 'minutes.doc'), new Uint8Array([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]));
  embedder = await loadModelFolder(STATIC_MODEL_DIR, {});
  index = await openIndex(join(dir, 'index'), { embedder });
}, 120_000);

afterAll(async () => {
  await index?.close();
  await embedder?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const passagesOf = async () => (await index.stats()).passages;

describe('a folder indexed and searched', () => {
  it('indexes every document file, names the ones it cannot read with what to do', async () => {
    const events: UpdateEvent[] = [];
    const report = await index.update([docs], (e) => events.push(e));
    expect(report.added).toHaveLength(12);
    // A .doc is a document it cannot read: named with what to do, not left out as another kind of file.
    expect(report.failed).toEqual([
      { file: 'damaged.pdf', reason: expect.stringMatching(/^a PDF cut off before its end .*; get the file again/) },
      { file: 'minutes.doc', reason: expect.stringMatching(/^a legacy Word \.doc file .*; save it as \.docx/) },
    ]);
    expect(report.ignored).toEqual([]);
    const stats = await index.stats();
    expect(stats.files).toBe(12);
    // Long contracts (every third) span more than one passage.
    expect(stats.passages).toBeGreaterThan(12);
    // An embedded index builds no dense graph: its dense shortlist is a scan of the bits in memory.
    expect(events.filter((e) => e.kind === 'graph')).toEqual([]);
  }, 120_000);

  it('finds the clause a question asks about, with its file, page and text', async () => {
    for (const [i, [topic]] of TOPICS.entries()) {
      const [hit] = await index.search(`What does the contract say about ${topic}?`, { top: 1 });
      expect(hit!.text.replace(/\s+/g, ' '), topic).toContain(TOPICS[i]![1]);
      expect(hit!.file).toMatch(new RegExp(`^contract-(${[i, i + 8].map((n) => String(n).padStart(2, '0')).join('|')})\\.`));
    }
    const [pdf] = await index.search('termination for convenience', { top: 1, file: '*.pdf' });
    expect(pdf).toMatchObject({ file: expect.stringMatching(/^contract-(02|10)\.pdf$/), unit: { name: 'page', first: 1, last: 2 } }); // a short contract: one passage over both pages
  }, 120_000);

  it('scopes a question that names its contract to it: the clause, not another contract\'s or the title page', async () => {
    const question = 'governing law in the agreement between Party 9A Ltd and Party 9B Inc.';
    const [hit] = await index.search(question, { top: 1 });
    expect(hit!.file).toBe('contract-09.md'); // a long contract: its title and the clause are different passages
    expect(hit!.text).toContain('GOVERNING LAW');
    const [alone] = await index.search(question, { top: 1, documentContext: false });
    expect(`${alone!.file} ${alone!.text.includes('GOVERNING LAW')}`).not.toBe('contract-09.md true');
    // A question that names no document, and one asked within its document, rank as before.
    const ids = (hits: { passageId: string }[]) => hits.map((h) => h.passageId);
    expect(ids(await index.search('governing law', { top: 5 }))).toEqual(ids(await index.search('governing law', { top: 5, documentContext: false })));
    // A question of nothing but the name (the document's opening line) finds the passage that holds it, not the document's passages tied.
    const title = 'AGREEMENT 10 between Party 9A Ltd and Party 9B Inc.';
    for (const mode of ['hybrid', 'sparse'] as const) {
      const [first, second] = await index.search(title, { top: 2, mode });
      expect([first!.file, first!.chunk, first!.score > second!.score], mode).toEqual(['contract-09.md', 0, true]);
    }
    const within = { top: 5, document: 'contract-09.md' };
    expect(ids(await index.search(question, within))).toEqual(ids(await index.search(question, { ...within, documentContext: false })));
  }, 120_000);

  it('filters by glob and document, and pages with offset', async () => {
    const mds = await index.search('governing law', { top: 20, file: '*.md' });
    expect(mds.length).toBeGreaterThan(0);
    expect(mds.every((h) => h.file.endsWith('.md'))).toBe(true);
    const one = await index.search('governing law', { top: 20, document: 'contract-05.md' });
    expect(new Set(one.map((h) => h.file))).toEqual(new Set(['contract-05.md']));
    const all = await index.search('interest on late payment', { top: 12 });
    const second = await index.search('interest on late payment', { top: 6, offset: 6 });
    expect(second.map((h) => [h.rank, h.passageId])).toEqual(all.slice(6).map((h) => [h.rank, h.passageId]));
  }, 120_000);

  it('ranks --dense-only as exact cosine with the float vectors does (up to int8 rounding)', async () => {
    const query = 'Can the landlord keep the deposit?';
    const hits = await index.search(query, { top: 10, mode: 'dense' });
    const every = await index.search(query, { top: 1000, mode: 'dense' });
    expect(every.length).toBe((await index.stats()).passages);
    const embed = async (texts: string[], task: 'retrieval/query' | 'retrieval/document') => {
      const result = await embedder.embed({ texts, task, overflowStrategy: 'drop_end', dimensions: null });
      if (!result.ok) throw new Error('embedding failed');
      return result.value.vectors;
    };
    const [q] = await embed([query], 'retrieval/query');
    const vectors = await embed(every.map((h) => h.text), 'retrieval/document');
    const exact = every.map((h, i) => ({ id: h.passageId, s: vectors[i]!.reduce((a, x, k) => a + x * q![k]!, 0) })).sort((a, b) => b.s - a.s);
    const exactOf = new Map(exact.map((e) => [e.id, e.s]));
    // Each hit's float cosine is the exact ranking's at its rank, to int8's rounding (passages here repeat clauses, so ties reorder).
    hits.forEach((h, i) => {
      expect(Math.abs(exactOf.get(h.passageId)! - exact[i]!.s)).toBeLessThan(0.002);
      expect(Math.abs(h.dense! - exactOf.get(h.passageId)!)).toBeLessThan(0.002);
    });
  }, 120_000);

  it('hybrid search uses both lists: sparse-only and dense-only each return their own scores', async () => {
    const [hybrid] = await index.search('force majeure flood fire war', { top: 1 });
    const [sparse] = await index.search('force majeure flood fire war', { top: 1, mode: 'sparse' });
    expect(hybrid!.dense).not.toBeNull();
    expect(hybrid!.sparse).not.toBeNull();
    expect(sparse!.dense).toBeNull();
    expect(sparse!.text).toContain('flood, fire, war');
  }, 120_000);
});

describe('a second run updates exactly what changed', () => {
  it('counts unchanged files and embeds nothing', async () => {
    const before = await passagesOf();
    const events: UpdateEvent[] = [];
    const report = await index.update([docs], (e) => events.push(e));
    expect(report).toMatchObject({ added: [], changed: [], renamed: [], removed: [], unchanged: 12, passagesAdded: 0 });
    expect(events.map((e) => e.kind)).toEqual(['failed', 'failed']); // the two it cannot read, tried again; no graph built again
    expect(await passagesOf()).toBe(before);
  }, 120_000);

  it('adds a new file, re-embeds a changed one, moves a renamed one and removes a deleted one', async () => {
    await writeContracts(docs, 1, 12); // contract-12.txt, new
    writeFileSync(join(docs, 'contract-01.md'), contractText(1) + '\n\n9. NOTICES. Notices go to the registered office by courier.');
    renameSync(join(docs, 'contract-04.txt'), join(docs, 'renamed-04.txt'));
    unlinkSync(join(docs, 'contract-05.md'));
    const report = await index.update([docs]);
    expect(report).toMatchObject({ added: ['contract-12.txt'], changed: ['contract-01.md'], renamed: [{ from: 'contract-04.txt', to: 'renamed-04.txt' }], removed: ['contract-05.md'], unchanged: 9 });
    expect((await index.search('notices by courier to the registered office', { top: 1 }))[0]!.file).toBe('contract-01.md');
    expect((await index.search('governing law', { top: 50 })).map((h) => h.file)).not.toContain('contract-05.md');
    expect((await index.search('security deposit', { top: 50 })).map((h) => h.file)).toContain('renamed-04.txt');
  }, 120_000);

  it('keeps the version it read when a changed file can no longer be read, and says so', async () => {
    writeFileSync(join(docs, 'contract-06.pdf'), makePdf([['6. ASSIGNMENT.']]).slice(0, 150));
    const report = await index.update([docs]);
    expect(report.failed).toContainEqual({ file: 'contract-06.pdf', reason: expect.stringMatching(/PDF.*\(the index keeps the version it read before\)$/) });
    expect(report.changed).toEqual([]);
    expect((await index.search('assignment without consent', { top: 20 })).map((h) => h.file)).toContain('contract-06.pdf');
  }, 120_000);

  it('keeps the corpus counts equal to the passages (no passage lost or doubled)', async () => {
    const counted = (await index.stats()).passages;
    await index.close();
    const raw = await openLocation(join(dir, 'index'), { create: false });
    const [row] = await raw.query<{ n: number; doubled: number }>('select count(*)::int as n, (select count(*) from (select file_id, chunk from lexembed_passages group by 1, 2 having count(*) > 1) d)::int as doubled from lexembed_passages');
    // Each term's count is the passages holding it, and a term none holds (after the removals) has no row.
    const [terms] = await raw.query<{ wrong: number; rows: number }>(`select count(*) filter (where held.df is distinct from t.df)::int as wrong, count(*)::int as rows
      from (select term, count(*)::int as df from lexembed_sparse, unnest(lexembed_sparse_terms(sparse)) as term group by term) held
      full join (select * from lexembed_terms where term <> -1) t using (term)`);
    await raw.close();
    expect(row).toEqual({ n: counted, doubled: 0 });
    expect(terms!.wrong).toBe(0);
    expect(terms!.rows).toBeGreaterThan(100);
    index = await openIndex(join(dir, 'index'), { embedder });
  }, 120_000);
});

describe('bad input: an IndexError that says what to do', () => {
  const refused = async (work: () => Promise<unknown>) => {
    const error = await work().then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(IndexError);
    return (error as Error).message;
  };

  it('a second process (or handle) on the same index folder', async () => {
    expect(await refused(() => openIndex(join(dir, 'index'), { embedder }))).toMatch(/in use by process \d+.*wait for it to finish/);
  }, 120_000);

  it('a folder that is something else, and a missing index for a search', async () => {
    const other = join(dir, 'other');
    await writeContracts(other, 1);
    expect(await refused(() => openIndex(other, { embedder }))).toMatch(/is not a lexembed index .* not empty/);
    expect(await refused(() => openIndex(join(dir, 'nowhere'), { embedder, create: false }))).toMatch(/no index at .*lexembed index/);
  }, 120_000);

  it('a query too long, an empty one, a bad page', async () => {
    expect(await refused(() => index.search('word '.repeat(20_000)))).toMatch(/100,000 characters.*at most 10,000/);
    expect(await refused(() => index.search('   '))).toMatch(/query is empty/);
    expect(await refused(() => index.search('rent', { top: 0 }))).toMatch(/top must be an integer from 1 to 1000/);
  }, 120_000);

  it('a source folder that is gone: nothing removed', async () => {
    const before = await index.stats();
    expect(await refused(() => index.update([join(dir, 'moved-away')]))).toMatch(/no such file or folder.*Nothing was changed/);
    expect(await index.stats()).toEqual(before);
  }, 120_000);

  it('another model: refused by name, and a model without sparse vectors', async () => {
    const hybrid = await loadModelFolder(join(STATIC_MODEL_DIR, '../legal-2-embedder'), {});
    const tiny = await loadModelFolder(TEST_MODEL_DIR, {});
    try {
      await index.close();
      expect(await refused(() => openIndex(join(dir, 'index'), { embedder: hybrid }))).toMatch(/holds vectors of model legal-2-embedder-static-v4\.6 .* this model is legal-2-embedder-hybrid-v4\.6.*do not compare/);
      expect(await refused(() => openIndex(join(dir, 'index'), { embedder: tiny }))).toMatch(/has no sparse vectors/);
    } finally {
      await hybrid.dispose();
      await tiny.dispose();
      index = await openIndex(join(dir, 'index'), { embedder });
    }
  }, 120_000);

  it('an index written by a newer lexembed', async () => {
    await index.close();
    const raw = await openLocation(join(dir, 'index'), { create: false });
    await raw.query('update lexembed_index set schema_version = 99');
    await raw.close();
    try {
      expect(await refused(() => openIndex(join(dir, 'index'), { embedder }))).toMatch(/index format 99.*upgrade lexembed/);
    } finally {
      const back = await openLocation(join(dir, 'index'), { create: false });
      await back.query('update lexembed_index set schema_version = $1', [SCHEMA_VERSION]);
      await back.close();
      index = await openIndex(join(dir, 'index'), { embedder });
    }
  }, 120_000);

  /** A new index of three contracts written into `folder`. */
  async function indexOfContracts(location: string, folder: string): Promise<SearchIndex> {
    await writeContracts(folder, 3);
    const made = await openIndex(location, { embedder });
    await made.update([folder]);
    return made;
  }

  /** A question's top 5 as (file, chunk, score) rows. */
  const topFive = async (index: SearchIndex, question: string) => (await index.search(question, { top: 5 })).map((h) => [h.file, h.chunk, h.score.toFixed(6)]);

  /** The index at `location`, reopened: the same top 5 before an update of `folder` (which embeds nothing) and after it. */
  async function searchesAsBeforeThroughAnUpdate(location: string, folder: string, question: string, before: unknown[]): Promise<void> {
    const reopened = await openIndex(location, { embedder });
    try {
      expect(await topFive(reopened, question)).toEqual(before);
      expect(await reopened.update([folder])).toMatchObject({ added: [], changed: [], unchanged: 3, passagesAdded: 0 });
      expect(await topFive(reopened, question)).toEqual(before);
    } finally {
      await reopened.close();
    }
  }

  /**
   * An index of three contracts (`name`.index, of the folder `name`) whose top 5 for `question` is
   * taken, then its tables changed by `alter` (as an older lexembed or a cut-off run left them):
   * the same top 5 before an update and through it. Its location and that top 5.
   */
  async function alteredThenSearchedAsBefore(name: string, question: string, alter: (raw: Sql) => Promise<unknown>): Promise<{ location: string; before: unknown[][] }> {
    const location = join(dir, `${name}.index`);
    const folder = join(dir, name);
    const made = await indexOfContracts(location, folder);
    const before = await topFive(made, question);
    await made.close();
    await onRaw(location, alter);
    await searchesAsBeforeThroughAnUpdate(location, folder, question, before);
    return { location, before };
  }

  /** The raw index after an update brought it to this format: its version, a sparse row per passage. */
  async function openUpgraded(location: string): Promise<Sql> {
    const after = await openLocation(location, { create: false });
    try {
      expect(await after.query('select schema_version from lexembed_index')).toEqual([{ schema_version: SCHEMA_VERSION }]);
      expect(await after.query(`select (select count(*) from lexembed_sparse) = (select count(*) from lexembed_passages) as same, (select count(*) from lexembed_sparse) > 0 as some`)).toEqual([{ same: true, some: true }]);
      return after;
    } catch (error) {
      await after.close();
      throw error;
    }
  }

  it('an index of format 1 (no document contexts) is searched as it is, and the next update adds them without embedding again', async () => {
    const old = join(dir, 'format-1.index');
    const folder = join(dir, 'format-1');
    const made = await indexOfContracts(old, folder);
    await made.close();
    const raw = await openLocation(old, { create: false });
    await toFormat2(raw);
    await raw.query('alter table lexembed_files drop column context, drop column context_sparse');
    await raw.query('update lexembed_index set schema_version = 1');
    await raw.close();
    const reopened = await openIndex(old, { embedder });
    try {
      expect((await reopened.search('governing law in the agreement between Party 1A Ltd and Party 1B Inc.', { top: 1 }))[0]!.file).toBe('contract-01.md');
      expect(await reopened.update([folder])).toMatchObject({ added: [], changed: [], unchanged: 3, passagesAdded: 0 });
    } finally {
      await reopened.close();
    }
    const after = await openUpgraded(old);
    try {
      const contexts = await after.query<{ path: string; context: string; terms: number }>('select path, context, cardinality(lexembed_sparse_terms(context_sparse)) as terms from lexembed_files order by path');
      expect(contexts.map((c) => [c.path, c.context, c.terms > 3])).toEqual([0, 1, 2].map((i) => [expect.stringMatching(new RegExp(`^contract-0${i}\\.`)), `AGREEMENT ${i + 1} between Party ${i}A Ltd and Party ${i}B Inc.`, true]));
    } finally {
      await after.close();
    }
  }, 120_000);

  it('an index of format 2 (sparse vectors in the passages\' rows) gives the same hits, and the next update moves them to their own table without embedding again', async () => {
    const { location } = await alteredThenSearchedAsBefore('format-2', 'governing law in the agreement between Party 1A Ltd and Party 1B Inc.', toFormat2);
    const after = await openUpgraded(location);
    try {
      expect(await after.query(`select count(*)::int as n from information_schema.columns where table_name = 'lexembed_passages' and column_name = 'sparse'`)).toEqual([{ n: 0 }]);
    } finally {
      await after.close();
    }
  }, 120_000);

  it('an index without the contexts\' terms index (written before it) names the same document, and the next update adds it', async () => {
    const present = async (raw: Sql) => (await raw.query<{ n: number }>(`select count(*)::int as n from pg_indexes where indexname = 'lexembed_files_context_gin'`))[0]!.n;
    const { location, before } = await alteredThenSearchedAsBefore('context-terms', 'governing law in the agreement between Party 1A Ltd and Party 1B Inc.', async (raw) => {
      expect(await present(raw)).toBe(1);
      await raw.query('drop index lexembed_files_context_gin');
    });
    expect(before[0]![0]).toBe('contract-01.md');
    expect(await onRaw(location, present)).toBe(1);
  }, 120_000);

  it('a new index folder keeps 1 MB log segments and no template databases; one made with PostgreSQL\'s 16 MB segments still opens, searches and updates', async () => {
    const old = join(dir, 'wal-16.index');
    const folder = join(dir, 'wal-16');
    // The folder as lexembed made it before: initdb's defaults (16 MB segments, template0 and template1).
    mkdirSync(old);
    writeFileSync(join(old, MARKER_FILE), JSON.stringify({ format: 'lexembed-index', engine: 'pglite', database: 'pgdata' }));
    await (await PGlite.create({ dataDir: join(old, 'pgdata') })).close();
    const made = await indexOfContracts(old, folder);
    const question = 'governing law in the agreement between Party 1A Ltd and Party 1B Inc.';
    const before = await topFive(made, question);
    expect(before[0]![0]).toBe('contract-01.md');
    await made.close();
    await searchesAsBeforeThroughAnUpdate(old, folder, question, before);
    const layout = (location: string) =>
      onRaw(location, async (raw) => {
        const [segment] = await raw.query<{ wal_segment_size: string }>('show wal_segment_size');
        const databases = await raw.query<{ datname: string }>('select datname from pg_database order by datname');
        return { segment: segment!.wal_segment_size, databases: databases.map((d) => d.datname) };
      });
    expect(await layout(old)).toEqual({ segment: '16MB', databases: ['postgres', 'template0', 'template1'] });
    await (await indexOfContracts(join(dir, 'wal-1.index'), join(dir, 'wal-1'))).close();
    expect(await layout(join(dir, 'wal-1.index'))).toEqual({ segment: '1MB', databases: ['postgres'] });
  }, 120_000);

  it('an index made with a dense graph (before the bits were scanned in memory): searched as before, and the next run drops the graph', async () => {
    const { location } = await alteredThenSearchedAsBefore('graph', 'governing law in the agreement between Party 2A Ltd and Party 2B Inc.', async (raw) => {
      expect(await hasDenseGraph(raw)).toBe(false); // a new embedded index has none
      await buildDenseGraph(raw);
      expect(await hasDenseGraph(raw)).toBe(true);
    });
    expect(await onRaw(location, hasDenseGraph)).toBe(false);
  }, 120_000);

  it('cuts the write-ahead log once it passes a bound (cutLog, which vacuumCounts and settleWrites call): PGlite starts no checkpoint of its own when the log passes its cap', async () => {
    const location = join(dir, 'long-run.index');
    const sql = await openLocation(location, { create: true });
    try {
      const model = indexModelOf(embedder);
      await ensureSchema(sql, { ...model.settings, chunkTokens: 256 }, 'test');
      const texts = TOPICS.map((_, i) => contractText(i + 1, true));
      const { dense, sparse } = await model.embedPassages(texts);
      const log = () => readdirSync(join(location, 'pgdata', 'pg_wal')).filter((f) => /^[0-9A-F]{24}$/.test(f)).length;
      for (let file = 0; file < 40 && log() <= 24; file++) {
        const k = (i: number) => i % texts.length;
        await insertRows(sql, `f${file}`, Array.from({ length: 400 }, (_, i) => ({ body: texts[k(i)]!, dense: dense[k(i)]!, sparse: sparse[k(i)]! })), model.settings.vocabularySize);
      }
      expect(log()).toBeGreaterThan(24); // 1 MB segments: more than the 16 MB cap, kept
      await vacuumCounts(sql); // under CHECKPOINT_AFTER_LOG_BYTES since the last checkpoint: none yet
      expect(log()).toBeGreaterThan(24);
      await cutLog(sql, 16 * 2 ** 20);
      expect(log()).toBeLessThanOrEqual(17);
    } finally {
      await sql.close();
    }
  }, 120_000);

  it('keeps a passage\'s long sparse vector in the table\'s own pages, and an index made before does so from its next update', async () => {
    const location = join(dir, 'inline.index');
    const folder = join(dir, 'inline');
    await (await indexOfContracts(location, folder)).close();
    const raw = await openLocation(location, { create: false });
    const option = () => sparseTableOptions(raw);
    const toasted = async () => {
      const [{ toast } = { toast: '' }] = await raw.query<{ toast: string }>(`select reltoastrelid::regclass::text as toast from pg_class where oid = 'lexembed_sparse'::regclass`);
      return (await raw.query<{ n: number }>(`select count(distinct chunk_id)::int as n from ${toast}`))[0]!.n;
    };
    // A passage of 600 terms: a 4.8 KB sparse vector, over PostgreSQL's 2 KB default.
    const insertLong = async (path: string) => {
      const [{ size, width } = { size: 0, width: 0 }] = await raw.query<{ size: number; width: number }>(`select (settings->>'vocabularySize')::int as size, (settings->>'dimensions')::int as width from lexembed_index`);
      const sparse = { indices: Array.from({ length: 600 }, (_, i) => i * 7), values: Array.from({ length: 600 }, () => 0.5) };
      await insertRows(raw, path, [{ body: 'x', dense: new Float32Array(width).fill(0.1), sparse }], size);
    };
    try {
      expect(await option()).toEqual(['toast_tuple_target=8160']);
      await insertLong('long-1');
      expect(await toasted()).toBe(0);
      // As an index made before: the default target; its next update sets it.
      await raw.query('alter table lexembed_sparse reset (toast_tuple_target)');
      await insertLong('long-2');
      expect(await toasted()).toBe(1);
    } finally {
      await raw.close();
    }
    const reopened = await openIndex(location, { embedder });
    await reopened.update([folder]);
    await reopened.close();
    expect(await onRaw(location, sparseTableOptions)).toEqual(['toast_tuple_target=8160']);
  }, 120_000);

  it('a damaged index (its control file overwritten): refused with what to do, not a crash or a hang', async () => {
    const damaged = join(dir, 'damaged.index');
    const made = await openIndex(damaged, { embedder });
    await made.update([join(dir, 'format-1')]);
    await made.close();
    writeFileSync(join(damaged, 'pgdata', 'global', 'pg_control'), Buffer.alloc(8192, 7));
    expect(await refused(() => openIndex(damaged, { embedder }))).toMatch(/the index at .*damaged\.index cannot be opened \(.*\): it may be damaged; remove it and run lexembed index again/);
  }, 120_000);
});

/** `work` on the index at `location` opened as SQL, closed after. */
async function onRaw<T>(location: string, work: (raw: Sql) => Promise<T>): Promise<T> {
  const raw = await openLocation(location, { create: false });
  try {
    return await work(raw);
  } finally {
    await raw.close();
  }
}

/** Passages written straight to the index as one file's rows (chunk i for the i-th), no document behind them. */
async function insertRows(sql: Sql, path: string, rows: readonly Pick<NewPassage, 'body' | 'dense' | 'sparse'>[], vocabularySize: number): Promise<void> {
  const passages = rows.map((r, chunk) => ({ ...r, chunk, start: 0, end: 1, unitFirst: null, unitLast: null }));
  await sql.transaction((tx) => insertFile(tx, { root: 'r', path, sha256: '-', bytes: 0, unit: null, context: '', contextSparse: { indices: [], values: [] } }, passages, vocabularySize));
}

/** The sparse table's storage options (reloptions). */
const sparseTableOptions = async (raw: Sql) => (await raw.query<{ options: string[] | null }>(`select reloptions as options from pg_class where oid = 'lexembed_sparse'::regclass`))[0]!.options;

/** Turns a current index back into format 2's layout: the sparse vectors in the passages' rows, with their GIN index there. */
async function toFormat2(raw: Sql): Promise<void> {
  await raw.transaction(async (tx) => {
    const [column] = await tx.query<{ size: string }>(`select format_type(atttypid, atttypmod) as size from pg_attribute where attrelid = 'lexembed_sparse'::regclass and attname = 'sparse'`);
    await tx.query(`alter table lexembed_passages add column sparse ${column!.size}`);
    await tx.query('update lexembed_passages p set sparse = s.sparse from lexembed_sparse s where s.id = p.id');
    await tx.query('alter table lexembed_passages alter column sparse set not null');
    await tx.query('drop table lexembed_sparse');
    await tx.query('create index lexembed_passages_terms on lexembed_passages using gin (lexembed_sparse_terms(sparse))');
    await tx.query('update lexembed_index set schema_version = 2');
  });
}

describe('the dense shortlist\'s sign score', () => {
  it('reads the sign bits as PostgreSQL sends them (varbit_send, base64): the query\'s values summed with their signs', async () => {
    const sql = await openLocation(join(dir, 'sign-bits.index'), { create: true });
    try {
      for (const width of [13, 1792]) {
        const q = Float32Array.from({ length: width }, (_, i) => Math.sin(i + 1));
        const bits = Array.from({ length: width }, (_, i) => (Math.cos(3 * i) > 0 ? '1' : '0')).join('');
        const [row] = await sql.query<{ b: string }>(`select encode(varbit_send($1::bit(${width})), 'base64') as b`, [bits]);
        const expected = [...bits].reduce((sum, bit, i) => sum + (bit === '1' ? q[i]! : -q[i]!), 0);
        expect(signScorer(q)(row!.b)).toBeCloseTo(expected, 5);
      }
    } finally {
      await sql.close();
    }
  });
});
