// Sparse vectors' rule (src/embedder/sparse.ts): BM25's saturated term frequency per word piece,
// pieces without idf left out, word pairs after the vocabulary, the table read back from
// lexembed.json's base64.
import { describe, expect, it } from 'vitest';
import { BIGRAM_RULE, EXPANSION_RULE, sparseTableOf, sparseVector, sparseVocabularySize, type SparseTable } from '../../src/embedder/sparse.ts';

const idf = new Float32Array([0, 0, 2, 4, 0.5]); // ids 0 and 1 carry no word (special pieces)
const table: SparseTable = { idf, weight: idf, k1: 1.2, b: 0.75, avgLength: 4 };
const learned = new Float32Array([0, 0, 3, 2, 1]); // a folder with learned term weights
const learnedTable: SparseTable = { ...table, weight: learned };
const saturated = (tf: number, length: number) => (tf * 2.2) / (tf + 1.2 * (0.25 + (0.75 * length) / 4));

describe('sparseVector', () => {
  it('weighs each piece once, ascending, by its saturated term frequency (tf) or times its idf (idf)', () => {
    const ids = [0, 3, 2, 3, 3, 1]; // length 4: the two special ids do not count
    const tf = sparseVector(ids, table, 'tf');
    expect(tf.indices).toEqual([2, 3]);
    expect(tf.values[0]).toBeCloseTo(saturated(1, 4), 6);
    expect(tf.values[1]).toBeCloseTo(saturated(3, 4), 6);
    const weighted = sparseVector(ids, table, 'idf');
    expect(weighted.values[0]).toBeCloseTo(saturated(1, 4) * 2, 6);
    expect(weighted.values[1]).toBeCloseTo(saturated(3, 4) * 4, 6);
  });

  it("uses the folder's learned term weights for idf, and their ratio to idf for relative (tf untouched)", () => {
    const ids = [0, 3, 2, 3, 3, 1];
    expect(sparseVector(ids, learnedTable, 'tf')).toEqual(sparseVector(ids, table, 'tf'));
    const weighted = sparseVector(ids, learnedTable, 'idf');
    expect(weighted.values[0]).toBeCloseTo(saturated(1, 4) * 3, 6);
    expect(weighted.values[1]).toBeCloseTo(saturated(3, 4) * 2, 6);
    const relative = sparseVector(ids, learnedTable, 'relative');
    expect(relative.values[0]).toBeCloseTo(saturated(1, 4) * 1.5, 6);
    expect(relative.values[1]).toBeCloseTo(saturated(3, 4) * 0.5, 6);
    // without learned weights, relative is tf
    sparseVector(ids, table, 'relative').values.forEach((v, k) => expect(v).toBeCloseTo(sparseVector(ids, table, 'tf').values[k]!, 6));
  });

  it('saturates: a piece repeated counts less than in proportion, and a longer text weighs each piece less', () => {
    const once = sparseVector([2, 3], table, 'tf').values[0]!;
    const twice = sparseVector([2, 2, 3], table, 'tf').values[0]!;
    expect(twice).toBeGreaterThan(once);
    expect(twice).toBeLessThan(2 * once);
    expect(sparseVector([2, 3, 4, 4, 4, 4, 4, 4], table, 'tf').values[0]).toBeLessThan(once);
  });

  it('counts a stem class once, under its smallest piece (v4.4 folders), with that piece\'s idf and weight', () => {
    // pieces 3 and 4 share a class (canonical 3): "terminate" and "termination", say
    const classes: SparseTable = { ...learnedTable, idf: new Float32Array([0, 0, 2, 4, 4]), canonical: new Int32Array([0, 1, 2, 3, 3]) };
    const ids = [0, 3, 2, 4, 4, 1];
    const tf = sparseVector(ids, classes, 'tf');
    expect(tf.indices).toEqual([2, 3]);
    expect(tf.values[1]).toBeCloseTo(saturated(3, 4), 6); // three of the class, as one term
    expect(sparseVector(ids, classes, 'idf').values[1]).toBeCloseTo(saturated(3, 4) * 2, 6);
    expect(sparseVector([4, 2], classes, 'tf')).toEqual(sparseVector([3, 2], classes, 'tf'));
    // without classes the two pieces are two terms
    expect(sparseVector(ids, { ...classes, canonical: undefined }, 'tf').indices).toEqual([2, 3, 4]);
  });

  it('gives an empty vector for a text of pieces without idf', () => {
    expect(sparseVector([0, 1, 1, 0], table, 'idf')).toEqual({ indices: [], values: [] });
  });
});

