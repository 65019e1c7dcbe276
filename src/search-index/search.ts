// A hybrid search over the index: the query's dense vector finds candidates by Hamming distance
// on the passages' sign bits (pgvector's HNSW index), rescored by cosine with their int8 vectors;
// its sparse vector, weighted by the corpus's own idf, scores passages by dot product; the two
// lists are fused by distribution-based score fusion (each list's scores rescaled by its mean ±
// 3 standard deviations, then summed: Qdrant's DBSF), which the dev set measured best for these
// vectors. --dense-only / --sparse-only keep one list.
import type { SparseVector } from '../embedder/sparse.ts';
import { cosineInt8, signBits, sparsevecLiteral } from './model.ts';
import { namedFiles, type NamedFile } from './context.ts';
import { corpusCounts, type CorpusCounts } from './store.ts';
import type { SparsePostings } from './postings.ts';
import { signSums, type SignBitsTable } from './sign-bits.ts';
import type { SqlQuery } from './sql.ts';

export type SearchMode = 'hybrid' | 'dense' | 'sparse';

export interface SearchOptions {
  /** How many hits to return (default 10). */
  readonly top?: number;
  /** Hits to skip first, for the next page (default 0). */
  readonly offset?: number;
  /** hybrid (default), dense or sparse. */
  readonly mode?: SearchMode;
  /** Only files whose path matches this glob (`*` any characters but /, `**` any, `?` one). */
  readonly file?: string;
  /** Only the file with exactly this path. */
  readonly document?: string;
  /**
   * Whether a question that names a document (its title, its parties: the document's opening
   * lines) is scored as asked of that document (default true); false ranks passages by their own
   * text alone. Dense-only searches and searches within one --document never use it.
   */
  readonly documentContext?: boolean;
}

/** One passage found, with where it is and its scores. */
export interface SearchHit {
  readonly rank: number;
  /** The fused score (hybrid), or the one list's score. */
  readonly score: number;
  /** Cosine of the dense vectors, where the passage was among the dense candidates. */
  readonly dense: number | null;
  /** The idf-weighted sparse dot product, where the passage was among the sparse candidates. */
  readonly sparse: number | null;
  readonly passageId: string;
  readonly file: string;
  readonly chunk: number;
  readonly start: number;
  readonly end: number;
  /** The page, paragraph or line the passage starts and ends on. */
  readonly unit: { readonly name: string; readonly first: number; readonly last: number } | null;
  readonly text: string;
}

/** Each list's length: what is fused (the dev set's figures fused the top 100 of each). */
export const FUSED_LIST_LENGTH = 100;
/**
 * Which of the query's terms find sparse candidates (selectiveTerms): the rarest, while the
 * passages holding them add up to at most SPARSE_CANDIDATE_BUDGET (each candidate's whole sparse
 * vector is read and scored: about 7 µs each here, 138 ms a query at 1,000,000 passages with
 * 20,000), and none held by more than 1/SELECTIVE_SHARE of the passages (or MIN_SELECTIVE_DF); the
 * rarest term always does. At 113,697 real passages (bench:index-recall) the sparse list's top 10
 * held 0.985 of the exact one's with 10,000, 0.962 with 5,000, 0.999 with 20,000.
 */
const SELECTIVE_SHARE = 20;
const MIN_SELECTIVE_DF = 500;
const SPARSE_CANDIDATE_BUDGET = 8_000;
/**
 * Per passage listed, the embedded index's sparse candidates given the rest of their score (the
 * query's common terms, from their sparse vectors in the database) after the postings of its
 * selective terms scored every passage holding one. At 113,697 real passages (180 dev questions,
 * same run) the sparse top 10 held 0.986 of the exact one's with 4 (0.990 with 10, 0.978 with 2;
 * the GIN's candidates scored in SQL, 0.982), the sparse list 6.6 ms p50 (11.5 with 10; in SQL 22.0).
 */
const COMMON_TERMS_RESCORED_FACTOR = 4;
/**
 * A server index's binary shortlist per passage listed: the HNSW graph's nearest by Hamming
 * distance (ef_search as many). At 113,697 real passages a graph search of 400 lost the exact top 10's
 * oyez-scotus passages (hybrid nDCG@10 0.704 against the exact ranking's 0.775); of 1,000, 0.746.
 */
