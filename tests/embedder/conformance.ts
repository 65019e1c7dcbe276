// The embedder conformance suite: the whole contract (prompts, token counts, truncation,
// dimensions, index order, determinism), with expectations taken from the model's settings, so
// the real tiny model on the CPU path, the WebGPU path (tests/node/webgpu.test.ts) and the
// deterministic fake backend all run it. It assumes a BERT-style tokenizer: one opening and one
// closing special token, and "hello", "world" as single pieces.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Embedder, EmbedInput } from '../../src/embedder/types.ts';

export interface ConformanceOptions {
  /** CPU runs are bit-for-bit repeatable; GPU kernels need only agree to cosine 0.99999. */
  readonly exactRepeat: boolean;
}

export function describeEmbedderConformance(label: string, load: () => Promise<Embedder>, options: ConformanceOptions): void {
  describe(`embedder conformance: ${label}`, () => {
    let embedder: Embedder;
    beforeAll(async () => {
      embedder = await load();
    });
    afterAll(() => embedder?.dispose());

    const input = (texts: string[], extra: Partial<EmbedInput> = {}): EmbedInput => ({ texts, task: null, overflowStrategy: 'drop_end', dimensions: null, ...extra });

    async function embed(texts: string[], extra: Partial<EmbedInput> = {}) {
      const r = await embedder.embed(input(texts, extra));
      if (!r.ok) throw new Error(`unexpected problem ${r.problem.detail}`);
      return r.value;
    }

    const norm = (v: Float32Array) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
    const cosine = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);
    const long = Array.from({ length: 200 }, (_, i) => `clause${i % 7} term`).join(' ');

    it('returns one unit vector of the default width per text', async () => {
      const { vectors } = await embed(['The tenant shall pay rent.', 'Force majeure.']);
      expect(vectors).toHaveLength(2);
      for (const v of vectors) {
        expect(v).toHaveLength(embedder.settings.dimensions.default);
        expect(norm(v)).toBeCloseTo(1, 5);
      }
    });

    it('is deterministic and distinguishes different texts', async () => {
      const [a] = (await embed(['Indemnification clause'])).vectors;
      const [b] = (await embed(['Indemnification clause'])).vectors;
      const [c] = (await embed(['Governing law of Ontario'])).vectors;
      if (options.exactRepeat) expect(Array.from(a!)).toEqual(Array.from(b!));
      else expect(cosine(a!, b!)).toBeGreaterThan(0.99999);
      expect(cosine(a!, c!)).toBeLessThan(0.999);
    });

    it('keeps index order and gives the same vector in a mixed-length batch as alone', async () => {
      const texts = [long, 'short', 'a somewhat longer text about liability', 'x'];
      const batch = (await embed(texts)).vectors;
      for (const [i, t] of texts.entries()) {
        const [alone] = (await embed([t])).vectors;
        expect(cosine(batch[i]!, alone!)).toBeGreaterThan(0.99999);
      }
    });

    it('counts tokens exactly: [CLS] + word pieces + [SEP]', async () => {
      // "hello world" → [CLS] hello world [SEP]
      expect((await embed(['hello world'])).inputTokens).toBe(4);
      expect((await embed(['hello world', 'hello'])).inputTokens).toBe(7);
    });

    it('counts the task prompt in the tokens and changes the vector with it', async () => {
      const prompt = embedder.settings.prompts['retrieval/query'];
      expect(prompt, 'the suite needs a model with a query prompt').toBeTruthy();
      const plain = await embed(['hello world']);
      const query = await embed(['hello world'], { task: 'retrieval/query' });
      // The prompt's own pieces: the prompt embedded alone, less [CLS] and [SEP].
      const promptTokens = (await embed([prompt!.trim()])).inputTokens - 2;
      expect(promptTokens).toBeGreaterThan(0);
      expect(query.inputTokens).toBe(plain.inputTokens + promptTokens);
      expect(cosine(plain.vectors[0]!, query.vectors[0]!)).toBeLessThan(0.99999);
    });

    it('drop_end truncates to max_input_tokens and keeps the final [SEP]', async () => {
      const max = embedder.settings.max_input_tokens;
      const truncated = await embed([long]);
      expect(truncated.inputTokens).toBe(max);
      // Same as a text whose tokens are exactly the first max-2 pieces: [CLS] + pieces + [SEP].
      const prefix = long.split(' ').slice(0, 200).join(' ');
      const words: string[] = [];
      for (const w of prefix.split(' ')) {
        words.push(w);
        if ((await embed([words.join(' ')])).inputTokens >= max) break;
      }
      // overflow_strategy null proves the reference text needs no truncation at all.
      const exact = await embed([words.join(' ')], { overflowStrategy: null });
      expect(exact.inputTokens).toBe(max);
      expect(cosine(truncated.vectors[0]!, exact.vectors[0]!)).toBeGreaterThan(0.99999);
    });

    it('answers over-length input under overflow_strategy null with the index and counts', async () => {
      const r = await embedder.embed(input(['ok', long], { overflowStrategy: null }));
      expect(r.ok).toBe(false);
      if (!r.ok) {
        expect(r.problem.code).toBe('inputTooLarge');
        expect(r.problem.detail).toMatch(new RegExp(`^texts\\[1\\] is \\d+ tokens long, over the model's maximum of ${embedder.settings.max_input_tokens} input tokens`));
      }
    });

    it('dimensions keeps the first components, renormalised', async () => {
      const d = Math.max(1, Math.floor(embedder.settings.dimensions.default / 2));
      const [full] = (await embed(['Limitation period'])).vectors;
      const [cut] = (await embed(['Limitation period'], { dimensions: d })).vectors;
      expect(cut).toHaveLength(d);
      expect(norm(cut!)).toBeCloseTo(1, 5);
      const n = norm(full!.slice(0, d));
      for (let i = 0; i < d; i++) expect(cut![i]).toBeCloseTo(full![i]! / n, 5);
    });
  });
}
