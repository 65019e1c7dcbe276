// Token-exact chunking and token offsets with the bundled model's own tokenizer: offsets round-trip
// (the slice between start and end tokenises to exactly the chunk's tokens) on Unicode-heavy legal
// text and on a 50,000-character document; chunks keep to the size, overlap and preferred breaks.
import { basename, dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chunkText, tokenOffsets, wordTokenCounter } from '../../src/embedder/chunk.ts';
import { BUNDLED_MODEL_DIR, loadModelFolder } from '../../src/node/runtime/load-model.ts';
import type { Embedder, EmbeddingBackend } from '../../src/embedder/types.ts';
import { createEmbedder } from '../../src/embedder/embedder.ts';
import { encodeInSlices, textSlices } from '../../src/embedder/slices.ts';

let embedder: Embedder;
let encode: (text: string) => number[];
let pieces: (text: string) => string[];
beforeAll(async () => {
  embedder = await loadModelFolder(BUNDLED_MODEL_DIR, { inference: 'main' });
  // The same tokenizer file, loaded as transformers.js loads it for the embedder.
  const { AutoTokenizer, env } = await import('@huggingface/transformers');
  env.allowRemoteModels = false;
  env.localModelPath = `${dirname(BUNDLED_MODEL_DIR)}/`;
  const tokenizer = await AutoTokenizer.from_pretrained(basename(BUNDLED_MODEL_DIR));
  encode = (text) => tokenizer.encode(text);
  pieces = (text) => tokenizer.tokenize(text);
}, 60_000);
afterAll(() => embedder?.dispose());

/** Content tokens of a text as the model reads it ([CLS] and [SEP] not counted). */
const tokensOf = (text: string) => encode(text).length - 2;

const UNICODE_LEGAL = [
  '§ 12(b)(3) — The “Lessee” shall pay €1,200.50 per month; naïve café façade, Zürich. ',
  '中华人民共和国合同法第五十二条规定：有下列情形之一的，合同无效。',
  'Art. 5 DSGVO: Überweisung – ½ Zahlung… l’État membre veille à ce que «la personne concernée» soit informée.\n',
  '(a) the data subject\u200B is informed; (b) soft\u00ADhyphen,\ttabs\u00A0and nbsp; Ελληνικά, русский, العربية.\n\n',
  'Emoji 👩‍⚖️ and 𝕏 ℌ letters; ‘quotes’ "straight" — a 150-character identifier ' + 'x'.repeat(150) + ' ends here.\n',
].join('');

function expectExact(text: string, chunks: ReturnType<typeof chunkText>, size: number) {
  for (const c of chunks) {
    expect(c.text).toBe(text.slice(c.start, c.end));
    expect(c.tokens, JSON.stringify(c.text.slice(0, 60))).toBe(tokensOf(c.text));
    expect(c.tokens).toBeLessThanOrEqual(size);
    expect(c.text.trim()).toBe(c.text); // cut between words, never inside the white space
  }
}

describe('chunkText with the model tokenizer', () => {
  it('the per-word counts add up to the whole text\'s tokens (words split where BERT splits them)', () => {
    const count = wordTokenCounter(encode);
    const whole = chunkText(UNICODE_LEGAL, { size: 10_000 }, count);
    expect(whole).toHaveLength(1);
    expect(whole[0]!.tokens).toBe(tokensOf(UNICODE_LEGAL));
  });

  it('offsets round-trip on Unicode-heavy legal text, at every size and overlap', () => {
    const count = wordTokenCounter(encode);
    for (const size of [3, 8, 17, 64, 200]) {
      for (const overlap of [0, Math.floor(size / 4), size - 1]) {
        const chunks = chunkText(UNICODE_LEGAL, { size, overlap }, count);
        expectExact(UNICODE_LEGAL, chunks, size);
        // In order, moving on, covering the text's first and last words, overlapping at most `overlap` tokens.
        expect(chunks[0]!.start).toBe(0);
        expect(chunks.at(-1)!.end).toBe(UNICODE_LEGAL.trimEnd().length);
        for (let i = 1; i < chunks.length; i++) {
          expect(chunks[i]!.start).toBeGreaterThan(chunks[i - 1]!.start);
          expect(chunks[i]!.start).toBeLessThanOrEqual(chunks[i - 1]!.end + 3); // no gap beyond the separating space(s)
          if (chunks[i]!.start < chunks[i - 1]!.end) expect(tokensOf(UNICODE_LEGAL.slice(chunks[i]!.start, chunks[i - 1]!.end))).toBeLessThanOrEqual(overlap);
        }
      }
    }
  });

  it('a 50,000-character contract: exact offsets, line ends preferred in the last tenth, and fast', () => {
    const clauses = Array.from({ length: 470 }, (_, i) => `${i + 1}. The Lessee shall indemnify the Lessor against all claims, “losses” and charges under § ${i}; naïve café.`);
    const contract = clauses.join('\n');
    expect(contract.length).toBeGreaterThanOrEqual(50_000);
    const started = performance.now();
    const chunks = chunkText(contract, { size: 509, overlap: 50 }, wordTokenCounter(encode));
    const ms = performance.now() - started;
    expectExact(contract, chunks, 509);
    expect(chunks.length).toBeGreaterThan(20);
    // Every chunk but the last ends at the end of a clause (a line end), since one lies in each window's last tenth.
    for (const c of chunks.slice(0, -1)) expect(contract[c.end] === '\n', JSON.stringify(c.text.slice(-40))).toBe(true);
    expect(ms).toBeLessThan(30_000); // generous: the point is it is not quadratic
  });

  it('validates its options', () => {
    expect(() => chunkText('a b', { size: 0 }, () => 1)).toThrow(/size must be an integer of at least 1/);
    expect(() => chunkText('a b', { size: 4, overlap: 4 }, () => 1)).toThrow(/overlap must be an integer from 0 to size - 1 \(3\)/);
    expect(chunkText('', { size: 4 }, () => 1)).toEqual([]);
    expect(chunkText(' \n ', { size: 4 }, () => 1)).toEqual([]);
  });
});

