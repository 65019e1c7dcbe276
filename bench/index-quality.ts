// `npm run bench:index-quality`: the dev set (../shared/data/legal-eval-dev) searched through a
// lexembed index, mean nDCG@10 as ../shared/tools/evaluate-retrieval.py scores it (binary gains,
// ideal DCG over min(|relevant|, 10)), beside the same vectors ranked exactly in memory in the
// same run (every passage's float cosine; the sparse dot product with the corpus's idf; DBSF of
// the two top-100 lists: model/evaluate/dev.py's recipe). Each corpus row is one passage (the
// model reads its first 512 tokens, as the offline evaluation does); the index's dense side is
// its HNSW candidates by sign bits rescored with int8 vectors.
// Usage: npm run bench:index-quality -- [--model models/legal-2-embedder] [--tasks obliqa-adgm,...] [--queries 2000] [--engine pglite|postgres://…]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { BUNDLED_MODEL_DIR, loadModelFolder, PROJECT_ROOT } from '../src/node/runtime/load-model.ts';
import { fuseByDistribution, searchPassages, type SearchMode } from '../src/search-index/search.ts';
import { indexModelOf } from '../src/search-index/model.ts';
import { openPostings } from '../src/search-index/postings.ts';
import { signBitsOfIndex } from '../src/search-index/sign-bits.ts';
import { ensureSchema } from '../src/search-index/schema.ts';
import { openLocation } from '../src/search-index/location.ts';
import { insertFile, settleWrites } from '../src/search-index/store.ts';
import type { SparseVector } from '../src/embedder/sparse.ts';
import { ndcg10 } from './ndcg.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: BUNDLED_MODEL_DIR },
    dev: { type: 'string', default: resolve(PROJECT_ROOT, '../shared/data/legal-eval-dev') },
    tasks: { type: 'string', default: 'obliqa-adgm,oyez-scotus,pdpa-singapore' },
    queries: { type: 'string', default: '2000' },
    engine: { type: 'string', default: 'pglite' },
  },
});

const readJsonl = (path: string) => readFileSync(path, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { id: string; text: string });

