// Sparse vectors (POST /v1/embeddings/sparse): the exact word-piece weights whose hashed sum is the
// dense vector's lexical part, and, where the folder has them, word pairs and a query's term
// neighbours, from the table and rules the model folder carries in lexembed.json ("sparse"): the
// Python twin of these rules is model/rules/sparse_weights.py (the parity fixture holds the two
// together). Pure: the same ids give the same vector in Node, the browser and the edge.
import type { SparseWeighting } from '../contract/index.ts';

/**
 * The folder's table and rule: idf per word piece (0: the piece carries no word), the model's term
 * weight per piece (learned by model/train/term_weights.py where the folder has the table, else
 * idf), BM25's k1 and b, the training texts' mean length, and the stem classes where the folder
 * has them (model/sparse/stem_classes.py: each piece's class as its smallest piece; absent: every piece
 * its own).
 */
export interface SparseTable {
  readonly idf: Float32Array;
  readonly weight: Float32Array;
  readonly canonical?: Int32Array;
  readonly bigrams?: BigramRule;
  readonly expansion?: ExpansionRule;
  readonly k1: number;
  readonly b: number;
  readonly avgLength: number;
}

/**
 * Word pairs (model/sparse/word_pairs.py, rule word-pairs-v1): each pair of neighbouring counted
 * pieces whose second starts a word adds `weight` × its saturated count at index
 * V + ((a·V + c) mod `slots`); `continuation` has bit i (byte i >> 3, least significant first) set
 * where piece i continues a word.
 */
export interface BigramRule {
  readonly weight: number;
  readonly slots: number;
  readonly continuation: Uint8Array;
}

export const BIGRAM_RULE = 'word-pairs-v1';

/**
 * Query neighbours (model/sparse/query_neighbours.py, rule query-neighbours-v1): for a query (`task:
 * retrieval/query`), each counted piece p proposes its listed neighbours n, and a neighbour the
 * text does not hold gets the largest `weight` × sim(p, n) × sat(tf_p) (× n's factor) among its
 * proposers. `neighbours` maps a piece to its entries [first, end) in `targets`/`similarities`.
 */
export interface ExpansionRule {
  readonly weight: number;
  readonly neighbours: ReadonlyMap<number, readonly [number, number]>;
  readonly targets: Int32Array;
  readonly similarities: Float32Array;
}

export const EXPANSION_RULE = 'query-neighbours-v1';

/** lexembed.json's "sparse" entry as stored: idf as base64 of little-endian float32. */
export interface SparseSettings {
  readonly recipe: string;
  readonly k1: number;
  readonly b: number;
  readonly avg_len: number;
  readonly idf: string;
  /** The learned term weights (squared: what a matched piece scores), same encoding; absent: idf. */
  readonly weight?: string;
  /** The stem classes (v4.4), base64 of little-endian int32: each piece's class's smallest piece. */
  readonly canonical?: string;
  /** Word pairs (v4.5): the rule, β, the slots after the vocabulary, the continuation bitmap (base64). */
  readonly bigrams?: { readonly rule: string; readonly weight: number; readonly slots: number; readonly continuations: string };
  /** Query neighbours (v4.6): the rule, α, and the table (base64 little-endian int32 sources ascending and targets, float32 similarities). */
  readonly expansion?: {
    readonly rule: string;
    readonly weight: number;
    readonly sources: string;
    readonly targets: string;
    readonly similarities: string;
    readonly neighbours?: number;
    readonly threshold?: number;
    readonly max_idf?: number;
  };
}

export interface SparseVector {
  /** Word-piece ids (stem classes; a query's neighbours among them), then word-pair slots (≥ the vocabulary's size), ascending. */
  readonly indices: number[];
  readonly values: number[];
}

/** Decodes the settings' table (atob and DataView exist in every runtime lexembed serves from). */
export function sparseTableOf(settings: SparseSettings): SparseTable {
  const idf = float32Table(settings.idf, 'idf');
  const weight = settings.weight === undefined ? idf : float32Table(settings.weight, 'weight');
  if (weight.length !== idf.length) throw new Error(`lexembed.json sparse.weight holds ${weight.length} values and sparse.idf ${idf.length}: rebuild the folder with python3 -m model.graph.lexical`);
  const table = {
    idf,
    weight,
    k1: settings.k1,
    b: settings.b,
    avgLength: settings.avg_len,
    ...(settings.bigrams && { bigrams: bigramRuleOf(settings.bigrams, idf.length) }),
    ...(settings.expansion && { expansion: expansionRuleOf(settings.expansion, idf) }),
  };
  if (settings.canonical === undefined) return table;
  const canonical = int32Table(settings.canonical, 'canonical');
  if (canonical.length !== idf.length) throw new Error(`lexembed.json sparse.canonical holds ${canonical.length} values and sparse.idf ${idf.length}: rebuild the folder with python3 -m model.graph.lexical --stems`);
  const outside = canonical.findIndex((c, i) => c < 0 || c > i);
  if (outside >= 0) throw new Error(`lexembed.json sparse.canonical maps piece ${outside} to ${canonical[outside]}, not a piece at or before it: rebuild the folder with python3 -m model.graph.lexical --stems`);
  const member = table.expansion?.targets.find((t) => canonical[t] !== t);
  if (member !== undefined) throw new Error(`lexembed.json sparse.expansion proposes piece ${member}, which counts as piece ${canonical[member]} (its stem class): rebuild it with python3 -m model.sparse.query_neighbours`);
  return { ...table, canonical };
}

