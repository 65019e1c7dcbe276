// JSON of response bodies with their vectors written as float32, the type the model computes them
// in: each component as the shortest decimal that reads back to the same float32 (as OpenAI's API
// writes embeddings), not the 17-digit expansion JSON.stringify gives a float32 widened to a
// double. The float32 vector is the same to the bit (Math.fround of each parsed number, or a
// float32 array, gives it back); the text is ~40 % shorter and, written straight to bytes, took
// 0.67–0.89 × the time of JSON.stringify and encoding here (bench/float-json.ts). On short texts
// JSON was the server's largest cost after the model itself.

/** Arrays of at least this many finite numbers are written as float32 (vectors; not small lists). */
const MIN_VECTOR_LENGTH = 8;
/** Powers of ten that are exact doubles (10^0 … 10^22). */
const POW10 = new Float64Array(23).map((_, i) => 10 ** i);
/** Most bytes one number takes (String of a float32-sized integer, or an exponent form). */
const MAX_NUMBER_BYTES = 26;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const MARKER = `\u2063lexembed-vector-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;

/**
 * Arrays known to hold only finite numbers (vectors copied out of a float32 array: see
 * `finiteNumbersOf`), which the writer then need not scan. The scan of a plain array made by
 * `new Array(n)` (holey: a read may be a hole) boxed every component it read, ~10 kB of garbage
 * a 640-dimension vector.
 */
const knownFinite = new WeakSet<number[]>();

/** The components as a plain array of numbers, marked finite when they all are (the JSON writer skips its scan). */
export function finiteNumbersOf(vector: ArrayLike<number>): number[] {
  const out = new Array<number>(vector.length);
  let finite = true;
  for (let i = 0; i < vector.length; i++) {
    const x = vector[i]!;
    out[i] = x;
    if (x - x !== 0) finite = false; // NaN or ±Infinity
  }
  if (finite) knownFinite.add(out);
  return out;
}

/**
 * The UTF-8 bytes of `JSON.stringify(value)`, except that every array of at least eight numbers,
 * all finite, and every array `finiteNumbersOf` made, has each number that holds a float32 value written as the shortest decimal reading
 * back to that float32 (integers and other numbers as JSON writes them).
 */
export function float32JsonBytes(value: unknown): Uint8Array<ArrayBuffer> {
  const arrays: number[][] = [];
  const skeleton = JSON.stringify(value, (_key, v: unknown) => {
    // A vector copied by finiteNumbersOf is one at any length (dimensions: 2 is a vector too).
    if (Array.isArray(v) && (knownFinite.has(v) || (v.length >= MIN_VECTOR_LENGTH && isFiniteNumbers(v)))) {
      arrays.push(v);
      return MARKER;
    }
    return v;
  });
  const parts = arrays.length ? skeleton.split(`"${MARKER}"`) : [skeleton];
  // A string in the body holding the marker (random per process, so never by chance): written plainly.
  if (parts.length !== arrays.length + 1) return encoder.encode(JSON.stringify(value));
  const out = new ByteWriter(parts.reduce((n, p) => n + 3 * p.length, 0) + arrays.reduce((n, a) => n + MAX_NUMBER_BYTES * a.length + 2, 0));
  out.text(parts[0]!);
  for (let i = 0; i < arrays.length; i++) {
    out.vector(arrays[i]!);
    out.text(parts[i + 1]!);
  }
  return out.copy();
}

/**
 * One number as `float32JsonBytes` writes it.
 *
 * @example float32Json(Math.fround(0.1)) === '0.1'   // JSON.stringify writes 0.10000000149011612
 */
export function float32Json(x: number): string {
  const out = new ByteWriter(MAX_NUMBER_BYTES);
  out.number(x);
  return decoder.decode(out.copy());
}

function isFiniteNumbers(v: unknown[]): v is number[] {
  for (let i = 0; i < v.length; i++) {
    const x = v[i];
    if (typeof x !== 'number' || !Number.isFinite(x)) return false;
  }
  return true;
}

/**
 * Writes into one scratch buffer shared by every call (grown to the worst case a body may need,
 * never shrunk), then copies out exactly what was written: a fresh buffer of the worst case per
 * response (~26 bytes a number) cost more in allocation and GC than the writing saved.
 */
let scratch = new Uint8Array(1 << 16);

class ByteWriter {
  private readonly buffer: Uint8Array<ArrayBuffer>;
  private pos = 0;

  /** `capacity`: the most bytes that will be written. Synchronous use only (the scratch buffer is shared). */
  constructor(capacity: number) {
    if (scratch.length < capacity) scratch = new Uint8Array(Math.max(capacity, 2 * scratch.length));
    this.buffer = scratch;
  }

  /** What was written, in a buffer of its own. */
  copy(): Uint8Array<ArrayBuffer> {
    return this.buffer.slice(0, this.pos);
  }

  text(s: string): void {
    this.pos += encoder.encodeInto(s, this.buffer.subarray(this.pos)).written;
  }

  vector(v: readonly number[]): void {
    this.buffer[this.pos++] = 0x5b; // [
    for (let i = 0; i < v.length; i++) {
      if (i) this.buffer[this.pos++] = 0x2c; // ,
      this.number(v[i]!);
    }
    this.buffer[this.pos++] = 0x5d; // ]
  }

  number(x: number): void {
    const a = x < 0 ? -x : x;
    // Unit vectors' components take the fast path; integers, other doubles and the rest are written exactly as JavaScript would.
    if (a >= 1e-6 && a < 1 && Math.fround(x) === x && this.fraction(x, a)) return;
    this.ascii(Number.isInteger(x) || !Number.isFinite(x) || Math.fround(x) !== x ? JSON.stringify(x) : shortestBySearch(x));
  }

  /**
   * For a float32 `a` in [1e-6, 1): the fewest significant digits (from 6; fewer come out as
   * trailing zeros) whose rounding of `a` reads back to the same float32, written as 0.000ddd.
   * False, writing nothing, where a rounding is too near a tie to trust double arithmetic.
   */
  private fraction(x: number, a: number): boolean {
    // a = 0.<lead zeros>d…: the first significant digit is `lead` places after the point.
    let lead = 0;
    while (a * POW10[lead + 1]! < 1) lead++;
    let m = 0;
    let places = 0;
    for (let digits = 6; ; digits++) {
      places = lead + digits;
      const scaled = a * POW10[places]!;
      const rounded = Math.round(scaled);
      if (Math.abs(Math.abs(scaled - rounded) - 0.5) < 1e-6) return false;
      // rounded / 10^places is exactly what a reader parses the decimal to (both exact: one correctly rounded division).
      if (Math.fround(rounded / POW10[places]!) === a) {
        m = rounded | 0; // at most 10^9
        break;
      }
      if (digits === 9) return false;
    }
    while (m % 10 === 0) {
      m = (m / 10) | 0;
      places--;
    }
    const b = this.buffer;
    let pos = this.pos;
    if (x < 0) b[pos++] = 0x2d; // -
    b[pos++] = 0x30; // 0
    b[pos++] = 0x2e; // .
    let count = 1;
    while (count < 10 && POW10[count]! <= m) count++;
    for (let z = places - count; z > 0; z--) b[pos++] = 0x30;
    const end = pos + count;
    for (let p = end; p > pos; ) {
      const q = (m / 10) | 0;
      b[--p] = 0x30 + m - q * 10;
      m = q;
    }
    this.pos = end;
    return true;
  }

  private ascii(s: string): void {
    for (let i = 0; i < s.length; i++) this.buffer[this.pos++] = s.charCodeAt(i);
  }
}

/** Exact, for any float32 `x`: the first precision whose correctly rounded decimal reads back to `x`, as JavaScript writes that number. */
function shortestBySearch(x: number): string {
  for (let p = 1; p < 9; p++) {
    const n = Number(x.toPrecision(p));
    if (Math.fround(n) === x) return String(n);
  }
  return String(Number(x.toPrecision(9)));
}