const embedder = await loadModelFolder(resolve(values.model!), { batch: { tokens: 'auto', size: 'auto' } });
const model = indexModelOf(embedder);
const rows: Record<string, number>[] = [];
for (const task of values.tasks!.split(',')) {
  const dir = join(values.dev!, task);
  const corpus = readJsonl(join(dir, 'corpus.jsonl'));
  const qrels = new Map<string, Set<string>>();
  for (const line of readFileSync(join(dir, 'qrels.tsv'), 'utf8').split('\n').filter(Boolean)) {
    const [q, d] = line.split('\t');
    qrels.set(q!, (qrels.get(q!) ?? new Set()).add(d!));
  }
  const queries = readJsonl(join(dir, 'queries.jsonl')).filter((q) => qrels.has(q.id)).slice(0, Number(values.queries));
  const folder = mkdtempSync(join(tmpdir(), 'lexembed-index-quality-'));
  const sql = await openLocation(values.engine === 'pglite' ? join(folder, 'index') : values.engine!, { create: true });
  const settings = { ...model.settings, chunkTokens: 256 };
  await ensureSchema(sql, settings, 'bench');
  let t = performance.now();
  const dense: Float32Array[] = [];
  const sparse: SparseVector[] = [];
  for (let at = 0; at < corpus.length; at += 64) {
    const batch = corpus.slice(at, at + 64);
    const v = await model.embedPassages(batch.map((r) => r.text));
    dense.push(...v.dense);
    sparse.push(...v.sparse);
    await sql.transaction(async (tx) => {
      for (const [j, r] of batch.entries()) {
        await insertFile(tx, { root: task, path: r.id, sha256: '-', bytes: r.text.length, unit: null, context: '', contextSparse: { indices: [], values: [] } }, [{ chunk: 0, start: 0, end: r.text.length, unitFirst: null, unitLast: null, body: r.text, dense: v.dense[j]!, sparse: v.sparse[j]! }], settings.vocabularySize);
      }
    });
  }
  await settleWrites(sql);
  // The embedded index's dense shortlist: its sign bits in memory, as SearchIndex.search reads them.
  const table = await signBitsOfIndex(sql, settings.dimensions);
  const posted = table && (await openPostings(sql, sql.copyOut!.bind(sql), sql.folder!, table, settings.vocabularySize));
  const indexSeconds = (performance.now() - t) / 1000;
  // Exact rankings in memory: float cosine over all; sparse with the corpus's idf.
  const df = new Map<number, number>();
  const postings = new Map<number, [number, number][]>();
  sparse.forEach((s, d) => s.indices.forEach((term, k) => {
    df.set(term, (df.get(term) ?? 0) + 1);
    (postings.get(term) ?? postings.set(term, []).get(term)!).push([d, s.values[k]!]);
  }));
  const n = corpus.length;
  const exact = (q: { dense: Float32Array; sparse: SparseVector }, mode: SearchMode): string[] => {
    const lists: { id: string; score: number }[][] = [];
    if (mode !== 'sparse') {
      const scores = dense.map((v, d) => ({ id: String(d), score: v.reduce((s, x, i) => s + x * q.dense[i]!, 0) }));
      lists.push(scores.sort((a, b) => b.score - a.score).slice(0, 100));
    }
    if (mode !== 'dense') {
      const acc = new Map<number, number>();
      q.sparse.indices.forEach((term, k) => {
        const m = df.get(term);
        if (!m) return;
        const w = q.sparse.values[k]! * Math.log(1 + (n - m + 0.5) / (m + 0.5));
        for (const [d, v] of postings.get(term)!) acc.set(d, (acc.get(d) ?? 0) + w * v);
      });
      lists.push([...acc].map(([d, score]) => ({ id: String(d), score })).sort((a, b) => b.score - a.score).slice(0, 100));
    }
    return (lists.length === 1 ? lists[0]! : fuseByDistribution(lists)).map((s) => corpus[Number(s.id)]!.id);
  };
  const sums: Record<string, number> = {};
  let agree = 0;
  const latencies: number[] = [];
  for (const q of queries) {
    const embedded = await model.embedQuery(q.text);
    for (const mode of ['hybrid', 'dense', 'sparse'] as const) {
      t = performance.now();
      const hits = await searchPassages(sql, embedded, settings.vocabularySize, { top: 10, mode }, undefined, table, posted);
      if (mode === 'hybrid') latencies.push(performance.now() - t);
      const ranked = hits.map((h) => h.file);
      const exactRanked = exact(embedded, mode);
      sums[`index ${mode}`] = (sums[`index ${mode}`] ?? 0) + ndcg10(ranked, qrels.get(q.id)!);
      sums[`exact ${mode}`] = (sums[`exact ${mode}`] ?? 0) + ndcg10(exactRanked, qrels.get(q.id)!);
      if (mode === 'dense') agree += ranked.filter((id) => exactRanked.slice(0, 10).includes(id)).length / 10;
    }
  }
  latencies.sort((a, b) => a - b);
  const row: Record<string, number> = { passages: n, queries: queries.length, seconds_to_index: Math.round(indexSeconds), search_p50_ms: Math.round(latencies[latencies.length >> 1]!), dense_top10_overlap: agree / queries.length };
  for (const [k, v] of Object.entries(sums)) row[k] = v / queries.length;
  console.log(task, JSON.stringify(row));
  rows.push(row);
  await sql.close();
  rmSync(folder, { recursive: true, force: true });
}
const keys = Object.keys(rows[0]!).filter((k) => k.startsWith('index') || k.startsWith('exact'));
console.log('\nmean nDCG@10 over the tasks (BM25 0.647 in the dev set\'s README):');
for (const k of keys) console.log(`  ${k.padEnd(14)} ${(rows.reduce((s, r) => s + r[k]!, 0) / rows.length).toFixed(4)}`);
console.log(`  dense-only top-10 overlap with the exact float ranking: ${(rows.reduce((s, r) => s + r.dense_top10_overlap!, 0) / rows.length).toFixed(3)}`);
await embedder.dispose();