describe('the embedder', () => {
  it('chunkText defaults to what one document embedding reads, and says what is wrong with a bad size', () => {
    expect(embedder.maxChunkTokens).toBe(512 - tokensOf(embedder.settings.prompts['retrieval/document'] ?? '') - 2);
    const chunks = embedder.chunkText(UNICODE_LEGAL.repeat(20));
    if (!chunks.ok) throw new Error(chunks.problem.detail!);
    for (const c of chunks.value) expect(c.tokens).toBeLessThanOrEqual(embedder.maxChunkTokens);
    const bad = embedder.chunkText('x', { size: 10_000 });
    expect(bad.ok || bad.problem.detail).toMatch(new RegExp(`^the chunk size must be an integer from 1 to ${embedder.maxChunkTokens} tokens`));
    const overlap = embedder.chunkText('x', { size: 10, overlap: 10 });
    expect(overlap.ok || overlap.problem.detail).toMatch(/^the chunk overlap must be an integer from 0 to 9/);
  });

  it('a chunk embedded alone is what its offsets say: the same vector as embedding the slice', async () => {
    const chunks = embedder.chunkText(UNICODE_LEGAL, { size: 40 });
    if (!chunks.ok) throw new Error(chunks.problem.detail!);
    const embed = async (texts: string[]) => {
      const r = await embedder.embed({ texts, task: 'retrieval/document', overflowStrategy: null, dimensions: null });
      if (!r.ok) throw new Error(r.problem.detail!);
      return r.value.vectors;
    };
    const fromChunks = await embed(chunks.value.map((c) => c.text));
    const fromSlices = await embed(chunks.value.map((c) => UNICODE_LEGAL.slice(c.start, c.end)));
    fromChunks.forEach((v, i) => expect(Array.from(v)).toEqual(Array.from(fromSlices[i]!)));
  });

  it('tokenize: input tokens as embed counts them, and tokens with offsets that cover each word exactly', async () => {
    const text = 'Subleasing § 12(b): the naïve Lessee’s café.';
    const [plain] = await embedder.tokenize([text], { task: 'retrieval/query', offsets: false });
    const embedded = await embedder.embed({ texts: [text], task: 'retrieval/query', overflowStrategy: 'drop_end', dimensions: null });
    expect(embedded.ok && plain!.input_tokens).toBe(embedded.ok ? embedded.value.inputTokens : -1);
    const [withOffsets] = await embedder.tokenize([text], { task: null, offsets: true });
    const spans = withOffsets!.tokens!;
    expect(spans).toHaveLength(tokensOf(text));
    expect(spans.slice(0, 3)).toEqual([{ token: 'sub', start: 0, end: 3 }, { token: '##lea', start: 3, end: 6 }, { token: '##sing', start: 6, end: 10 }]);
    expect(spans.find((s) => s.token === '§')).toEqual({ token: '§', start: 11, end: 12 });
    // Each token's span is non-empty, in order, inside the text; word starts are exact.
    for (let i = 0; i < spans.length; i++) {
      expect(spans[i]!.end).toBeGreaterThan(spans[i]!.start);
      if (i) expect(spans[i]!.start).toBeGreaterThanOrEqual(spans[i - 1]!.end);
    }
    expect(text.slice(spans.find((s) => s.token.startsWith('na'))!.start, spans.find((s) => s.token === '.')!.start)).toMatch(/^naïve Lessee’s café$/);
  });
});

