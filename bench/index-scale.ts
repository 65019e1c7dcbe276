// `npm run bench:index-scale`: the search index at scale on the embedded engine (PGlite +
// pgvector in a folder), in one warm process:
//   - R real passages (dev-set texts cut to 256 tokens) embedded by the model: the cost of
//     embedding, the baseline an index write is compared with;
//   - N chunks made from them (each a real passage's text and sparse vector, its dense vector
//     the real one plus noise, renormalised: synthetic vectors for the scale figure), written
//     1,000 at a time, then 1,000 more: that write's time against embedding 1,000 chunks;
//   - bytes on disk per chunk (text included); hybrid and dense-only query latency, p50 / p99,
//     with the query's embedding included (the dense shortlist from every chunk's sign bits in
//     memory, as SearchIndex.search reads them: their first read timed; an index kept from before
//     with pgvector's HNSW graph is searched by the graph too, same run); dense recall@10 against
//     an exact scan of the same int8 vectors; the process's resident memory;
//   - today's `lexembed search` of an embed output (JSONL, read whole per query) on 1,046 and
//     5,000 of the same chunks, against the index on the same chunks, warm, same run.
// With --queries-only --keep DIR, the index a run kept there is searched again (the latency and
// recall figures only: what a change to the search costs, without writing the chunks again).
// Usage: npm run bench:index-scale -- [--chunks 100000] [--real 1000] [--queries 200] [--model models/legal-2-embedder] [--keep DIR] [--queries-only]
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { BUNDLED_MODEL_DIR, loadModelFolder, PROJECT_ROOT } from '../src/node/runtime/load-model.ts';
import { openModelSource } from '../src/cli/model-source.ts';
import { readMeta, searchIndex } from '../src/cli/search.ts';
import { indexModelOf, cosineInt8 } from '../src/search-index/model.ts';
import { ensureSchema, hasDenseGraph, hasSparseTermsIndex } from '../src/search-index/schema.ts';
import { openPostings, type SparsePostings } from '../src/search-index/postings.ts';
import { signBitsOfIndex, type SignBitsTable } from '../src/search-index/sign-bits.ts';
import { openLocation } from '../src/search-index/location.ts';
import { insertFile, settleWrites, vacuumCounts, type NewPassage } from '../src/search-index/store.ts';
import { searchPassages } from '../src/search-index/search.ts';
import type { Sql } from '../src/search-index/sql.ts';

const { values } = parseArgs({
  options: {
    chunks: { type: 'string', default: '100000' },
    real: { type: 'string', default: '1000' },
    queries: { type: 'string', default: '200' },
    model: { type: 'string', default: BUNDLED_MODEL_DIR },
    dev: { type: 'string', default: resolve(PROJECT_ROOT, '../shared/data/legal-eval-dev') },
    keep: { type: 'string', default: '' },
    'queries-only': { type: 'boolean', default: false },
  },
  allowNegative: true,
});
const N = Number(values.chunks);
const R = Number(values.real);
const work = values.keep || mkdtempSync(join(tmpdir(), 'lexembed-index-scale-'));
mkdirSync(work, { recursive: true });
const readJsonl = (path: string) => readFileSync(path, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { id: string; text: string });
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
const rss = () => Math.round(process.memoryUsage().rss / 2 ** 20);
const du = (dir: string): number => readdirSync(dir, { withFileTypes: true }).reduce((s, e) => s + (e.isDirectory() ? du(join(dir, e.name)) : statSync(join(dir, e.name)).size), 0);

const embedder = await loadModelFolder(resolve(values.model!), { batch: { tokens: 'auto', size: 'auto' } });
const model = indexModelOf(embedder);
const settings = { ...model.settings, chunkTokens: 256 };

// Real passages: the dev set's texts, first 256-token chunk each.
const texts = ['obliqa-adgm', 'oyez-scotus', 'pdpa-singapore'].flatMap((t) => readJsonl(join(values.dev!, t, 'corpus.jsonl'))).slice(0, R).map((r) => model.chunk(r.text, 256)[0]!.text);
const queries = readJsonl(join(values.dev!, 'obliqa-adgm', 'queries.jsonl')).slice(0, Number(values.queries)).map((q) => q.text);
let t = performance.now();
const real = await model.embedPassages(texts);
const embedSeconds = (performance.now() - t) / 1000;
console.log(`embedding ${R} real chunks: ${embedSeconds.toFixed(1)} s (${((embedSeconds / R) * 1000).toFixed(1)} s per 1,000)`);

let seed = 7;
const random = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32);
const gaussian = () => Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random());
function syntheticPassage(i: number): NewPassage {
  const k = i % R;
  const base = real.dense[k]!;
  const dense = new Float32Array(base.length);
  let norm = 0;
  for (let j = 0; j < base.length; j++) norm += (dense[j] = base[j]! + 0.5 * gaussian() / Math.sqrt(base.length)) ** 2;
  for (let j = 0; j < base.length; j++) dense[j]! /= Math.sqrt(norm);
  return { chunk: i, start: 0, end: texts[k]!.length, unitFirst: null, unitLast: null, body: texts[k]!, dense, sparse: real.sparse[k]! };
}

