// `npm run bench:index-recall`: the index's approximations measured on real passages at scale.
// The dev set's three corpora (../shared/data/legal-eval-dev, 13,697 passages) among `--distractors`
// real legal passages from ../shared/data/legal-pairs (the first 256-token chunk of each text: EU
// law, statutes, contracts…), all in one index, searched with the dev set's questions:
//   - each list of the index (dense: every passage's sign bits scanned in memory + int8
//     rescoring, and pgvector's HNSW graph over the bits in its place where the index has one, as
//     a server's has; sparse: the postings files' exact idf-weighted dot product, and the GIN's
//     candidates scored by it in SQL as a server's index does)
//     against the exact ranking of the same vectors in memory (float cosine over every passage;
//     the sparse dot product over every passage): overlap of the top 10 and of the top 100;
//   - mean nDCG@10 through the index against the exact rankings' (per mode), with the distractors
//     in the corpus (harder than bench:index-quality's one task at a time);
//   - query latency p50 / p99 per mode, the query's embedding excluded (it is the same for all).
// The passages' vectors and the index are kept in --keep (default bench-results/index-recall) and
// reused by the next run with the same --distractors: the first run embeds them (about 4 s per
// 1,000 here), later ones only search. The dense vectors' file alone holds 7 KB per passage.
// Usage: npm run bench:index-recall -- [--distractors 100000] [--queries 200] [--keep DIR] [--model models/legal-2-embedder]
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { parseArgs } from 'node:util';
import { BUNDLED_MODEL_DIR, loadModelFolder, PROJECT_ROOT } from '../src/node/runtime/load-model.ts';
import { fuseByDistribution, searchPassages, type SearchMode } from '../src/search-index/search.ts';
import { indexModelOf } from '../src/search-index/model.ts';
import { openPostings, type SparsePostings } from '../src/search-index/postings.ts';
import { signBitsOfIndex, type SignBitsTable } from '../src/search-index/sign-bits.ts';
import { ensureSchema, hasDenseGraph, hasSparseTermsIndex } from '../src/search-index/schema.ts';
import { openLocation } from '../src/search-index/location.ts';
import { insertFile, settleWrites, vacuumCounts } from '../src/search-index/store.ts';
import type { SparseVector } from '../src/embedder/sparse.ts';
import { ndcg10 } from './ndcg.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: BUNDLED_MODEL_DIR },
    dev: { type: 'string', default: resolve(PROJECT_ROOT, '../shared/data/legal-eval-dev') },
    pairs: { type: 'string', default: resolve(PROJECT_ROOT, '../shared/data/legal-pairs') },
    distractors: { type: 'string', default: '100000' },
    queries: { type: 'string', default: '200' },
    keep: { type: 'string', default: resolve(PROJECT_ROOT, 'bench-results/index-recall') },
  },
});
const TASKS = ['obliqa-adgm', 'oyez-scotus', 'pdpa-singapore'];
const D = Number(values.distractors);
const work = join(values.keep!, `distractors-${D}`);
mkdirSync(work, { recursive: true });
const readJsonl = <T>(text: string) => text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as T);
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

const embedder = await loadModelFolder(resolve(values.model!), { batch: { tokens: 'auto', size: 'auto' } });
const model = indexModelOf(embedder);
const settings = { ...model.settings, chunkTokens: 256 };

// The passages: the dev corpora's rows (ids task/id), then the distractors (ids pairs/n).
const ids: string[] = [];
const texts: string[] = [];
for (const task of TASKS) {
  for (const r of readJsonl<{ id: string; text: string }>(readFileSync(join(values.dev!, task, 'corpus.jsonl'), 'utf8'))) {
    ids.push(`${task}/${r.id}`);
    texts.push(r.text);
  }
}
const seen = new Set<string>();
const sources = readdirSync(values.pairs!).filter((f) => f.endsWith('.jsonl.gz')).sort();
const rowsOf = sources.map((f) => readJsonl<{ text: string }>(gunzipSync(readFileSync(join(values.pairs!, f))).toString('utf8')));
// Round-robin over the sources, so every kind of legal text is among the distractors.
for (let i = 0, added = 0; added < D && rowsOf.some((rows) => i < rows.length); i++) {
  for (const rows of rowsOf) {
    const text = rows[i]?.text;
    if (added >= D || !text || text.length < 200 || seen.has(text)) continue;
    seen.add(text);
    ids.push(`pairs/${added++}`);
    texts.push(model.chunk(text, 256)[0]!.text);
  }
}
const N = ids.length;
console.log(`${N.toLocaleString('en')} passages: ${(N - D).toLocaleString('en')} of the dev set's corpora, ${D.toLocaleString('en')} distractors from ${sources.length} sources of legal-pairs`);