it('works over any backend: the fake one counts words', () => {
  const backend: EmbeddingBackend = { name: 'words', encode: (t) => [101, ...t.split(/\s+/).filter(Boolean).map(() => 1), 102], run: async () => [], dispose: async () => {} };
  const e = createEmbedder({ name: 'x', max_input_tokens: 6, dimensions: { default: 2, max: 2, matryoshka: [] }, prompts: {}, tasks: [], pooling: 'mean' } as never, backend);
  const chunks = e.chunkText('one two three four five six seven');
  expect(chunks.ok && chunks.value.map((c) => c.text)).toEqual(['one two three four', 'five six seven']);
});

describe('long texts, tokenised in slices (src/embedder/slices.ts)', () => {
  // ~130,000 characters: Unicode, tabs and newlines, a 20,000-character "word", no-break and zero-width spaces.
  const LONG = (UNICODE_LEGAL.repeat(60) + 'y'.repeat(20_000) + ' tail\u00A0end\u200B. ' + UNICODE_LEGAL.repeat(60)).replace(/ {2}/g, ' \t');

  it('cuts only at ASCII whitespace, covering the text', () => {
    const slices = textSlices(LONG);
    expect(slices.length).toBeGreaterThan(10);
    expect(slices[0]![0]).toBe(0);
    expect(slices.at(-1)![1]).toBe(LONG.length);
    for (let i = 1; i < slices.length; i++) {
      expect(slices[i]![0]).toBe(slices[i - 1]![1]);
      expect(LONG[slices[i]![0]]).toMatch(/[ \t\n\r]/);
    }
  });

  it('gives exactly the ids of one call, and with a limit a prefix closed by [SEP]', async () => {
    const whole = encode(LONG);
    expect(await encodeInSlices(encode, LONG, async () => {})).toEqual(whole);
    const prefix = await encodeInSlices(encode, LONG, async () => {}, 512);
    expect(prefix.length).toBeGreaterThan(512);
    expect(prefix.slice(0, -1)).toEqual(whole.slice(0, prefix.length - 1));
    expect(prefix.at(-1)).toBe(whole.at(-1));
  });

  it('tokenize counts and offsets a long text as in one piece; embed with drop_end reads it as its first 512 tokens', async () => {
    const [result] = await embedder.tokenize([LONG], { task: null, offsets: true });
    expect(result!.input_tokens).toBe(encode(LONG).length);
    expect(result!.tokens).toHaveLength(encode(LONG).length - 2);
    expect(result!.tokens).toEqual(tokenOffsets(LONG, pieces));
    const embed = async (text: string) => {
      const r = await embedder.embed({ texts: [text], task: null, overflowStrategy: 'drop_end', dimensions: null });
      if (!r.ok) throw new Error(r.problem.detail ?? r.problem.code);
      return r.value;
    };
    const [long, head] = [await embed(LONG), await embed(LONG.slice(0, 20_000))];
    expect(long.inputTokens).toBe(512);
    expect(long.truncatedTexts).toBe(1);
    expect(Array.from(long.vectors[0]!)).toEqual(Array.from(head.vectors[0]!));
  });
});

describe('chunk boundaries and punctuation', () => {
  const clause =
    'If the Tenant fails to pay the rent, the Landlord may give notice; the Tenant then has ten days. ' +
    'Notice to the party (the "Tenant") shall be in writing, signed, and delivered by hand, post, or e-mail: (a) ' +
    'any other notice is void. ';
  const text = clause.repeat(12);
  const oneTokenAWord = () => 1;

  it('no chunk opens with punctuation that closes on the word before it, with or without overlap, at many sizes', () => {
    for (const size of [5, 7, 9, 12, 16, 23, 40]) {
      for (const overlap of [0, 1, 2, 4]) {
        if (overlap >= size) continue;
        const chunks = chunkText(text, { size, overlap }, oneTokenAWord);
        // '(' opening a list item or a parenthesis may start a chunk; '.', ',', '"' or '-' glued to the word before may not
        const opening = chunks.filter((c) => /^\p{P}/u.test(c.text) && c.start > 0 && !/\s/u.test(text[c.start - 1]!)).map((c) => c.text.slice(0, 20));
        expect(opening, `size ${size}, overlap ${overlap}`).toEqual([]);
        chunks.forEach((c) => expect(text.slice(c.start, c.end)).toBe(c.text));
        expect(chunks.at(-1)!.end).toBe(text.trimEnd().length); // nothing lost at the end
      }
    }
  });
});