const BINARY_SHORTLIST_FACTOR = 10;
/**
 * The embedded index's shortlist per passage listed: the nearest by Hamming distance in an exact
 * scan of every passage's sign bits (sign-bits.ts). At 113,697 real passages (bench:index-recall,
 * 180 dev questions) the dense top 10 held 0.979 of the exact float ranking's with 3,000, 0.974 with
 * 1,000 (the HNSW graph's 1,000: 0.958); the sign scores of 3,000 cost about a millisecond.
 */
const SCANNED_SHORTLIST_FACTOR = 30;
/**
 * Of the shortlist, the best by the query's own values against the passages' signs (finer than
 * the Hamming distance: offline, the top 400 by it held 0.990 of the exact top 10, by Hamming
 * 0.962) are rescored with their int8 vectors, per passage listed.
 */
const RESCORED_FACTOR = 3;
/** A named document's passages read per passage listed: its nearest by sign bits, each rescored (the graph's shortlist before it grew). */
const NAMED_FILE_SHORTLIST_FACTOR = 4;
/**
 * Up to this many passages the binary shortlist is exact (a scan of every passage's sign bits);
 * above it, pgvector's HNSW graph gives it. On the dev set the graph's shortlist cost 0.003–0.012
 * nDCG@10 against the exact ranking (oyez-scotus, 3,394 passages, the most), and the scan reads
 * every passage's row (about 7 µs each here: 149 ms p50 at 21,000 against HNSW's 26 ms).
 */
const EXACT_DENSE_BELOW = 5_000;

interface Scored {
  readonly id: string;
  readonly score: number;
}

/** What an index of an older format lacks or keeps elsewhere (schema.ts): searched as it is until a writer upgrades it. */
export interface IndexLayout {
  /** The files' contexts (format 2 on). */
  readonly contexts: boolean;
  /** The table of the passages' sparse vectors (schema.ts sparseTableOf). */
  readonly sparseTable: string;
  /** Whether the files' contexts have their terms' GIN index (schema.ts addContextTermsIndex): without it, every context is scored. */
  readonly contextTerms: boolean;
}

const CURRENT_LAYOUT: IndexLayout = { contexts: true, sparseTable: 'lexembed_sparse', contextTerms: true };