async function fill(sql: Sql, from: number, to: number, onBatch?: (seconds: number, size: number) => void): Promise<void> {
  for (let at = from; at < to; at += 1000) {
    const passages = Array.from({ length: Math.min(1000, to - at) }, (_, j) => syntheticPassage(at + j));
    const started = performance.now();
    await sql.transaction((tx) => insertFile(tx, { root: 'bench', path: `part-${at}`, sha256: '-', bytes: 0, unit: null, context: '', contextSparse: { indices: [], values: [] } }, passages, settings.vocabularySize));
    await vacuumCounts(sql); // as lexembed index does after every 2,000 passages
    onBatch?.((performance.now() - started) / 1000, at + passages.length);
  }
  await settleWrites(sql);
}

// Today's search (a JSONL output read whole per query) against the index, on the same chunks.
async function againstToday(size: number): Promise<void> {
  const dir = join(work, `today-${size}`);
  mkdirSync(dir, { recursive: true });
  const out = join(dir, 'out.jsonl');
  const lines: string[] = [];
  for (let i = 0; i < size; i++) lines.push(JSON.stringify({ id: `doc-${i}`, embedding: Array.from(syntheticPassage(i).dense, (x) => Number(x.toFixed(6))) }));
  writeFileSync(out, lines.join('\n') + '\n');
  const identity = { name: settings.model.name, id: settings.model.id, fingerprint: settings.model.fingerprint };
  writeFileSync(`${out}.meta.json`, JSON.stringify({ settings: { model: identity, task: 'retrieval/document', dimensions: null, chunk_tokens: null } }));
  const source = await openModelSource({ model: resolve(values.model!), remote: '', 'model-name': 'legal-2-embedder', device: 'cpu', 'gpu-adapter': '', 'webgpu-runtime': 'native', dtype: 'auto', graph: 'auto' });
  const sql = await openLocation(join(dir, 'index'), { create: true });
  await ensureSchema(sql, settings, 'bench');
  await fill(sql, 0, size);
  const table = await signBitsOfIndex(sql, settings.dimensions);
  const posted = table && (await openPostings(sql, sql.copyOut!.bind(sql), sql.folder!, table, settings.vocabularySize));
  const meta = readMeta(out);
  const todayMs: number[] = [];
  const indexMs: number[] = [];
  // Both warm: one untimed query each first (JIT, the model's first run, the database's caches).
  await searchIndex(source, out, meta, queries[0]!, { top: 10, rerank: false, candidates: 50 });
  await searchPassages(sql, await model.embedQuery(queries[0]!), settings.vocabularySize, { top: 10 }, undefined, table, posted);
  for (const q of queries.slice(1, 11)) {
    t = performance.now();
    await searchIndex(source, out, meta, q, { top: 10, rerank: false, candidates: 50 });
    todayMs.push(performance.now() - t);
    t = performance.now();
    await searchPassages(sql, await model.embedQuery(q), settings.vocabularySize, { top: 10 }, undefined, table, posted);
    indexMs.push(performance.now() - t);
  }
  console.log(`${size.toLocaleString('en')} chunks: today's search of the JSONL output (${(statSync(out).size / 2 ** 20).toFixed(0)} MB) p50 ${quantile(todayMs, 0.5).toFixed(0)} ms; the index (hybrid, ${(du(join(dir, 'index')) / 2 ** 20).toFixed(0)} MB) p50 ${quantile(indexMs, 0.5).toFixed(0)} ms: ×${(quantile(todayMs, 0.5) / quantile(indexMs, 0.5)).toFixed(0)}`);
  await sql.close();
  await source.dispose();
}

const folder = join(work, 'index');
const sql = await openLocation(folder, { create: !values['queries-only'] });
if (values['queries-only']) console.log(`searching the index kept at ${folder} again`);
else await writeTheIndex();

