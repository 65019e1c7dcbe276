// Fits and evaluates the reranker of a model folder on ../shared/data/legal-pairs, with the
// functions /v1/rerankings runs (src/embedder/rerank-score.ts) and the model's own runtime.
//
//   fit:      training documents only. Per source, --fit-queries headings (seeded sample); each
//             heading's BM25 top --fit-candidates texts form one request (kept when it holds a
//             relevant text); features of each text: the embedding cosine of its best chunk and its
//             request-local BM25 share; a logistic regression (Newton's method) on relevance.
//   evaluate: held-out documents, as model/evaluate/held_out.py builds them (queries: distinct headings;
//             corpus: distinct texts). Same run, same queries: BM25 alone over the corpus, the
//             embedding model alone over the corpus, and BM25's top 100 reranked (nDCG@10).
//
// Usage: npm run model:fit-reranker -- [--model models/legal-2-embedder] [--data ../shared/data/legal-pairs]
//          [--fit-queries 150] [--fit-candidates 30] [--write]   (--write stores the fit in lexembed.json)
//          [--fit-only]   (no evaluation: for a model too slow here to embed every held-out corpus)
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { truncateAndNormalize, type Chunking, type ScoringMethod } from '../src/contract/index.ts';
import { BatchScheduler } from '../src/embedder/scheduler.ts';
import { parseModelSettings, SETTINGS_FILE } from '../src/embedder/settings.ts';
import { createTransformersBackend } from '../src/backend/transformers-backend.ts';
import { dot } from '../src/contract/vectors.ts';
import { asDocuments } from '../src/embedder/document-form.ts';
import { chunkTexts } from '../src/embedder/rerank-run.ts';
import { bm25NormalizedCounts, scoreCountedTexts, termCounts, terms, type RerankWeights } from '../src/embedder/rerank-score.ts';
import { BUNDLED_MODEL_DIR, PROJECT_ROOT } from '../src/node/runtime/load-model.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: BUNDLED_MODEL_DIR },
    data: { type: 'string', default: join(PROJECT_ROOT, '..', 'shared', 'data', 'legal-pairs') },
    'fit-queries': { type: 'string', default: '150' },
    'fit-candidates': { type: 'string', default: '50' },
    'eval-queries': { type: 'string', default: '0' },
    write: { type: 'boolean', default: false },
    'fit-only': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log(readFileSync(new URL(import.meta.url), 'utf8').split('\n').filter((l) => l.startsWith('//')).map((l) => l.slice(3)).join('\n'));
  process.exit(0);
}
const modelDir = resolve(values.model!);
// All eleven files of model/common/legal_data.py's FILES, each its own source (split and scored apart).
const SOURCES = Object.fromEntries(
  ['canada-sections', 'canada-long-titles', 'dc-code', 'cfpb', 'contracts-lexpredict', 'contracts-commonaccord', 'contracts-commonpaper', 'contracts-nli', 'eurlex', 'legal-dictionary', 'licenses'].map((s) => [s, `${s}.jsonl.gz`]),
);
const started = Date.now();
const log = (s: string) => console.log(`[${((Date.now() - started) / 1000).toFixed(0)} s] ${s}`);

// --- data, split as model/common/legal_data.py splits it -------------------------------------------
interface Pair { query: string; text: string; doc: string }
function heldOut(source: string, doc: string): boolean {
  const group = source === 'dc-code' ? doc.split('/').slice(0, 2).join('/') : doc;
  return parseInt(createHash('sha1').update('lexembed-eval:' + group).digest('hex').slice(0, 8), 16) % 100 < 10;
}
interface Split { queries: string[]; corpus: string[]; relevant: Map<string, Set<number>> }
function build(pairs: Pair[]): Split {
  const corpus: string[] = [];
  const index = new Map<string, number>();
  const relevant = new Map<string, Set<number>>();
  for (const { query, text } of pairs) {
    if (!index.has(text)) (index.set(text, corpus.length), corpus.push(text));
    const q = query.toLowerCase().trim();
    if (!relevant.has(q)) relevant.set(q, new Set());
    relevant.get(q)!.add(index.get(text)!);
  }
  return { queries: [...relevant.keys()].sort(), corpus, relevant };
}