function bigramRuleOf(entry: NonNullable<SparseSettings['bigrams']>, vocabulary: number): BigramRule {
  if (entry.rule !== BIGRAM_RULE) throw new Error(`lexembed.json sparse.bigrams.rule is "${entry.rule}"; this lexembed applies "${BIGRAM_RULE}": upgrade lexembed, or take the pairs out with python3 -m model.sparse.word_pairs --strip`);
  if (!(entry.weight > 0 && Number.isFinite(entry.weight))) throw new Error(`lexembed.json sparse.bigrams.weight must be a positive number, got ${entry.weight}: rebuild it with python3 -m model.sparse.word_pairs`);
  if (!Number.isInteger(entry.slots) || entry.slots < 1 || entry.slots > 2 ** 31) throw new Error(`lexembed.json sparse.bigrams.slots must be a whole number from 1 to 2^31, got ${entry.slots}: rebuild it with python3 -m model.sparse.word_pairs`);
  const continuation = Uint8Array.from(atob(entry.continuations), (ch) => ch.charCodeAt(0));
  if (continuation.length !== Math.ceil(vocabulary / 8)) throw new Error(`lexembed.json sparse.bigrams.continuations holds ${continuation.length} bytes; ${vocabulary} pieces need ${Math.ceil(vocabulary / 8)}: rebuild it with python3 -m model.sparse.word_pairs`);
  return { weight: entry.weight, slots: entry.slots, continuation };
}

function expansionRuleOf(entry: NonNullable<SparseSettings['expansion']>, idf: Float32Array): ExpansionRule {
  const vocabulary = idf.length;
  const fix = 'rebuild it with python3 -m model.sparse.query_neighbours';
  if (entry.rule !== EXPANSION_RULE) throw new Error(`lexembed.json sparse.expansion.rule is "${entry.rule}"; this lexembed applies "${EXPANSION_RULE}": upgrade lexembed, or take the neighbours out with python3 -m model.sparse.query_neighbours --strip`);
  if (!(entry.weight > 0 && Number.isFinite(entry.weight))) throw new Error(`lexembed.json sparse.expansion.weight must be a positive number, got ${entry.weight}: ${fix}`);
  const sources = int32Table(entry.sources, 'expansion.sources');
  const targets = int32Table(entry.targets, 'expansion.targets');
  const similarities = float32Table(entry.similarities, 'expansion.similarities');
  if (targets.length !== sources.length || similarities.length !== sources.length) {
    throw new Error(`lexembed.json sparse.expansion holds ${sources.length} sources, ${targets.length} targets and ${similarities.length} similarities; they must match: ${fix}`);
  }
  const outside = [sources, targets].map((ids) => ids.find((id) => id < 0 || id >= vocabulary)).find((id) => id !== undefined);
  if (outside !== undefined) throw new Error(`lexembed.json sparse.expansion names piece ${outside}, outside the ${vocabulary} pieces: ${fix}`);
  const weightless = targets.find((t) => !(idf[t]! > 0));
  if (weightless !== undefined) throw new Error(`lexembed.json sparse.expansion proposes piece ${weightless}, which carries no word (idf 0): ${fix}`);
  const neighbours = new Map<number, [number, number]>();
  for (let e = 0; e < sources.length; e++) {
    if (e > 0 && sources[e]! < sources[e - 1]!) throw new Error(`lexembed.json sparse.expansion.sources must be ascending (entry ${e}): ${fix}`);
    if (!Number.isFinite(similarities[e]!)) throw new Error(`lexembed.json sparse.expansion.similarities[${e}] is not a number: ${fix}`);
    const range = neighbours.get(sources[e]!);
    if (range) range[1] = e + 1;
    else neighbours.set(sources[e]!, [e, e + 1]);
  }
  return { weight: entry.weight, neighbours, targets, similarities };
}

/** What a sparse vector's indices lie below: the vocabulary, then the word-pair slots (the dimension of a pgvector sparsevec column). */
export function sparseVocabularySize(table: SparseTable): number {
  return table.idf.length + (table.bigrams?.slots ?? 0);
}

function tableBytes(base64: string, name: string): DataView {
  const bytes = Uint8Array.from(atob(base64), (ch) => ch.charCodeAt(0));
  if (bytes.length % 4 !== 0) throw new Error(`lexembed.json sparse.${name} holds ${bytes.length} bytes, not a whole number of 4-byte values`);
  return new DataView(bytes.buffer);
}

