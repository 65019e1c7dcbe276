// A document's context: its opening lines, which name it (a contract's title, often its parties),
// kept with its file. A question that names a document ("the governing law of the Acme–Birch
// supply agreement") matches that context, and the document's passages are then scored as if
// each held it: the words of the question that the context holds count once, for the document,
// not again for the one passage that repeats them (the title page). So the clause that answers
// the rest of the question comes first, not the page that carries the name.
import type { SparseVector } from '../embedder/sparse.ts';
import type { SqlQuery } from './sql.ts';

/** The most characters of a document's opening kept as its context. */
export const CONTEXT_CHARACTERS = 250;
/** A first line this short (an exhibit number, a lone "AGREEMENT") takes the next one too. */
const SHORT_OPENING = 25;
/** Documents whose context a question's terms match best, each at least half the best's score. */
const NAMED_FILES = 3;

/**
 * The opening line(s) of a document's text (lines, not paragraphs: a PDF's text has no blank
 * lines between them), whitespace collapsed, cut between words.
 */
export function contextOf(text: string): string {
  let context = '';
  for (const line of text.trim().split(/\n/)) {
    context = `${context} ${line.replace(/\s+/g, ' ').trim()}`.trim();
    if (context.length >= SHORT_OPENING) break;
  }
  if (context.length <= CONTEXT_CHARACTERS) return context;
  const cut = context.lastIndexOf(' ', CONTEXT_CHARACTERS);
  return context.slice(0, cut > CONTEXT_CHARACTERS / 2 ? cut : CONTEXT_CHARACTERS);
}

/** A document a question names: its file, how well its context matches, and the query's terms its context holds. */
export interface NamedFile {
  readonly id: number;
  readonly score: number;
  readonly terms: ReadonlySet<number>;
}

/**
 * The files (of more than one passage) whose context best matches the idf-weighted query
 * `vector` (a sparsevec literal), within `where` (the search's file filter over `f`, its
 * parameters numbered after $1, or after $2 with `terms`). With `terms` (the query's selective
 * terms: search.ts selectiveTerms), only the contexts that hold one of them are scored, found by
 * their GIN index (schema.ts addContextTermsIndex): a context that shares only common words with a
 * question does not name it, and scoring every file's context cost 51 ms a question at 20,000 files.
 */
export async function namedFiles(tx: SqlQuery, vector: string, query: SparseVector, terms: readonly number[] | null, where: { clause: string; params: unknown[] }): Promise<NamedFile[]> {
  if (terms && !terms.length) return [];
  const conditions = ['f.passages > 1', 'f.context_sparse is not null', ...(terms ? ['lexembed_sparse_terms(f.context_sparse) && $2::int[]'] : []), ...(where.clause ? [where.clause] : [])];
  // Ordered by the column it selects, so each context's dot product is computed once, and the
  // terms listed for the few best only (lexembed_sparse_terms reads the vector's text: at 20,000
  // files, listing every context's took half the query's time).
  const rows = await tx.query<{ id: number; d: number; terms: number[] }>(
    `select id, d, lexembed_sparse_terms(context_sparse) as terms from (
       select f.id, f.context_sparse, f.context_sparse <#> $1::sparsevec as d from lexembed_files f
       where ${conditions.join(' and ')} order by d limit ${NAMED_FILES}) best order by d`,
    [vector, ...(terms ? [terms] : []), ...where.params],
  );
  const scored = rows.map((r) => ({ ...r, s: -Number(r.d) }));
  const best = scored[0]?.s ?? 0;
  const asked = new Set(query.indices);
  return scored.filter((r) => r.s > 0 && r.s >= best / 2).map((r) => ({ id: r.id, score: r.s, terms: new Set(r.terms.filter((t) => asked.has(t))) }));
}