// --- first stage: BM25 over a whole corpus (k1 0.9, b 0.4, \w+ terms as evaluate.py) -------------
const PY_WORD = /[\p{L}\p{N}_]+/gu;
function bm25Index(corpus: string[]) {
  const postings = new Map<string, [number, number][]>();
  const lengths = new Float64Array(corpus.length);
  corpus.forEach((text, d) => {
    const tf = new Map<string, number>();
    for (const t of text.toLowerCase().match(PY_WORD) ?? []) tf.set(t, (tf.get(t) ?? 0) + 1);
    for (const [t, f] of tf) (postings.get(t) ?? postings.set(t, []).get(t)!).push([d, f]);
    lengths[d] = [...tf.values()].reduce((a, b) => a + b, 0);
  });
  const avg = lengths.reduce((a, b) => a + b, 0) / corpus.length;
  return (query: string): Float64Array => {
    const s = new Float64Array(corpus.length);
    for (const t of new Set(query.toLowerCase().match(PY_WORD) ?? [])) {
      const list = postings.get(t);
      if (!list) continue;
      const idf = Math.log(1 + (corpus.length - list.length + 0.5) / (list.length + 0.5));
      for (const [d, f] of list) s[d]! += (idf * f * 1.9) / (f + 0.9 * (1 - 0.4 + (0.4 * lengths[d]!) / avg));
    }
    return s;
  };
}
/** Indices by descending score, ties by index (numpy's stable argsort of -score). */
function topK(scores: ArrayLike<number>, k: number): number[] {
  // Keeps the best k in a sorted buffer: one pass, no full sort of the corpus.
  const best: number[] = [];
  const better = (a: number, b: number) => scores[a]! > scores[b]! || (scores[a] === scores[b] && a < b);
  for (let i = 0; i < scores.length; i++) {
    if (best.length === k && !better(i, best[k - 1]!)) continue;
    let at = best.length === k ? k - 1 : best.length;
    while (at > 0 && better(i, best[at - 1]!)) (best[at] = best[at - 1]!), at--;
    best[at] = i;
  }
  return best;
}
function ndcg10(ranked: number[], relevant: Set<number>): number {
  let dcg = 0;
  ranked.slice(0, 10).forEach((d, r) => relevant.has(d) && (dcg += 1 / Math.log2(r + 2)));
  let ideal = 0;
  for (let r = 0; r < Math.min(10, relevant.size); r++) ideal += 1 / Math.log2(r + 2);
  return dcg / ideal;
}
function mulberry32(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// --- the model, as the server runs it ------------------------------------------------------------
const settings = parseModelSettings(JSON.parse(readFileSync(join(modelDir, SETTINGS_FILE), 'utf8')), join(modelDir, SETTINGS_FILE));
const backend = await createTransformersBackend({ modelId: basename(modelDir), localModelPath: dirname(modelDir) + '/', settings, intraOpNumThreads: availableParallelism() });
const scheduler = new BatchScheduler(backend, { maxBatchSize: 64, maxBatchTokens: 2048, maxQueueTokens: Number.MAX_SAFE_INTEGER, minPaddingEfficiency: 0.9 });
const maxChunk = settings.max_input_tokens - backend.encode(settings.prompts['retrieval/document'] ?? '').length;
const chunking: Chunking = { size: maxChunk, overlap: Math.floor(maxChunk * 0.25) };
const dims = settings.dimensions.default;
let embeddedSequences = 0;
async function embedSequences(sequences: number[][]): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  for (let i = 0; i < sequences.length; i += 4096) {
    const part = await scheduler.submit(sequences.slice(i, i + 4096));
    for (const v of part) out.push(truncateAndNormalize(v, dims));
    embeddedSequences += part.length;
  }
  return out;
}
const queryText = (q: string) => backend.decode!(backend.encode(q));

/** Chunks, chunk vectors and chunk terms of texts, embedded once. */
async function chunkCorpus(texts: string[]) {
  const chunked = await chunkTexts(backend, texts, chunking, settings.prompts['retrieval/document'] ?? '');
  if ('unreadable' in chunked) throw new Error(`text ${chunked.unreadable} has no readable token`);
  if ('tooMany' in chunked) throw new Error('unreachable: no chunk cap here');
  const vectors = await embedSequences(asDocuments(settings, chunked.sequences, dims)); // as the server reads chunks
  let k = 0;
  return { chunkTexts: chunked.chunkTexts, vectors: chunked.chunkTexts.map((c) => c.map(() => vectors[k++]!)), terms: chunked.chunkTexts.map((c) => c.map((t) => termCounts(terms(t)))) };
}
async function embedQueries(queries: string[]) {
  const prompt = settings.prompts['retrieval/query'] ?? '';
  return embedSequences(queries.map((q) => backend.encode(prompt + q).slice(0, settings.max_input_tokens)));
}