function int32Table(base64: string, name: string): Int32Array {
  const view = tableBytes(base64, name);
  return Int32Array.from({ length: view.byteLength / 4 }, (_, i) => view.getInt32(i * 4, true));
}

function float32Table(base64: string, name: string): Float32Array {
  const view = tableBytes(base64, name);
  const table = new Float32Array(view.byteLength / 4);
  for (let i = 0; i < table.length; i++) table[i] = view.getFloat32(i * 4, true);
  return table;
}

/**
 * A text's sparse vector from its token ids (as the model reads them: prompt, special tokens and
 * truncation included): each piece with idf > 0 once (a stem class once, as its smallest piece,
 * where the table has classes), weighted
 * tf·(k1 + 1)/(tf + k1·(1 − b + b·L/avg_len)) (L: the text's pieces with idf > 0); times the
 * model's term weight for `idf` weighting, times that weight ÷ idf for `relative`. With word pairs
 * (table.bigrams), each neighbouring pair (a, c) of those pieces whose c starts a word adds
 * β × its count saturated alike (× √(f_a·f_c), f the piece's factor above, for idf and relative)
 * at V + ((a·V + c) mod slots); pairs that share a slot add up. For a query (`query`, the
 * request's `task: retrieval/query`) with neighbours (table.expansion), each counted piece p
 * proposes its listed neighbours n, and a neighbour the text does not hold gets the largest
 * α × sim(p, n) × sat(tf_p) × f_n among its proposers (before the pairs, which it does not form).
 * @example sparseVector([101, 7592, 7592, 102], table, 'tf') // { indices: [7592], values: [1.63…] }
 */
export function sparseVector(ids: readonly number[], table: SparseTable, weighting: SparseWeighting, query = false): SparseVector {
  const counts = new Map<number, number>();
  const counted: number[] = [];
  for (const piece of ids) {
    const id = table.canonical === undefined ? piece : table.canonical[piece]!;
    if (!(table.idf[id]! > 0)) continue;
    counts.set(id, (counts.get(id) ?? 0) + 1);
    counted.push(id);
  }
  const norm = table.k1 * (1 - table.b + (table.b * counted.length) / table.avgLength);
  const saturate = (tf: number) => (tf * (table.k1 + 1)) / (tf + norm);
  // the weighting's factor for a counted piece (idf > 0): 1, the term weight, or that weight ÷ idf
  const factor = (id: number) => (weighting === 'tf' ? 1 : weighting === 'idf' ? table.weight[id]! : table.weight[id]! / table.idf[id]!);
  const proposed = query && table.expansion ? neighboursOf(counts, table.expansion, saturate) : new Map<number, number>();
  const indices = [...counts.keys(), ...proposed.keys()].sort((a, b) => a - b);
  const values = indices.map((id) => Math.fround((counts.has(id) ? saturate(counts.get(id)!) : proposed.get(id)!) * factor(id)));
  if (table.bigrams === undefined || counted.length < 2) return { indices, values };
  const { weight: beta, slots, continuation } = table.bigrams;
  const vocabulary = table.idf.length;
  const pairs = new Map<number, number>();
  for (let k = 1; k < counted.length; k++) {
    const c = counted[k]!;
    if (continuation[c >> 3]! & (1 << (c & 7))) continue;
    const key = counted[k - 1]! * vocabulary + c; // exact: below 2^53 for any vocabulary under 94 million pieces
    pairs.set(key, (pairs.get(key) ?? 0) + 1);
  }
  const slotValues = new Map<number, number>();
  for (const [key, tf] of pairs) {
    const value = beta * saturate(tf) * Math.sqrt(factor(Math.floor(key / vocabulary)) * factor(key % vocabulary));
    const slot = vocabulary + (key % slots);
    slotValues.set(slot, (slotValues.get(slot) ?? 0) + value);
  }
  const slotIndices = [...slotValues.keys()].sort((a, b) => a - b);
  return { indices: [...indices, ...slotIndices], values: [...values, ...slotIndices.map((slot) => Math.fround(slotValues.get(slot)!))] };
}

/** The neighbours a query's pieces propose and the text does not hold, each at its largest α·sim·sat(tf) (sparseVector's rule). */
function neighboursOf(counts: ReadonlyMap<number, number>, rule: ExpansionRule, saturate: (tf: number) => number): Map<number, number> {
  const proposed = new Map<number, number>();
  for (const [id, tf] of counts) {
    const range = rule.neighbours.get(id);
    if (!range) continue;
    for (let e = range[0]; e < range[1]; e++) {
      const target = rule.targets[e]!;
      if (counts.has(target)) continue;
      const value = rule.weight * rule.similarities[e]! * saturate(tf);
      if (value > (proposed.get(target) ?? 0)) proposed.set(target, value);
    }
  }
  return proposed;
}