/** The ranked passages for an embedded query. */
export async function searchPassages(
  sql: { transaction<T>(work: (tx: SqlQuery) => Promise<T>): Promise<T> },
  query: { dense: Float32Array; sparse: SparseVector; rest?: RestOfQuery },
  vocabularySize: number,
  options: SearchOptions = {},
  layout: IndexLayout = CURRENT_LAYOUT,
  signBits?: SignBitsTable,
  postings?: SparsePostings,
): Promise<SearchHit[]> {
  const top = options.top ?? 10;
  const offset = options.offset ?? 0;
  const mode = options.mode ?? 'hybrid';
  const length = Math.max(FUSED_LIST_LENGTH, offset + top);
  return sql.transaction(async (tx) => {
    // One read of the counts serves both lists: the passage count and the query terms' df.
    const counts = await corpusCounts(tx, mode === 'dense' ? [] : query.sparse.indices);
    const idf = idfOf(counts);
    const weighted = sparsevecLiteral(query.sparse, vocabularySize, idf);
    const terms = selectiveTerms(query.sparse, counts);
    const scoped = layout.contexts && mode !== 'dense' && !options.document && options.documentContext !== false;
    const finding = layout.contextTerms ? terms.selective : null;
    const named = scoped ? await namedFiles(tx, weighted, query.sparse, finding, fileClause(options, finding ? 2 : 1)) : [];
    // The files a filter leaves, read once for the lists held in memory (the scan, the postings).
    let allowed: Promise<Allowed> | undefined;
    const allowedFiles = () => (allowed ??= filesAllowed(tx, fileFilter(options, 0)));
    // The graph's query takes the filter's parameters after the query's bits.
    const dense = mode === 'sparse' ? null : await denseList(tx, query.dense, length, counts.passages, { named, rest: query.rest }, signBits ? { table: signBits, allowed: allowedFiles } : fileFilter(options, 1));
    const sparseQuery = { query: query.sparse, weighted, idf, vocabularySize, finders: terms.finders, selective: terms.selective, named, table: layout.sparseTable };
    const sparse = mode === 'dense' ? null : postings ? await postedList(tx, postings, sparseQuery, length, await allowedFiles()) : await sparseList(tx, sparseQuery, length, fileFilter(options, 2));
    const lists = [dense, sparse].filter((l): l is Scored[] => l !== null);
    const fused = lists.length === 1 ? lists[0]! : fuseByDistribution(lists);
    const page = fused.slice(offset, offset + top);
    if (!page.length) return [];
    const rows = await tx.query<PassageRow>(
      `select ${PASSAGE_COLUMNS} from lexembed_passages p join lexembed_files f on f.id = p.file_id where p.id = any($1::bigint[])`,
      [page.map((s) => s.id)],
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    const denseOf = new Map(dense?.map((s) => [s.id, s.score]));
    const sparseOf = new Map(sparse?.map((s) => [s.id, s.score]));
    return page.flatMap((s, i) => {
      const r = byId.get(s.id);
      // Removed between the two reads: not in this transaction's snapshot either.
      return r ? [{ ...hitOf(r, offset + i + 1, s.score), dense: denseOf.get(s.id) ?? null, sparse: sparseOf.get(s.id) ?? null }] : [];
    });
  });
}

/** The dense vector of the query less the words a named document's context holds (null when that leaves nothing, or everything). */
export type RestOfQuery = (terms: ReadonlySet<number>) => Promise<Float32Array | null>;

/** BM25's idf of a term from the corpus counts; 0 for a term no passage holds (left out of the vector). */
export function idfOf({ passages, df }: CorpusCounts): (term: number) => number {
  return (term) => {
    const n = df.get(term) ?? 0;
    return n === 0 ? 0 : Math.log(1 + (passages - n + 0.5) / (n + 0.5));
  };
}

/** What a query reads of a passage (`p`) and its file (`f`) to make a hit of it: a PassageRow. */
export const PASSAGE_COLUMNS = 'p.id::text as id, f.path, p.chunk, p.start_offset, p.end_offset, f.unit, p.unit_first, p.unit_last, p.body';

/** A passage's row as the queries read it. */
export interface PassageRow {
  readonly id: string;
  readonly path: string;
  readonly chunk: number;
  readonly start_offset: number;
  readonly end_offset: number;
  readonly unit: string | null;
  readonly unit_first: number | null;
  readonly unit_last: number | null;
  readonly body: string;
}

/** A row as a hit (its scores null until a search gives them). */
export function hitOf(r: PassageRow, rank: number, score: number): SearchHit {
  return {
    rank,
    score,
    dense: null,
    sparse: null,
    passageId: r.id,
    file: r.path,
    chunk: r.chunk,
    start: r.start_offset,
    end: r.end_offset,
    unit: r.unit && r.unit_first !== null ? { name: r.unit, first: r.unit_first, last: r.unit_last ?? r.unit_first } : null,
    text: r.body,
  };
}

interface Filter {
  readonly join: string;
  readonly where: string;
  readonly params: unknown[];
}

/** The file filters as a condition on `f` (lexembed_files), parameters numbered after the query's `first` ones. */
function fileClause(options: SearchOptions, first: number): { clause: string; params: unknown[] } {
  const { where, params } = fileFilter(options, first);
  return { clause: where.replace(/^where /, ''), params };
}

/** SQL for the file filters; their parameters numbered after the query's `first` ones. */
function fileFilter(options: SearchOptions, first: number): Filter {
  const clauses: string[] = [];
  const params: unknown[] = [];
  if (options.file) {
    params.push(globToRegex(options.file));
    clauses.push(`f.path ~ $${params.length + first}`);
  }
  if (options.document) {
    params.push(options.document);
    clauses.push(`f.path = $${params.length + first}`);
  }
  if (!clauses.length) return { join: '', where: '', params };
  return { join: 'join lexembed_files f on f.id = p.file_id', where: `where ${clauses.join(' and ')}`, params };
}

/** A glob as an anchored POSIX regular expression: `**` any characters, `*` any but /, `?` one. */
export function globToRegex(glob: string): string {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (glob.startsWith('**/', i)) {
      out += '(.*/)?';
      i += 2;
    } else if (glob.startsWith('**', i)) {
      out += '.*';
      i++;
    } else if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else out += /[\\^$.|+()[\]{}]/.test(c) ? `\\${c}` : c;
  }
  return `^${out}$`;
}

