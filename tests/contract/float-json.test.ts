// Vectors in responses are written as float32: each component the shortest decimal that reads back
// to the same float32. Checked against an exact reference (toPrecision, shortest first) on random
// float32 values of every magnitude, on whole bodies against JSON.stringify, and over HTTP against
// the vectors the embedder computes in process.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { finiteNumbersOf, float32Json, float32JsonBytes } from '../../src/contract/index.ts';
import { createApp } from '../../src/http/app.ts';
import { loadModelFolder, STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import type { Embedder } from '../../src/embedder/types.ts';

/** The reference: the fewest significant digits whose correctly rounded decimal reads back to x as a float32. */
function reference(x: number): string {
  if (Number.isInteger(x)) return String(x);
  for (let p = 1; p <= 9; p++) {
    const n = Number(x.toPrecision(p));
    if (Math.fround(n) === x) return String(n);
  }
  throw new Error(`no 9-digit decimal reads back to ${x}`);
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

describe('float32Json', () => {
  it('writes the shortest decimal reading back to the float32, for unit-vector components and random bit patterns alike', () => {
    const f = new Float32Array(1);
    const bits = new Uint32Array(f.buffer);
    let seed = 7;
    const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    let checked = 0;
    for (let i = 0; i < 300_000; i++) {
      if (i % 3 === 0) bits[0] = (random() * 2 ** 32) >>> 0;
      else f[0] = (random() * 2 - 1) * (i % 3 === 1 ? 1 : 1e-4);
      const x = f[0]!;
      if (!Number.isFinite(x)) continue;
      const written = float32Json(x);
      if (written !== reference(x) || Math.fround(Number(written)) !== x) expect(written).toBe(reference(x));
      checked++;
    }
    expect(checked).toBeGreaterThan(290_000);
  });

  it('writes short forms where they exist, and integers, non-float32 doubles and non-finite numbers as JSON does', () => {
    expect(float32Json(Math.fround(0.1))).toBe('0.1');
    expect(float32Json(Math.fround(-0.03125))).toBe('-0.03125');
    expect(float32Json(Math.fround(0.0123456789))).toBe('0.012345679');
    expect(float32Json(Math.fround(1e-7))).toBe('1e-7');
    expect(float32Json(Math.fround(123.456))).toBe('123.456');
    for (const x of [0, -0, 1, -128, 127, 2 ** 24, 0.1, Math.PI, 1e300]) expect(float32Json(x)).toBe(JSON.stringify(x));
    for (const x of [Number.NaN, Number.POSITIVE_INFINITY]) expect(float32Json(x)).toBe('null');
  });
});

describe('float32JsonBytes', () => {
  const vector = Array.from({ length: 64 }, (_, i) => Math.fround(Math.sin(i + 1) / 6));

  it('is JSON.stringify but for vectors, whose components read back to the same float32 in less text', () => {
    const body = { object: 'list', data: [{ index: 0, embedding: vector, note: 'é ✓ "q"\n' }], usage: { prompt_tokens: 3 } };
    const written = text(float32JsonBytes(body));
    const parsed = JSON.parse(written);
    expect({ ...parsed, data: [{ ...parsed.data[0], embedding: [] }] }).toEqual({ ...body, data: [{ ...body.data[0], embedding: [] }] });
    expect(parsed.data[0].embedding.map(Math.fround)).toEqual(vector);
    expect(parsed.data[0].embedding).not.toEqual(vector); // the doubles differ: 0.1, not 0.10000000149011612
    expect(written.length).toBeLessThan(0.75 * JSON.stringify(body).length);
  });

  it('leaves short lists, integers, non-finite entries and other doubles as JSON writes them', () => {
    const ids = Array.from({ length: 20 }, (_, i) => i * 1000);
    const doubles = Array.from({ length: 10 }, (_, i) => Math.PI * i);
    const body = { short: [Math.fround(0.1), Math.fround(0.2)], ids, doubles, holes: [...vector.slice(0, 9), Number.NaN] };
    expect(text(float32JsonBytes(body))).toBe(JSON.stringify(body));
  });

  it('a vector copied by finiteNumbersOf is written as the same vector scanned, and one with a NaN as JSON writes it', () => {
    const source = Float32Array.from(vector);
    const copied = finiteNumbersOf(source);
    expect(copied).toEqual(vector);
    expect(text(float32JsonBytes({ v: copied }))).toBe(text(float32JsonBytes({ v: [...vector] })));
    source[3] = Number.NaN;
    const withNaN = finiteNumbersOf(source);
    expect(text(float32JsonBytes({ v: withNaN }))).toBe(JSON.stringify({ v: withNaN }));
    // Marked, then changed after: still valid JSON (a non-finite number is written as JSON writes it, null).
    copied[5] = Number.POSITIVE_INFINITY;
    expect(JSON.parse(text(float32JsonBytes({ v: copied }))).v[5]).toBeNull();
  });

  it('a string that holds the marker it uses cannot misplace a vector: the body is then written plainly', () => {
    // The marker is random per process: read it from the replacer float32JsonBytes hands JSON.stringify.
    const stringify = vi.spyOn(JSON, 'stringify');
    float32JsonBytes({ v: vector });
    const replacer = stringify.mock.calls[0]![1] as unknown as (key: string, value: unknown) => unknown;
    stringify.mockRestore();
    const marker = replacer('v', vector);
    expect(marker).toEqual(expect.stringContaining('lexembed-vector'));
    const body = { a: marker, v: vector };
    expect(text(float32JsonBytes(body))).toBe(JSON.stringify(body));
  });
});

describe('over HTTP', () => {
  let model: Embedder & { dispose(): Promise<void> };
  let app: ReturnType<typeof createApp>;
  beforeAll(async () => void (app = createApp({ embedder: (model = await loadModelFolder(STATIC_MODEL_DIR, { inference: 'main' })) })), 60_000);
  afterAll(() => model?.dispose());

  it('/v1/embeddings and /openai/v1/embeddings answer the float32 vectors the embedder computes, to the bit', async () => {
    const texts = ['The lessee shall pay the rent on the first day of each month.', 'Governing law and jurisdiction'];
    const embedded = await model.embed({ texts, task: null, overflowStrategy: null, dimensions: null });
    if (!embedded.ok) throw new Error(String(embedded.problem.detail));
    const expected = embedded.value.vectors.map((v) => Array.from(v));
    const post = (path: string, body: unknown) => app.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const specText = await (await post('/v1/embeddings', { model: 'legal-2-embedder-static', texts })).text();
    // float32's shortest forms (at most 9 significant digits), never a double's 17
    const significant = specText.match(/\d+\.\d+/g)!.map((n) => n.replace('.', '').replace(/^0+/, '').length);
    expect(Math.max(...significant)).toBeLessThanOrEqual(9);
    const spec = JSON.parse(specText);
    const openai = await (await post('/openai/v1/embeddings', { model: 'legal-2-embedder-static', input: texts })).json();
    expect(spec.embeddings.map((e: { embedding: number[] }) => e.embedding.map(Math.fround))).toEqual(expected);
    expect(openai.data.map((e: { embedding: number[] }) => e.embedding.map(Math.fround))).toEqual(expected);
  });

  it('short vectors too (dimensions 2 to 7): float32 shortest forms on both routes, never a double\'s digits', async () => {
    const post = (path: string, body: unknown) => app.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    for (const dimensions of [2, 3, 7]) {
      const embedded = await model.embed({ texts: ['Notice'], task: null, overflowStrategy: null, dimensions });
      if (!embedded.ok) throw new Error(String(embedded.problem.detail));
      const expected = Array.from(embedded.value.vectors[0]!, (x) => float32Json(x));
      const spec = await (await post('/v1/embeddings', { model: 'legal-2-embedder-static', texts: 'Notice', dimensions })).text();
      const openai = await (await post('/openai/v1/embeddings', { model: 'legal-2-embedder-static', input: 'Notice', dimensions })).text();
      expect(spec).toContain(`"embedding":[${expected.join(',')}]`);
      expect(openai).toContain(`"embedding":[${expected.join(',')}]`);
    }
  });
});