// Their dense vectors, embedded once and kept; the sparse ones made again (the tokenizer alone).
const vectorsFile = join(work, 'dense.f32');
let dense: Float32Array[];
if (existsSync(vectorsFile)) {
  const all = new Float32Array(readFileSync(vectorsFile).buffer.slice(0));
  const width = all.length / N;
  dense = Array.from({ length: N }, (_, i) => all.subarray(i * width, (i + 1) * width));
} else {
  const started = performance.now();
  dense = [];
  for (let at = 0; at < N; at += 256) {
    dense.push(...(await model.embedPassages(texts.slice(at, at + 256))).dense);
    if ((at / 256) % 40 === 0) console.log(`  embedded ${dense.length.toLocaleString('en')} (${((performance.now() - started) / 1000).toFixed(0)} s)`);
  }
  const all = new Float32Array(N * dense[0]!.length);
  dense.forEach((v, i) => all.set(v, i * v.length));
  writeFileSync(vectorsFile, all);
  console.log(`embedded ${N.toLocaleString('en')} passages in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}
const sparse: SparseVector[] = [];
for (let at = 0; at < N; at += 1000) sparse.push(...(await model.sparseOf(texts.slice(at, at + 1000), 'relative')));

// The index: files of 1,000 passages (file k, chunk j is passage k·1000 + j).
const sql = await openLocation(join(work, 'index'), { create: true });
await ensureSchema(sql, settings, 'bench');
const [{ n: stored } = { n: 0 }] = await sql.query<{ n: number }>('select count(*)::int as n from lexembed_passages');
if (stored !== N) {
  if (stored) throw new Error(`${work}/index holds ${stored} passages, not ${N}: remove it`);
  const started = performance.now();
  for (let at = 0; at < N; at += 1000) {
    const passages = texts.slice(at, at + 1000).map((body, j) => ({ chunk: j, start: 0, end: body.length, unitFirst: null, unitLast: null, body, dense: dense[at + j]!, sparse: sparse[at + j]! }));
    await sql.transaction((tx) => insertFile(tx, { root: 'bench', path: `part-${at / 1000}`, sha256: '-', bytes: 0, unit: null, context: '', contextSparse: { indices: [], values: [] } }, passages, settings.vocabularySize));
    await vacuumCounts(sql);
  }
  await settleWrites(sql);
  console.log(`indexed in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

// Exact lists in memory: float cosine over every passage; the sparse dot product with the corpus's idf.
const df = new Map<number, number>();
const postings = new Map<number, [number, number][]>();
sparse.forEach((s, d) => s.indices.forEach((term, k) => {
  df.set(term, (df.get(term) ?? 0) + 1);
  (postings.get(term) ?? postings.set(term, []).get(term)!).push([d, s.values[k]!]);
}));
interface Ranked {
  readonly d: number;
  readonly score: number;
}
function exactDense(q: Float32Array): Ranked[] {
  const scores = new Float32Array(N);
  for (let d = 0; d < N; d++) {
    const v = dense[d]!;
    let s = 0;
    for (let i = 0; i < v.length; i++) s += v[i]! * q[i]!;
    scores[d] = s;
  }
  return topOf(scores, 100);
}
function exactSparse(q: SparseVector): Ranked[] {
  const scores = new Float32Array(N);
  q.indices.forEach((term, k) => {
    const m = df.get(term);
    if (!m) return;
    const w = q.values[k]! * Math.log(1 + (N - m + 0.5) / (m + 0.5));
    for (const [d, v] of postings.get(term)!) scores[d] = scores[d]! + w * v;
  });
  return topOf(scores, 100).filter((r) => r.score > 0);
}
function topOf(scores: Float32Array, k: number): Ranked[] {
  const order = Array.from({ length: N }, (_, d) => d);
  return order.sort((a, b) => scores[b]! - scores[a]!).slice(0, k).map((d) => ({ d, score: scores[d]! }));
}
/** The exact hybrid: DBSF of the two exact top-100 lists, as search.ts fuses the index's. */
const exactHybrid = (a: readonly Ranked[], b: readonly Ranked[]): number[] =>
  fuseByDistribution([a, b].map((list) => list.map((r) => ({ id: String(r.d), score: r.score })))).map((s) => Number(s.id));
const overlap = (a: readonly number[], b: readonly number[], k: number) => {
  const want = new Set(b.slice(0, k));
  return want.size ? a.slice(0, k).filter((d) => want.has(d)).length / want.size : 1;
};

// The dense shortlist and the sparse list as the embedded index makes them (every passage's sign
// bits scanned in memory; the sparse postings files), beside pgvector's HNSW graph (what a
// PostgreSQL server's index searches) and the GIN's candidates scored in SQL, same questions.
let loading = performance.now();
const table = (await signBitsOfIndex(sql, settings.dimensions))!;
console.log(`sign bits of ${table.count.toLocaleString('en')} passages read in ${((performance.now() - loading) / 1000).toFixed(2)} s (from the database, or the file a run before left)`);
loading = performance.now();
const sparsePostings = await openPostings(sql, sql.copyOut!.bind(sql), sql.folder!, table, settings.vocabularySize);
console.log(`sparse postings of ${table.count.toLocaleString('en')} passages opened in ${((performance.now() - loading) / 1000).toFixed(2)} s (written from the database, or checked and opened where a run before left them)`);
const graph = await hasDenseGraph(sql);
// An index written since embedded indexes dropped the GIN index has no SQL sparse path to compare.
const gin = await hasSparseTermsIndex(sql);

const positionOf = (file: string, chunk: number) => Number(file.slice('part-'.length)) * 1000 + chunk;
interface Run {
  readonly mode: SearchMode;
  readonly key: string;
  readonly bits?: SignBitsTable;
  readonly postings?: SparsePostings;
}
const runs: Run[] = [
  { mode: 'dense', key: 'dense (scan)', bits: table },
  ...(graph ? [{ mode: 'dense', key: 'dense (graph)' } as const] : []),
  { mode: 'sparse', key: 'sparse (postings)', bits: table, postings: sparsePostings },
  ...(gin ? [{ mode: 'sparse', key: 'sparse (SQL)' } as const] : []),
  { mode: 'hybrid', key: 'hybrid (scan + postings)', bits: table, postings: sparsePostings },
  ...(gin ? [{ mode: 'hybrid', key: 'hybrid (scan + SQL)', bits: table } as const] : []),
  ...(graph && gin ? [{ mode: 'hybrid', key: 'hybrid (graph + SQL)' } as const] : []),
];
const sums: Record<string, number[]> = {};
const add = (key: string, v: number) => (sums[key] ??= []).push(v);
const latency: Record<string, number[]> = Object.fromEntries(runs.map((r) => [r.key, []]));
for (const task of TASKS) {
  const dir = join(values.dev!, task);
  const qrels = new Map<string, Set<string>>();
  for (const line of readFileSync(join(dir, 'qrels.tsv'), 'utf8').split('\n').filter(Boolean)) {
    const [q, d] = line.split('\t');
    qrels.set(q!, (qrels.get(q!) ?? new Set()).add(`${task}/${d}`));
  }
  const queries = readJsonl<{ id: string; text: string }>(readFileSync(join(dir, 'queries.jsonl'), 'utf8')).filter((q) => qrels.has(q.id)).slice(0, Number(values.queries));
  for (const q of queries) {
    const embedded = await model.embedQuery(q.text);
    const lists = { dense: exactDense(embedded.dense), sparse: exactSparse(embedded.sparse) };
    const exact = { dense: lists.dense.map((r) => r.d), sparse: lists.sparse.map((r) => r.d), hybrid: exactHybrid(lists.dense, lists.sparse) };
    for (const { mode, key, bits, postings: posted } of runs) {
      const started = performance.now();
      const hits = await searchPassages(sql, embedded, settings.vocabularySize, { top: mode === 'hybrid' ? 10 : 100, mode, documentContext: false }, undefined, bits, posted);
      latency[key]!.push(performance.now() - started);
      const ranked = hits.map((h) => positionOf(h.file, h.chunk));
      add(`${key} top-10 overlap with exact`, overlap(ranked, exact[mode], 10));
      if (mode !== 'hybrid') add(`${key} top-100 overlap with exact`, overlap(ranked, exact[mode], 100));
      add(`${task} ${mode} nDCG@10 exact`, ndcg10(exact[mode].map((d) => ids[d]!), qrels.get(q.id)!));
      add(`${task} ${key} nDCG@10 index`, ndcg10(ranked.map((d) => ids[d]!), qrels.get(q.id)!));
    }
  }
}
const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
console.log(`\n${N.toLocaleString('en')} passages, ${values.queries} questions per task:`);
for (const [key, xs] of Object.entries(sums)) console.log(`  ${key.padEnd(48)} ${mean(xs).toFixed(4)}`);
for (const { key } of runs) console.log(`  ${key} query, embedding excluded: p50 ${quantile(latency[key]!, 0.5).toFixed(1)} ms, p99 ${quantile(latency[key]!, 0.99).toFixed(1)} ms`);
await sql.close();
await embedder.dispose();