/**
 * The dense top `length`: a shortlist by sign bits, from the embedded index's scan in memory (`from`
 * the table and the files its filter leaves) or a server's graph (`from` the filter's SQL), rescored
 * with the int8 vectors.
 */
async function denseList(tx: SqlQuery, q: Float32Array, length: number, passages: number, scope: { named: readonly NamedFile[]; rest?: RestOfQuery }, from: { table: SignBitsTable; allowed: () => Promise<Allowed> } | Filter): Promise<Scored[]> {
  const rescored =
    'table' in from
      ? from.table.nearest(q, length * SCANNED_SHORTLIST_FACTOR, await from.allowed()).map((p) => ({ id: p.id, s: p.sign }))
      : await graphShortlist(tx, q, length * BINARY_SHORTLIST_FACTOR, passages, from);
  rescored.splice(length * RESCORED_FACTOR);
  const scored = new Map<string, number>();
  if (rescored.length) {
    // Base64: PGlite hands a bytea to JavaScript four times slower (122 against 26 ms for 400 rows).
    const vectors = await tx.query<{ id: string; d: string }>(`select id::text as id, encode(dense, 'base64') as d from lexembed_passages where id = any($1::bigint[])`, [rescored.map((r) => r.id)]);
    for (const r of vectors) scored.set(r.id, cosineInt8(q, int8Of(r.d)));
  }
  for (const file of scope.named) await scoreNamedFile(tx, q, file, await scope.rest?.(file.terms), length * NAMED_FILE_SHORTLIST_FACTOR, scored);
  return [...scored].map(([id, score]) => ({ id, score })).sort((a, b) => b.score - a.score).slice(0, length);
}

/** The files a filter leaves, as a test of a file id (undefined without filters). */
type Allowed = ((file: number) => boolean) | undefined;

/** The files the filters leave (their parameters numbered from $1). */
async function filesAllowed(tx: SqlQuery, filter: Filter): Promise<Allowed> {
  if (!filter.where) return undefined;
  const files = new Set((await tx.query<{ id: number }>(`select f.id from lexembed_files f ${filter.where}`, filter.params)).map((r) => r.id));
  return (file) => files.has(file);
}

/**
 * A server's shortlist: pgvector's HNSW graph searched for the nearest by Hamming distance (a small
 * index scanned whole instead), sorted by the query's own values against the passages' signs.
 */
async function graphShortlist(tx: SqlQuery, q: Float32Array, shortlist: number, passages: number, filter: Filter): Promise<{ id: string; s: number }[]> {
  // HNSW returns at most ef_search rows; with a filter, pgvector scans on until enough pass it.
  // A small index is scanned whole instead (exact), as the planner is told.
  await tx.query(`select set_config('hnsw.ef_search', $1, true), set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('enable_indexscan', $2, true)`, [
    String(Math.min(1000, Math.max(shortlist, 40))),
    passages < EXACT_DENSE_BELOW ? 'off' : 'on',
  ]);
  const rows = await tx.query<{ id: string; b: string }>(
    `select p.id::text as id, encode(varbit_send(p.bits), 'base64') as b from lexembed_passages p ${filter.join} ${filter.where}
     order by p.bits <~> $1::bit(${q.length}) limit ${shortlist}`,
    [signBits(q), ...filter.params],
  );
  await tx.query(`select set_config('enable_indexscan', 'on', true)`);
  // The query's own values against the passages' signs (asymmetric: finer than the Hamming
  // distance the graph is searched by) pick the few whose int8 vectors are read.
  const sign = signScorer(q);
  return rows.map((r) => ({ id: r.id, s: sign(r.b) })).sort((a, b) => b.s - a.s);
}

/**
 * The query's values summed with the signs of a passage's bits, as varbit_send writes them in
 * base64 (a 4-byte length, then the bits, the first in each byte's high bit): a sixth of the bit
 * string's text to hand over. One lookup a byte (signSums, made once a query), not eight: 1,000
 * passages of 1,792 bits took 12 ms a query bit by bit.
 */
export function signScorer(q: Float32Array): (base64: string) => number {
  const sums = signSums(q);
  const width = Math.ceil(q.length / 8);
  return (base64) => {
    const bytes = Buffer.from(base64, 'base64');
    let sum = 0;
    for (let j = 0; j < width; j++) sum += sums[j * 256 + bytes[4 + j]!]!;
    return sum;
  };
}