async function writeTheIndex(): Promise<void> {
  await againstToday(1046);
  await againstToday(5000);
  await ensureSchema(sql, settings, 'bench');
  let started = performance.now();
  await fill(sql, 0, N, (seconds, size) => {
    if (size % 50_000 === 0) console.log(`  ${size.toLocaleString('en')} chunks written (${((performance.now() - started) / 1000).toFixed(0)} s; this 1,000: ${seconds.toFixed(2)} s; ${rss()} MB resident)`);
  });
  console.log(`${N.toLocaleString('en')} chunks written in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  // What a user's next run costs: 1,000 more chunks written and settled, against embedding them.
  started = performance.now();
  await fill(sql, N, N + 1000);
  const adding = (performance.now() - started) / 1000;
  const embedding = (embedSeconds / R) * 1000;
  console.log(`adding 1,000 chunks to ${N.toLocaleString('en')}: ${adding.toFixed(2)} s written, against ${embedding.toFixed(1)} s to embed them (+${((adding / embedding) * 100).toFixed(0)} %)`);
  await sql.query('checkpoint');
  console.log(`on disk: ${(du(folder) / 2 ** 20).toFixed(0)} MB, ${Math.round(du(folder) / N)} bytes per chunk (text included)`);
}

let reading = performance.now();
const table = await signBitsOfIndex(sql, settings.dimensions);
console.log(`the sign bits of ${table?.count.toLocaleString('en')} chunks read in ${((performance.now() - reading) / 1000).toFixed(2)} s (from the database, or the file a run before left)`);
reading = performance.now();
await signBitsOfIndex(sql, settings.dimensions);
console.log(`  read again (from the file beside the database) in ${((performance.now() - reading) / 1000).toFixed(2)} s`);
reading = performance.now();
const posted = await openPostings(sql, sql.copyOut!.bind(sql), folder, table!, settings.vocabularySize);
console.log(`the sparse postings of ${table?.count.toLocaleString('en')} chunks opened in ${((performance.now() - reading) / 1000).toFixed(2)} s (written from the database, or checked where a run before left them); ${rss()} MB resident`);
reading = performance.now();
await openPostings(sql, sql.copyOut!.bind(sql), folder, table!, settings.vocabularySize);
console.log(`  opened again (checked, from the files) in ${((performance.now() - reading) / 1000).toFixed(2)} s`);
// The embedded index's lists (the sign bits' scan, the sparse postings) beside a server's (the GIN's
// candidates scored in SQL; an index kept from before lexembed dropped the graph from embedded
// indexes: its HNSW graph too), each question searched every way in turn.
const shortlists: { name: string; table: SignBitsTable | undefined; postings?: SparsePostings }[] = [{ name: 'scan + postings', table, postings: posted }];
// An index written since embedded indexes dropped the GIN index has no SQL sparse path to compare.
if (await hasSparseTermsIndex(sql)) {
  shortlists.push({ name: 'scan + SQL sparse', table });
  if (await hasDenseGraph(sql)) shortlists.push({ name: 'HNSW graph + SQL sparse', table: undefined });
}
const latency: Record<string, number[]> = {};
for (const [i, q] of queries.entries()) {
  // In turn first: the first search of a question reads its sparse side's pages from disk.
  for (const shortlist of i % 2 ? [...shortlists].reverse() : shortlists) {
    for (const mode of ['hybrid', 'dense'] as const) {
      t = performance.now();
      if (mode === 'dense' && shortlist.name === 'scan + SQL sparse') continue;
      await searchPassages(sql, await model.embedQuery(q), settings.vocabularySize, { top: 10, mode }, undefined, shortlist.table, shortlist.postings);
      (latency[`${mode} (${mode === 'hybrid' ? shortlist.name : shortlist.table ? 'the sign bits scan' : 'HNSW graph'})`] ??= []).push(performance.now() - t);
    }
  }
}
for (const [key, ms] of Object.entries(latency)) console.log(`${key} query at ${N.toLocaleString('en')} chunks, embedding included: p50 ${quantile(ms, 0.5).toFixed(0)} ms, p99 ${quantile(ms, 0.99).toFixed(0)} ms (${queries.length} queries)`);

// Recall of the scan's candidates + rescoring against an exact scan of every int8 vector: one pass
// over the table for all the sample's queries (keyset pages: an offset would re-read the table).
const sample: { dense: Float32Array; approx: string[]; best: { id: string; s: number }[] }[] = [];
for (const q of queries.slice(0, 10)) {
  const embedded = await model.embedQuery(q);
  const approx = (await searchPassages(sql, embedded, settings.vocabularySize, { top: 10, mode: 'dense' }, undefined, table)).map((h) => h.passageId);
  sample.push({ dense: embedded.dense, approx, best: [] });
}
for (let after = '0'; ; ) {
  const rows = await sql.query<{ id: string; d: string }>(`select id::text as id, encode(dense, 'base64') as d from lexembed_passages where id > $1 order by id limit 20000`, [after]);
  if (!rows.length) break;
  after = rows.at(-1)!.id;
  for (const r of rows) {
    const b = Buffer.from(r.d, 'base64');
    const v = new Int8Array(b.buffer, b.byteOffset, b.length);
    for (const one of sample) one.best.push({ id: r.id, s: cosineInt8(one.dense, v) });
  }
  for (const one of sample) one.best.sort((a, b) => b.s - a.s).splice(10);
}
const recall = sample.reduce((sum, one) => sum + one.approx.filter((id) => one.best.some((b) => b.id === id)).length / 10, 0);
console.log(`dense recall@10 of the index against an exact scan: ${(recall / sample.length).toFixed(3)} (${sample.length} queries)`);
console.log(`resident memory: ${rss()} MB (model included)`);
await sql.close();
await embedder.dispose();
if (!values.keep) rmSync(work, { recursive: true, force: true });
