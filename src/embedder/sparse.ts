// Sparse vectors (POST /v1/embeddings/sparse): the exact word-piece weights whose hashed sum is the
// dense vector's lexical part (model/add_lexical.py), from the table and rule the model folder
// carries in lexembed.json ("sparse"). Pure: the same ids give the same vector in Node, the
// browser and the edge.
import type { SparseWeighting } from '../contract/index.ts';

/**
 * The folder's table and rule: idf per word piece (0: the piece carries no word), the model's term
 * weight per piece (learned by model/train_term_weights.py where the folder has the table, else
 * idf), BM25's k1 and b, the training texts' mean length, and the stem classes where the folder
 * has them (model/stem_classes.py: each piece's class as its smallest piece; absent: every piece
 * its own).
 */
export interface SparseTable {
  readonly idf: Float32Array;
  readonly weight: Float32Array;
  readonly canonical?: Int32Array;
  readonly k1: number;
  readonly b: number;
  readonly avgLength: number;
}

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
}

export interface SparseVector {
  /** Word-piece ids, ascending. */
  readonly indices: number[];
  readonly values: number[];
}

/** Decodes the settings' table (atob and DataView exist in every runtime lexembed serves from). */
export function sparseTableOf(settings: SparseSettings): SparseTable {
  const idf = float32Table(settings.idf, 'idf');
  const weight = settings.weight === undefined ? idf : float32Table(settings.weight, 'weight');
  if (weight.length !== idf.length) throw new Error(`lexembed.json sparse.weight holds ${weight.length} values and sparse.idf ${idf.length}: rebuild the folder with model/add_lexical.py`);
  const table = { idf, weight, k1: settings.k1, b: settings.b, avgLength: settings.avg_len };
  if (settings.canonical === undefined) return table;
  const view = tableBytes(settings.canonical, 'canonical');
  const canonical = Int32Array.from({ length: view.byteLength / 4 }, (_, i) => view.getInt32(i * 4, true));
  if (canonical.length !== idf.length) throw new Error(`lexembed.json sparse.canonical holds ${canonical.length} values and sparse.idf ${idf.length}: rebuild the folder with model/add_lexical.py --stems`);
  const outside = canonical.findIndex((c, i) => c < 0 || c > i);
  if (outside >= 0) throw new Error(`lexembed.json sparse.canonical maps piece ${outside} to ${canonical[outside]}, not a piece at or before it: rebuild the folder with model/add_lexical.py --stems`);
  return { ...table, canonical };
}

function tableBytes(base64: string, name: string): DataView {
  const bytes = Uint8Array.from(atob(base64), (ch) => ch.charCodeAt(0));
  if (bytes.length % 4 !== 0) throw new Error(`lexembed.json sparse.${name} holds ${bytes.length} bytes, not a whole number of 4-byte values`);
  return new DataView(bytes.buffer);
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
 * model's term weight for `idf` weighting, times that weight ÷ idf for `relative`.
 * @example sparseVector([101, 7592, 7592, 102], table, 'tf') // { indices: [7592], values: [1.63…] }
 */
export function sparseVector(ids: readonly number[], table: SparseTable, weighting: SparseWeighting): SparseVector {
  const counts = new Map<number, number>();
  let length = 0;
  for (const piece of ids) {
    const id = table.canonical === undefined ? piece : table.canonical[piece]!;
    if (!(table.idf[id]! > 0)) continue;
    counts.set(id, (counts.get(id) ?? 0) + 1);
    length++;
  }
  const norm = table.k1 * (1 - table.b + (table.b * length) / table.avgLength);
  const indices = [...counts.keys()].sort((a, b) => a - b);
  const values = indices.map((id) => {
    const tf = counts.get(id)!;
    const saturated = (tf * (table.k1 + 1)) / (tf + norm);
    if (weighting === 'tf') return Math.fround(saturated);
    const weight = table.weight[id]!;
    return Math.fround(weighting === 'idf' ? saturated * weight : (saturated * weight) / table.idf[id]!);
  });
  return { indices, values };
}