const int8Of = (base64: string) => {
  const bytes = Buffer.from(base64, 'base64');
  return new Int8Array(bytes.buffer, bytes.byteOffset, bytes.length);
};

/**
 * A named document's passages are dense candidates whole. With the rest of the query (less the
 * words that name the document), they are ordered by it, shifted so the document's best passage
 * keeps the whole query's best score there: the document is as strong a match as before, and
 * within it the passage that answers the rest comes first, not the page that repeats the name.
 */
async function scoreNamedFile(tx: SqlQuery, q: Float32Array, file: NamedFile, rest: Float32Array | null | undefined, shortlist: number, scored: Map<string, number>): Promise<void> {
  const rows = await tx.query<{ id: string; d: string }>(
    `select p.id::text as id, encode(p.dense, 'base64') as d from lexembed_passages p where p.file_id = $2 order by p.bits <~> $1::bit(${q.length}) limit ${shortlist}`,
    [signBits(q), file.id],
  );
  const vectors = rows.map((r) => ({ id: r.id, v: int8Of(r.d) }));
  const whole = vectors.map(({ v }) => cosineInt8(q, v));
  if (!rest) return vectors.forEach(({ id }, i) => scored.set(id, whole[i]!));
  const partial = vectors.map(({ v }) => cosineInt8(rest, v));
  const shift = Math.max(...whole) - Math.max(...partial);
  vectors.forEach(({ id }, i) => scored.set(id, partial[i]! + shift));
}

/** What the sparse list is made from: the query, idf-weighted, and the documents it names. */
interface SparseQuery {
  readonly query: SparseVector;
  readonly weighted: string;
  readonly idf: (term: number) => number;
  readonly vocabularySize: number;
  /** The selective terms that find the candidates (selectiveTerms). */
  readonly finders: readonly number[];
  /** The query's terms held by at most 1/SELECTIVE_SHARE of the passages (selectiveTerms). */
  readonly selective: readonly number[];
  readonly named: readonly NamedFile[];
  readonly table: string;
}

/**
 * The query's terms the index holds that are selective (in at most 1/SELECTIVE_SHARE of the
 * passages, or MIN_SELECTIVE_DF; the rarest always), and the finders among them: the rarest, while
 * the passages holding them add up to at most SPARSE_CANDIDATE_BUDGET (each candidate's whole sparse
 * vector is read and scored). A term more common than that adds little to a score and would make
 * the candidates most of the index.
 */
export function selectiveTerms(query: SparseVector, { passages, df }: CorpusCounts): { selective: number[]; finders: number[] } {
  const held = query.indices.filter((term) => (df.get(term) ?? 0) > 0).map((term) => ({ term, df: df.get(term)! }));
  const cap = Math.max(MIN_SELECTIVE_DF, passages / SELECTIVE_SHARE);
  const selective: number[] = [];
  const finders: number[] = [];
  let reached = 0;
  for (const w of held.sort((a, b) => a.df - b.df)) {
    if (selective.length && w.df > cap) break;
    selective.push(w.term);
    // The finders are a prefix of the selective terms: the first that would pass the budget ends them.
    if (finders.length === selective.length - 1 && (!finders.length || reached + w.df <= SPARSE_CANDIDATE_BUDGET)) {
      finders.push(w.term);
      reached += w.df;
    }
  }
  return { selective, finders };
}

/**
 * The sparse top `length`: passages that hold one of the query's selective terms (the GIN index
 * finds them), scored exactly by the whole idf-weighted query. A named document's passages are
 * scored instead by the query less the terms its context holds, plus the context's score.
 */
async function sparseList(tx: SqlQuery, s: SparseQuery, length: number, filter: Filter): Promise<Scored[]> {
  if (!s.finders.length) return [];
  // Ordered by the column it selects: an ORDER BY of its own expression would compute each
  // candidate's dot product twice (PostgreSQL does not share them): a third of the query's time.
  const rows = await tx.query<{ id: string; file: number; d: number }>(
    `select p.id::text as id, p.file_id as file, p.sparse <#> $1::sparsevec as d from ${s.table} p ${filter.join}
     where lexembed_sparse_terms(p.sparse) && $2::int[] ${filter.where.replace(/^where /, 'and ')}
     order by d limit ${length}`,
    [s.weighted, s.finders, ...filter.params],
  );
  const named = new Set(s.named.map((n) => n.id));
  const scored = rows.filter((r) => r.d < 0 && !named.has(r.file)).map((r) => ({ id: r.id, score: -Number(r.d) }));
  for (const file of s.named) scored.push(...(await namedFileList(tx, s, file, length)));
  return scored.sort((a, b) => b.score - a.score).slice(0, length);
}

