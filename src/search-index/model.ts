// What an index needs of the model: passages' dense and sparse vectors as documents, a query's as a
// query, chunking with the model's tokenizer, and the identity that says which vectors compare.
// Made from a loaded Embedder (the same operations the HTTP API runs).
import { PROBLEM_CATALOGUE, type Result } from '../contract/index.ts';
import { INT8_SCALE_PER_SQRT_DIM, quantizeVector } from '../contract/vectors.ts';
import type { TextChunk } from '../embedder/chunk.ts';
import type { SparseVector } from '../embedder/sparse.ts';
import type { EmbedOptions, Embedder } from '../embedder/types.ts';
import { IndexError, type IndexSettings } from './schema.ts';

export interface IndexModel {
  readonly settings: Omit<IndexSettings, 'chunkTokens'>;
  readonly maxChunkTokens: number;
  chunk(text: string, size: number): TextChunk[];
  /** Passages as `retrieval/document`: full-width unit vectors, and `relative` sparse vectors (the store applies the corpus's idf). */
  embedPassages(texts: readonly string[]): Promise<{ dense: Float32Array[]; sparse: SparseVector[] }>;
  /** A query as `retrieval/query`: its unit vector and its `tf` sparse vector (query neighbours included). */
  embedQuery(text: string, options?: EmbedOptions): Promise<{ dense: Float32Array; sparse: SparseVector }>;
  /** Sparse vectors alone (no model runs): `relative` for a document's context, `tf` for words of a query. */
  sparseOf(texts: readonly string[], weighting: 'relative' | 'tf'): Promise<SparseVector[]>;
}

/** The index's view of a loaded model; an IndexError where the model has no sparse vectors. */
export function indexModelOf(embedder: Embedder): IndexModel {
  const sparse = embedder.sparse;
  if (!sparse) throw new IndexError(`model ${embedder.settings.id ?? embedder.modelName} has no sparse vectors (its lexembed.json has no "sparse" table), which an index's hybrid search needs: use a bundled model folder`);
  const unwrap = <T>(result: Result<T>, what: string): T => {
    if (result.ok) return result.value;
    throw new IndexError(`${what}: ${result.problem.detail ?? PROBLEM_CATALOGUE[result.problem.code].title}`, result.problem);
  };
  return {
    settings: {
      model: { name: embedder.modelName, id: embedder.settings.id ?? null, fingerprint: embedder.settings.fingerprint ?? null, vectors: embedder.settings.vectors ?? null },
      dimensions: embedder.maxDimensions,
      vocabularySize: sparse.vocabularySize,
    },
    maxChunkTokens: embedder.maxChunkTokens,
    chunk: (text, size) => unwrap(embedder.chunkText(text, { size }), 'cannot chunk the text'),
    async embedPassages(texts) {
      const input = { texts, task: 'retrieval/document' as const, overflowStrategy: 'drop_end' as const };
      const dense = unwrap(await embedder.embed({ ...input, dimensions: null }), 'cannot embed the passages');
      const lexical = unwrap(await sparse.embed({ ...input, weighting: 'relative' }), 'cannot make the passages\' sparse vectors');
      return { dense: dense.vectors, sparse: lexical.vectors };
    },
    async embedQuery(text, options) {
      const input = { texts: [text], task: 'retrieval/query' as const, overflowStrategy: null };
      // A server request's lease goes to the dense embedding only: it admits and meters the query once.
      const dense = unwrap(await embedder.embed({ ...input, dimensions: null }, options), 'the query cannot be embedded');
      const lexical = unwrap(await sparse.embed({ ...input, weighting: 'tf' }), 'the query cannot be embedded');
      return { dense: dense.vectors[0]!, sparse: lexical.vectors[0]! };
    },
    async sparseOf(texts, weighting) {
      if (!texts.length) return [];
      const task = weighting === 'tf' ? null : ('retrieval/document' as const);
      return unwrap(await sparse.embed({ texts, task, overflowStrategy: 'drop_end', weighting }), 'cannot make sparse vectors').vectors;
    },
  };
}

/** int8 components as the API's output_dtype int8 makes them (quantizeVector). */
export const toInt8 = (vector: Float32Array): Int8Array => Int8Array.from(quantizeVector(vector, 'int8'));

/** The cosine of a float unit query with an int8 passage vector (toInt8's scale undone). */
export function cosineInt8(query: Float32Array, passage: Int8Array): number {
  let sum = 0;
  for (let i = 0; i < query.length; i++) sum += query[i]! * passage[i]!;
  return sum / (INT8_SCALE_PER_SQRT_DIM * Math.sqrt(query.length));
}

/** PostgreSQL's bit(n) literal of the vector's signs: 1 where a component is > 0. */
export function signBits(vector: Float32Array): string {
  let bits = '';
  for (let i = 0; i < vector.length; i++) bits += vector[i]! > 0 ? '1' : '0';
  return bits;
}

/** pgvector's sparsevec literal: indices count from 1 there. */
export function sparsevecLiteral(vector: SparseVector, size: number, weights?: (index: number) => number): string {
  const entries: string[] = [];
  for (let i = 0; i < vector.indices.length; i++) {
    const value = vector.values[i]! * (weights ? weights(vector.indices[i]!) : 1);
    if (value > 0) entries.push(`${vector.indices[i]! + 1}:${Math.fround(value)}`);
  }
  return `{${entries.join(',')}}/${size}`;
}