describe('sparseVector with word pairs (v4.5)', () => {
  // piece 4 continues a word ("##…"): a pair ending in it is part of a word, not a phrase
  const pairs: SparseTable = { ...learnedTable, bigrams: { weight: 0.5, slots: 7, continuation: new Uint8Array([0b10000]) } };
  const slot = (a: number, c: number) => 5 + ((a * 5 + c) % 7);

  it('adds each neighbouring pair of counted pieces whose second starts a word, after the vocabulary, ascending', () => {
    const ids = [0, 2, 3, 1, 2, 3, 4, 1]; // specials skipped: the counted pieces are 2 3 2 3 4
    const tf = sparseVector(ids, pairs, 'tf');
    const pieces = sparseVector(ids, { ...pairs, bigrams: undefined }, 'tf');
    expect(tf.indices.slice(0, 3)).toEqual(pieces.indices);
    tf.values.slice(0, 3).forEach((v, k) => expect(v).toBeCloseTo(pieces.values[k]!, 6)); // the pieces are untouched
    // pairs (2,3) twice and (3,2) once; (3,4) is left out: 4 continues a word
    expect(tf.indices.slice(3)).toEqual([slot(2, 3), slot(3, 2)].sort((a, b) => a - b));
    const value = (a: number, c: number) => tf.values[tf.indices.indexOf(slot(a, c))]!;
    expect(value(2, 3)).toBeCloseTo(0.5 * saturated(2, 5), 6);
    expect(value(3, 2)).toBeCloseTo(0.5 * saturated(1, 5), 6);
    expect(sparseVocabularySize(pairs)).toBe(12);
    expect(sparseVocabularySize(learnedTable)).toBe(5);
  });

  it("weighs a pair by the geometric mean of its pieces' factors for idf and relative", () => {
    const ids = [2, 3];
    const at = (v: { indices: number[]; values: number[] }) => v.values[v.indices.indexOf(slot(2, 3))]!;
    expect(at(sparseVector(ids, pairs, 'idf'))).toBeCloseTo(0.5 * saturated(1, 2) * Math.sqrt(3 * 2), 6);
    expect(at(sparseVector(ids, pairs, 'relative'))).toBeCloseTo(0.5 * saturated(1, 2) * Math.sqrt(1.5 * 0.5), 6);
  });

  it('sums pairs that share a slot, keeps order (a, c) apart from (c, a), and gives no pair to a text of one piece', () => {
    const one = { ...pairs, bigrams: { ...pairs.bigrams!, slots: 1 } }; // every pair in one slot
    const v = sparseVector([2, 3, 2], one, 'tf');
    expect(v.indices).toEqual([2, 3, 5]);
    expect(v.values[2]).toBeCloseTo(2 * 0.5 * saturated(1, 3), 6);
    expect(slot(2, 3)).not.toBe(slot(3, 2));
    expect(sparseVector([0, 3, 1], pairs, 'tf').indices).toEqual([3]);
  });
});