const data: Record<string, { train: Pair[]; test: Pair[] }> = {};
for (const [source, file] of Object.entries(SOURCES)) {
  const rows = gunzipSync(readFileSync(join(values.data!, file))).toString('utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Pair);
  data[source] = { train: rows.filter((r) => !heldOut(source, r.doc)), test: rows.filter((r) => heldOut(source, r.doc)) };
}
log(`model ${modelDir}; chunks of ${chunking.size} tokens, overlap ${chunking.overlap}; ${dims} dimensions`);

// --- fit ------------------------------------------------------------------------------------------
const X: [number, number][] = [];
const Y: number[] = [];
/** Training requests: per source, per query, the rows of X (and Y) its candidates hold. */
const requestRows: Record<string, number[][]> = {};
for (const source of Object.keys(SOURCES)) {
  const split = build(data[source]!.train);
  const bm25 = bm25Index(split.corpus);
  const random = mulberry32(12345);
  const sample = split.queries.map((q) => [random(), q] as const).sort((a, b) => a[0] - b[0]).slice(0, Number(values['fit-queries'])).map(([, q]) => q);
  // Requests as the first stage makes them (BM25's top n alone); those holding no relevant text teach nothing.
  const firstStage = sample.map((q) => topK(bm25(q), Number(values['fit-candidates'])));
  const kept = sample.map((_, i) => i).filter((i) => firstStage[i]!.some((d) => split.relevant.get(sample[i]!)!.has(d)));
  const requests = kept.map((i) => firstStage[i]!);
  sample.splice(0, sample.length, ...kept.map((i) => sample[i]!));
  const needed = [...new Set(requests.flat())];
  const cache = await chunkCorpus(needed.map((d) => split.corpus[d]!));
  const at = new Map(needed.map((d, i) => [d, i]));
  const qv = await embedQueries(sample);
  requestRows[source] = [];
  sample.forEach((q, qi) => {
    const docs = requests[qi]!.map((d) => at.get(d)!);
    requestRows[source]!.push(docs.map((_, j) => X.length + j));
    const flat = docs.flatMap((i) => cache.terms[i]!);
    const lexical = bm25NormalizedCounts(terms(queryText(q)), flat);
    let k = 0;
    docs.forEach((i, j) => {
      // The text's best chunk by similarity stands for it (most texts are one chunk).
      let best = -Infinity;
      let bestLex = 0;
      cache.vectors[i]!.forEach((v) => {
        const c = dot(qv[qi]!, v);
        const l = lexical[k++]!;
        if (c > best) (best = c), (bestLex = l);
      });
      X.push([best, bestLex]);
      Y.push(split.relevant.get(q)!.has(requests[qi]![j]!) ? 1 : 0);
    });
  });
  log(`fit data ${source}: ${sample.length} queries, ${needed.length} texts embedded`);
}
// Two steps: the mix of the two signals that ranks the training requests best (mean nDCG@10 over
// sources, as reported), then a logistic fit of that mix to relevance, which only calibrates.
const RATIOS = Array.from({ length: 61 }, (_, i) => i * 0.05);
const trainNdcg = (ratio: number) => {
  const perSource = Object.values(requestRows).map((requests) => {
    const total = requests.reduce((sum, rows) => {
      const order = topK(rows.map((r) => X[r]![0] + ratio * X[r]![1]), 10);
      return sum + ndcg10(order, new Set(rows.map((r, i) => (Y[r] ? i : -1)).filter((i) => i >= 0)));
    }, 0);
    return total / requests.length;
  });
  return perSource.reduce((a, b) => a + b, 0) / perSource.length;
};
const scan = RATIOS.map((r) => [r, trainNdcg(r)] as const);
const [ratio, bestTrain] = scan.reduce((best, cur) => (cur[1] > best[1] ? cur : best));
log(`mix: cosine + ${ratio.toFixed(3)} x BM25 share ranks training requests best (nDCG@10 ${bestTrain.toFixed(3)}; cosine alone ${scan[0]![1].toFixed(3)})`);
const [intercept, scale] = logisticFit(X.map(([c, l]) => c + ratio * l), Y);
const weights: RerankWeights = { intercept, cosine: scale, lexical: scale * ratio };
log(`fit: ${X.length} examples (${Y.filter(Boolean).length} relevant): intercept ${weights.intercept.toFixed(3)}, cosine ${weights.cosine.toFixed(3)}, lexical ${weights.lexical.toFixed(3)}`);

/** σ(a + s·z) by Newton's method on the mean log-loss (a small ridge keeps it stable). */
function logisticFit(z: number[], y: number[]): [number, number] {
  let a = 0;
  let s = 0;
  for (let iter = 0; iter < 100; iter++) {
    let ga = 0, gs = 0, haa = 1e-6, has = 0, hss = 1e-6;
    z.forEach((v, i) => {
      const p = 1 / (1 + Math.exp(-(a + s * v)));
      const w = p * (1 - p);
      ga += (p - y[i]!) / z.length;
      gs += ((p - y[i]!) * v) / z.length;
      haa += w / z.length;
      has += (w * v) / z.length;
      hss += (w * v * v) / z.length;
    });
    const det = haa * hss - has * has;
    const da = (hss * ga - has * gs) / det;
    const ds = (haa * gs - has * ga) / det;
    a -= da;
    s -= ds;
    if (Math.abs(da) + Math.abs(ds) < 1e-10) break;
  }
  return [a, s];
}

// --- evaluate -------------------------------------------------------------------------------------
const METHODS: ScoringMethod[] = ['chunk_max', 'chunk_avg', 'chunk_min'];
const results: Record<string, Record<string, number>> = {};
for (const source of values['fit-only'] ? [] : Object.keys(SOURCES)) {
  const split = build(data[source]!.test);
  const limit = Number(values['eval-queries']);
  const queries = limit > 0 ? split.queries.slice(0, limit) : split.queries;
  const bm25 = bm25Index(split.corpus);
  const cache = await chunkCorpus(split.corpus);
  const qv = await embedQueries(queries);
  const sums: Record<string, number> = { bm25: 0, embedding: 0, 'rerank embedding only': 0, ...Object.fromEntries(METHODS.map((m) => [`rerank ${m}`, 0])) };
  queries.forEach((q, qi) => {
    const relevant = split.relevant.get(q)!;
    const first = topK(bm25(q), 100);
    sums.bm25! += ndcg10(first, relevant);
    // The embedding model alone: every text of the corpus by its first chunk (the truncated text).
    sums.embedding! += ndcg10(topK(Float64Array.from(cache.vectors, (c) => dot(qv[qi]!, c[0]!)), 10), relevant);
    // The served scoring (src/embedder/rerank-score.ts), over the chunks and vectors cached above.
    const queryTerms = terms(queryText(q));
    const counts = first.map((d) => cache.terms[d]!);
    const similarity = first.map((d) => cache.vectors[d]!.map((v) => dot(qv[qi]!, v)));
    const rank = (w: RerankWeights, method: ScoringMethod) => topK(scoreCountedTexts(w, method, queryTerms, counts, similarity), 10).map((i) => first[i]!);
    for (const m of METHODS) sums[`rerank ${m}`]! += ndcg10(rank(weights, m), relevant);
    sums['rerank embedding only']! += ndcg10(rank({ ...weights, lexical: 0 }, 'chunk_max'), relevant);
  });
  results[source] = Object.fromEntries(Object.entries(sums).map(([k, v]) => [k, v / queries.length]));
  results[source]!.queries = queries.length;
  results[source]!.corpus = split.corpus.length;
  log(`evaluated ${source}: ${queries.length} queries over ${split.corpus.length} texts`);
}

const columns = ['bm25', 'embedding', 'rerank embedding only', ...METHODS.map((m) => `rerank ${m}`)];
const mean = Object.fromEntries(columns.map((c) => [c, Object.values(results).reduce((s, r) => s + r[c]!, 0) / Object.keys(results).length]));
if (!values['fit-only']) {
  console.log(`\nnDCG@10 on held-out documents (rerank: BM25's top 100; auto = chunk_max)\n`);
  console.log(['source'.padEnd(20), 'queries'.padStart(8), ...columns.map((c) => c.replace('rerank ', 'rr ').padStart(14))].join(''));
  for (const [source, r] of Object.entries(results)) {
    console.log([source.padEnd(20), String(r.queries).padStart(8), ...columns.map((c) => r[c]!.toFixed(3).padStart(14))].join(''));
  }
  console.log(['mean over sources'.padEnd(28), ...columns.map((c) => mean[c]!.toFixed(3).padStart(14))].join(''));
  const wins = Object.values(results).every((r) => r['rerank chunk_max']! > r.bm25! && r['rerank chunk_max']! > r.embedding!);
  console.log(`\nrerank (auto) above both BM25 and the embedding model on every source: ${wins ? 'yes' : 'no'}; ${embeddedSequences} sequences embedded`);
}

const fitted = { script: 'model/fit_reranker.ts', data: 'legal-pairs training documents', fit_queries_per_source: Number(values['fit-queries']), fit_candidates: Number(values['fit-candidates']), examples: X.length, chunk_tokens: chunking.size };
if (values.write) {
  const path = join(modelDir, SETTINGS_FILE);
  const raw = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  raw.reranking = { name: 'legal-2-reranker', weights: roundWeights(weights), fitted };
  writeFileSync(path, JSON.stringify(raw, null, 2) + '\n');
  const figures = values['fit-only'] ? { ndcg_at_10: null, note: 'fitted with --fit-only: not evaluated' } : { ndcg_at_10: results, mean };
  writeFileSync(join(modelDir, 'evaluation-rerank.json'), JSON.stringify({ weights: roundWeights(weights), fitted, ...figures }, null, 2) + '\n');
  log(`wrote the fit to ${path} and the figures to evaluation-rerank.json`);
}
await backend.dispose();
function roundWeights(w: RerankWeights): RerankWeights {
  return { intercept: +w.intercept.toFixed(4), cosine: +w.cosine.toFixed(4), lexical: +w.lexical.toFixed(4) };
}
