// The bundled legal-2-embedder: served exactly as trained (tokenizer and vectors agree with the
// Python recipe), and useful for legal retrieval on a small fixed example.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR, loadModelFolder } from '../../src/node/runtime/load-model.ts';
import type { Embedder } from '../../src/embedder/types.ts';

const parity = JSON.parse(readFileSync(join(import.meta.dirname, '../fixtures/legal-model-parity.json'), 'utf8')) as {
  layout: { transformer: number; static: number; lexical: number; matryoshka: number[] };
  cases: { text: string; ids: number[]; vector_head: number[]; vector_tail: number[]; document_head: number[]; document_tail: number[] }[];
};

let embedder: Embedder;
// The recipe's vectors are the float32 graph's (the int8 graph is checked against it in tests/node/runtime/int8.test.ts).
beforeAll(async () => void (embedder = await loadModelFolder(BUNDLED_MODEL_DIR, { gpuDtype: 'fp32' })));
afterAll(() => embedder?.dispose());

const embed = async (texts: string[], extra: { task?: 'retrieval/query' | 'retrieval/document'; dimensions?: number } = {}) => {
  const r = await embedder.embed({ texts, task: extra.task ?? null, overflowStrategy: 'drop_end', dimensions: extra.dimensions ?? null });
  if (!r.ok) throw new Error(r.problem.detail ?? '');
  return r.value;
};
const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);

describe('bundled legal-2-embedder', () => {
  it('is a 1792-dimension model (256 transformer + 384 static + 1152 lexical, Matryoshka-ordered) with 512 max input tokens', () => {
    expect(parity.layout).toEqual({ transformer: 256, static: 384, lexical: 1152, matryoshka: [32, 64, 128, 256, 512, 1024] });
    expect(embedder.settings.dimensions).toEqual({ default: 1792, max: 1792, matryoshka: [32, 64, 128, 256, 512, 1024] });
    expect(embedder.settings.max_input_tokens).toBe(512);
  });

  it('tokenises exactly as the training recipe did', async () => {
    for (const c of parity.cases) {
      const { inputTokens } = await embed([c.text]);
      expect(inputTokens, c.text).toBe(c.ids.length);
    }
  });

  it('gives the vectors the training recipe computes', async () => {
    const { vectors } = await embed(parity.cases.map((c) => c.text));
    parity.cases.forEach((c, i) => {
      const v = vectors[i]!;
      // The Matryoshka rotation mixes every part into every component: the first 16 and the last 8
      // check the transformer, static and lexical parts at once.
      c.vector_head.forEach((x, k) => expect(v[k], c.text).toBeCloseTo(x, 4));
      c.vector_tail.forEach((x, k) => expect(v[v.length - 8 + k], c.text).toBeCloseTo(x, 4));
    });
  });

  it('gives documents the document form the training recipe computes (task retrieval/document, full width)', async () => {
    expect(embedder.settings.document_form).toEqual({ marker: 2, replaces: 101, full_width_only: true });
    const { vectors, inputTokens } = await embed(parity.cases.map((c) => c.text), { task: 'retrieval/document' });
    expect(inputTokens).toBe(parity.cases.reduce((n, c) => n + c.ids.length, 0));
    parity.cases.forEach((c, i) => {
      const v = vectors[i]!;
      expect(Math.sqrt(dot(v, v)), c.text).toBeCloseTo(1, 5);
      c.document_head.forEach((x, k) => expect(v[k], c.text).toBeCloseTo(x, 4));
      c.document_tail.forEach((x, k) => expect(v[v.length - 8 + k], c.text).toBeCloseTo(x, 4));
    });
  });

  it('gives documents the query form below full width (a Matryoshka prefix of the document form ranks worse)', async () => {
    const text = parity.cases[0]!.text;
    const [asDocument] = (await embed([text], { task: 'retrieval/document', dimensions: 512 })).vectors;
    const [asText] = (await embed([text], { dimensions: 512 })).vectors;
    expect(Array.from(asDocument!)).toEqual(Array.from(asText!));
  });

  it('ranks the matching provision first for legal queries', async () => {
    const passages = [
      'The tenant shall pay the rent on the first day of each month to the landlord at the address given in the lease.',
      'Every employer shall keep records of the wages, hours of work and overtime of each employee for three years.',
      'A creditor shall not discriminate against an applicant on a prohibited basis regarding any aspect of a credit transaction.',
      'Any person who contravenes this section is guilty of an offence and liable on summary conviction to a fine.',
      'The Minister may, by order, designate any area of land as a wildlife sanctuary and prohibit hunting in it.',
    ];
    const queries: [string, number][] = [
      ['Payment of rent', 0],
      ['Records of wages and overtime', 1],
      ['Discrimination in credit', 2],
      ['Offence and punishment', 3],
      ['Wildlife sanctuaries', 4],
    ];
    const docs = (await embed(passages, { task: 'retrieval/document' })).vectors;
    const qs = (await embed(queries.map((q) => q[0]), { task: 'retrieval/query' })).vectors;
    queries.forEach(([q, expected], i) => {
      const scores = docs.map((d) => dot(qs[i]!, d));
      expect(scores.indexOf(Math.max(...scores)), q).toBe(expected);
    });
  });

  it('answers a text with nothing the tokenizer keeps (zero-width, controls) with a 400 naming its index', async () => {
    for (const blank of ['\u200b', '\u0001\u200b\u0002', '\u200b\u200c\u200d']) {
      const r = await embedder.embed({ texts: ['Lease', blank], task: 'retrieval/query', overflowStrategy: 'drop_end', dimensions: null });
      expect(r.ok, JSON.stringify(blank)).toBe(false);
      if (!r.ok) expect(r.problem).toMatchObject({ code: 'validation', detail: expect.stringMatching(/^texts\[1\] has no characters the model can read/) });
    }
  });

  it('keeps its ranking on a Matryoshka prefix (128 dimensions)', async () => {
    const docs = (await embed(['Termination of the agreement by notice', 'Payment of annual fees'], { dimensions: 128 })).vectors;
    const [q] = (await embed(['How can the agreement be terminated?'], { dimensions: 128 })).vectors;
    expect(docs[0]).toHaveLength(128);
    expect(dot(q!, docs[0]!)).toBeGreaterThan(dot(q!, docs[1]!));
  });
});