describe('sparseVector with query neighbours (v4.6)', () => {
  // piece 2 lists 4 (sim 0.8) and 3 (sim 0.5); piece 3 lists 4 (sim 0.6)
  const neighbours = new Map<number, readonly [number, number]>([[2, [0, 2]], [3, [2, 3]]]);
  const expansion = { weight: 0.3, neighbours, targets: new Int32Array([4, 3, 4]), similarities: new Float32Array([0.8, 0.5, 0.6]) };
  const expanding: SparseTable = { ...learnedTable, expansion };

  it("adds a query's neighbours it does not hold, at the largest weight·sim·sat(tf) among their proposers", () => {
    const q = sparseVector([0, 2, 2, 3, 1], expanding, 'tf', true); // counted 2 2 3: length 3
    expect(q.indices).toEqual([2, 3, 4]);
    expect(q.values[0]).toBeCloseTo(saturated(2, 3), 6); // held pieces keep their own weight (3 is not raised by 2's listing)
    expect(q.values[1]).toBeCloseTo(saturated(1, 3), 6);
    // 4 is proposed by 2 (0.3·0.8·sat(2)) and by 3 (0.3·0.6·sat(1)): the larger counts
    expect(q.values[2]).toBeCloseTo(0.3 * 0.8 * saturated(2, 3), 6);
    const one = sparseVector([2], expanding, 'tf', true); // a piece once: both its neighbours
    expect(one.indices).toEqual([2, 3, 4]);
    [1, 0.3 * 0.5, 0.3 * 0.8].forEach((share, k) => expect(one.values[k]).toBeCloseTo(share * saturated(1, 1), 6));
  });

  it("times the neighbour's own factor for idf and relative", () => {
    const at = (v: { indices: number[]; values: number[] }) => v.values[v.indices.indexOf(4)]!;
    expect(at(sparseVector([2], expanding, 'idf', true))).toBeCloseTo(0.3 * 0.8 * saturated(1, 1) * 1, 6); // learned[4] = 1
    expect(at(sparseVector([2], expanding, 'relative', true))).toBeCloseTo(0.3 * 0.8 * saturated(1, 1) * (1 / 0.5), 6);
  });

  it('leaves documents (no query), texts without listed pieces and folders without neighbours as they were', () => {
    expect(sparseVector([2, 2, 3], expanding, 'tf')).toEqual(sparseVector([2, 2, 3], learnedTable, 'tf'));
    expect(sparseVector([4, 4], expanding, 'tf', true)).toEqual(sparseVector([4, 4], learnedTable, 'tf'));
    expect(sparseVector([2, 3], learnedTable, 'tf', true)).toEqual(sparseVector([2, 3], learnedTable, 'tf'));
  });

  it('forms no word pairs with a neighbour', () => {
    const both: SparseTable = { ...expanding, bigrams: { weight: 0.5, slots: 7, continuation: new Uint8Array([0]) } };
    const q = sparseVector([2, 3], both, 'tf', true);
    expect(q.indices).toEqual([2, 3, 4, 5 + ((2 * 5 + 3) % 7)]); // the pair (2, 3) only
  });
});