/**
 * A named document's passages, scored by the query less the terms its context holds (a weight of
 * 0 leaves a term out of the vector), plus the context's score. A question of nothing but those
 * (the document's opening line, its title) asks for the passages that hold them: scored by the
 * whole query, not all tied at the document's score.
 */
async function namedFileList(tx: SqlQuery, s: SparseQuery, file: NamedFile, length: number): Promise<Scored[]> {
  const rest = sparsevecLiteral(s.query, s.vocabularySize, (term) => (file.terms.has(term) ? 0 : s.idf(term)));
  const own = await tx.query<{ id: string; d: number }>(
    `select p.id::text as id, p.sparse <#> $1::sparsevec as d from ${s.table} p where p.file_id = $2 order by d limit ${length}`,
    [rest.startsWith('{}') ? s.weighted : rest, file.id],
  );
  return own.map((r) => ({ id: r.id, score: -Number(r.d) + file.score }));
}

/**
 * The embedded index's sparse top `length`, from the postings files (postings.ts): every passage
 * holding one of the query's selective terms scored by those terms, then the best
 * COMMON_TERMS_RESCORED_FACTOR per passage listed given the rest of their score (the terms held by more passages)
 * from their sparse vectors in the database. A query of selective terms only (every term of a small
 * index is) gets exactly pgvector's ranking of every passage. A named document's passages scored as
 * sparseList scores them.
 */
async function postedList(tx: SqlQuery, postings: SparsePostings, s: SparseQuery, length: number, allowed: Allowed): Promise<Scored[]> {
  const selective = new Set(s.selective);
  const posted: { terms: number[]; weights: number[] } = { terms: [], weights: [] };
  const order = [...s.query.indices.keys()].sort((a, b) => s.query.indices[a]! - s.query.indices[b]!);
  let common = false;
  for (const i of order) {
    const term = s.query.indices[i]!;
    const weight = s.query.values[i]! * s.idf(term);
    if (!(weight > 0)) continue;
    if (!selective.has(term)) common = true;
    else {
      posted.terms.push(term);
      posted.weights.push(weight);
    }
  }
  if (!posted.terms.length) return [];
  const named = new Set(s.named.map((n) => n.id));
  const scored = postings.top(posted, common ? length * COMMON_TERMS_RESCORED_FACTOR : length, named.size ? (file) => !named.has(file) && (!allowed || allowed(file)) : allowed);
  if (common && scored.length) {
    const rest = sparsevecLiteral(s.query, s.vocabularySize, (term) => (selective.has(term) ? 0 : s.idf(term)));
    const rows = await tx.query<{ id: string; d: number }>(`select id::text as id, sparse <#> $1::sparsevec as d from ${s.table} where id = any($2::bigint[])`, [rest, scored.map((x) => x.id)]);
    const more = new Map(rows.map((r) => [r.id, -Number(r.d)]));
    for (const x of scored) x.score += more.get(x.id) ?? 0;
  }
  for (const file of s.named) scored.push(...(await namedFileList(tx, s, file, length)));
  return scored.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1)).slice(0, length);
}

/** DBSF: each list's scores rescaled by mean ± 3 sd, summed; a passage outside a list gets 0 from it. */
export function fuseByDistribution(lists: readonly (readonly Scored[])[]): Scored[] {
  const fused = new Map<string, number>();
  for (const list of lists) {
    if (!list.length) continue;
    const mean = list.reduce((s, x) => s + x.score, 0) / list.length;
    const sd = Math.sqrt(list.reduce((s, x) => s + (x.score - mean) ** 2, 0) / list.length);
    const low = mean - 3 * sd;
    const span = Math.max(6 * sd, 1e-12);
    for (const x of list) fused.set(x.id, (fused.get(x.id) ?? 0) + (x.score - low) / span);
  }
  return [...fused].map(([id, score]) => ({ id, score })).sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));
}
