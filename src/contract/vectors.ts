// Pure vector and token-sequence rules of the contract: truncation and dimensions.
import { finiteNumbersOf } from './float-json.ts';

/**
 * `drop_end`: keeps the first `maxTokens - 1` ids and the final id (the closing special
 * token), so a truncated sequence still ends the way the model was trained on.
 */
export function truncateToMaxTokens(ids: readonly number[], maxTokens: number): number[] {
  if (ids.length <= maxTokens) return ids.slice();
  if (maxTokens < 2) return ids.slice(0, maxTokens);
  return [...ids.slice(0, maxTokens - 1), ids[ids.length - 1]!];
}

/**
 * Keeps the first `dimensions` components and rescales to unit L2 norm. Plain index loops and a
 * typed-array copy: every response runs this on every vector (a per-element callback cost ~50 µs
 * for 1024 components against ~4 here, same values to the bit).
 */
export function truncateAndNormalize(vector: ArrayLike<number>, dimensions: number): Float32Array {
  const n = Math.min(dimensions, vector.length);
  const out = new Float32Array(n);
  if (vector instanceof Float32Array) out.set(vector.subarray(0, n));
  else for (let i = 0; i < n; i++) out[i] = vector[i]!;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += out[i]! * out[i]!;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < n; i++) out[i]! /= norm;
  return out;
}

/** Output types of the `output_dtype` extension (Voyage AI's meanings). */
export const OUTPUT_DTYPES = ['float', 'int8', 'uint8', 'binary', 'ubinary'] as const;
export type OutputDtype = (typeof OUTPUT_DTYPES)[number];

/**
 * int8's fixed scale per unit vector of d components: round(x · 16√d), clamped to [-128, 127].
 * Chosen by measurement on the bundled models' vectors (tests/contract/output-dtype.test.ts): a
 * component of a unit vector is about 1/√d, so 16√d puts the largest seen (< 8/√d) well inside
 * the range; the cosine to the float vector stays ≥ 0.999 at 640 and ≥ 0.99 at 32 components.
 */
export const INT8_SCALE_PER_SQRT_DIM = 16;

/**
 * The vector in the requested type: float as is; int8 integers in [-128, 127]; uint8 = int8 + 128;
 * ubinary 8 components a byte as numpy.packbits packs them (the first component in the highest
 * bit, 1 where it is > 0, zero bits padding the last byte); binary that byte − 128.
 * @example quantizeVector([0.6, -0.8], 'binary') // [0]: 0b1000_0000 − 128
 */
export function quantizeVector(vector: ArrayLike<number>, dtype: OutputDtype): number[] {
  if (dtype === 'float') return finiteNumbersOf(vector);
  if (dtype === 'int8' || dtype === 'uint8') {
    const scale = INT8_SCALE_PER_SQRT_DIM * Math.sqrt(vector.length);
    const offset = dtype === 'uint8' ? 128 : 0;
    return Array.from(vector, (x) => Math.max(-128, Math.min(127, Math.round(x * scale))) + offset);
  }
  const bytes = new Array<number>(Math.ceil(vector.length / 8)).fill(0);
  for (let i = 0; i < vector.length; i++) if (vector[i]! > 0) bytes[i >> 3]! |= 0x80 >> (i & 7);
  return dtype === 'ubinary' ? bytes : bytes.map((b) => b - 128);
}

/** The cosine of two unit vectors (the embedder's are): their dot product. */
export function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}