describe('sparseTableOf', () => {
  it('reads idf from base64 little-endian float32 and refuses a torn table', () => {
    const bytes = new Uint8Array(idf.buffer.slice(0));
    const base64 = btoa(String.fromCharCode(...bytes));
    const read = sparseTableOf({ recipe: 'bm25-pieces-v2', k1: 1.2, b: 0.75, avg_len: 4, idf: base64 });
    expect([...read.idf]).toEqual([...idf]);
    expect(read).toMatchObject({ k1: 1.2, b: 0.75, avgLength: 4 });
    expect([...read.weight]).toEqual([...idf]); // no learned table: the weight is idf
    const weight = btoa(String.fromCharCode(...new Uint8Array(learned.buffer.slice(0))));
    expect([...sparseTableOf({ recipe: 'bm25-pieces-v2', k1: 1.2, b: 0.75, avg_len: 4, idf: base64, weight }).weight]).toEqual([...learned]);
    expect(() => sparseTableOf({ recipe: 'x', k1: 1, b: 0.5, avg_len: 1, idf: btoa('abcde') })).toThrow(/not a whole number of 4-byte values/);
    expect(() => sparseTableOf({ recipe: 'x', k1: 1, b: 0.5, avg_len: 1, idf: base64, weight: btoa('abcd') })).toThrow(/sparse.weight holds 1 values and sparse.idf 5/);
  });

  it('reads stem classes from base64 little-endian int32 and refuses a table of the wrong size or pointing forward', () => {
    const base64 = btoa(String.fromCharCode(...new Uint8Array(idf.buffer.slice(0))));
    const int32 = (values: number[]) => btoa(String.fromCharCode(...new Uint8Array(new Int32Array(values).buffer)));
    const read = sparseTableOf({ recipe: 'bm25-stem-classes-v3', k1: 1.2, b: 0.75, avg_len: 4, idf: base64, canonical: int32([0, 1, 2, 3, 3]) });
    expect([...read.canonical!]).toEqual([0, 1, 2, 3, 3]);
    expect(sparseTableOf({ recipe: 'bm25-pieces-v2', k1: 1.2, b: 0.75, avg_len: 4, idf: base64 }).canonical).toBeUndefined();
    expect(() => sparseTableOf({ recipe: 'x', k1: 1, b: 0.5, avg_len: 1, idf: base64, canonical: int32([0, 1, 2]) })).toThrow(/sparse.canonical holds 3 values and sparse.idf 5/);
    expect(() => sparseTableOf({ recipe: 'x', k1: 1, b: 0.5, avg_len: 1, idf: base64, canonical: int32([0, 1, 4, 3, 4]) })).toThrow(/maps piece 2 to 4/);
  });

  it('reads word pairs and refuses an unknown rule, a bad weight or slot count, or a bitmap of the wrong size', () => {
    const base64 = btoa(String.fromCharCode(...new Uint8Array(idf.buffer.slice(0))));
    const settings = { recipe: 'bm25-stem-classes-v3', k1: 1.2, b: 0.75, avg_len: 4, idf: base64 };
    const bigrams = { rule: BIGRAM_RULE, weight: 0.6, slots: 11, continuations: btoa(String.fromCharCode(0b10000)) };
    const read = sparseTableOf({ ...settings, bigrams });
    expect(read.bigrams).toMatchObject({ weight: 0.6, slots: 11 });
    expect([...read.bigrams!.continuation]).toEqual([16]);
    expect(sparseVocabularySize(read)).toBe(16);
    expect(() => sparseTableOf({ ...settings, bigrams: { ...bigrams, rule: 'word-pairs-v9' } })).toThrow(/rule is "word-pairs-v9"; this lexembed applies "word-pairs-v1": upgrade lexembed/);
    expect(() => sparseTableOf({ ...settings, bigrams: { ...bigrams, weight: 0 } })).toThrow(/bigrams.weight must be a positive number, got 0/);
    expect(() => sparseTableOf({ ...settings, bigrams: { ...bigrams, slots: 2.5 } })).toThrow(/bigrams.slots must be a whole number/);
    expect(() => sparseTableOf({ ...settings, bigrams: { ...bigrams, continuations: btoa('ab') } })).toThrow(/holds 2 bytes; 5 pieces need 1/);
  });

  it('reads query neighbours and refuses an unknown rule, a bad weight, torn or unsorted tables, or a piece outside the vocabulary', () => {
    const base64 = btoa(String.fromCharCode(...new Uint8Array(idf.buffer.slice(0))));
    const settings = { recipe: 'bm25-stem-classes-v3', k1: 1.2, b: 0.75, avg_len: 4, idf: base64 };
    const int32 = (values: number[]) => btoa(String.fromCharCode(...new Uint8Array(new Int32Array(values).buffer)));
    const float32 = (values: number[]) => btoa(String.fromCharCode(...new Uint8Array(new Float32Array(values).buffer)));
    const expansion = { rule: EXPANSION_RULE, weight: 0.3, sources: int32([2, 2, 3]), targets: int32([4, 3, 4]), similarities: float32([0.8, 0.5, 0.6]) };
    const read = sparseTableOf({ ...settings, expansion });
    expect(read.expansion!.weight).toBe(0.3);
    expect([...read.expansion!.neighbours]).toEqual([[2, [0, 2]], [3, [2, 3]]]);
    expect([...read.expansion!.targets]).toEqual([4, 3, 4]);
    expect(sparseVocabularySize(read)).toBe(5); // neighbours are pieces: no new indices
    expect(() => sparseTableOf({ ...settings, expansion: { ...expansion, rule: 'query-neighbours-v9' } })).toThrow(/rule is "query-neighbours-v9"; this lexembed applies "query-neighbours-v1": upgrade lexembed, or take the neighbours out with python3 -m model\.sparse\.query_neighbours --strip/);
    expect(() => sparseTableOf({ ...settings, expansion: { ...expansion, weight: -1 } })).toThrow(/expansion.weight must be a positive number, got -1/);
    expect(() => sparseTableOf({ ...settings, expansion: { ...expansion, targets: int32([4, 3]) } })).toThrow(/holds 3 sources, 2 targets and 3 similarities/);
    expect(() => sparseTableOf({ ...settings, expansion: { ...expansion, sources: int32([3, 2, 2]) } })).toThrow(/sources must be ascending \(entry 1\)/);
    expect(() => sparseTableOf({ ...settings, expansion: { ...expansion, targets: int32([4, 3, 9]) } })).toThrow(/names piece 9, outside the 5 pieces/);
    expect(() => sparseTableOf({ ...settings, expansion: { ...expansion, targets: int32([4, 3, 1]) } })).toThrow(/proposes piece 1, which carries no word \(idf 0\)/);
    // with stem classes, a proposed piece must be its class's own index (4 counts as 3 here)
    expect(() => sparseTableOf({ ...settings, canonical: int32([0, 1, 2, 3, 3]), expansion })).toThrow(/proposes piece 4, which counts as piece 3 \(its stem class\)/);
  });
});
