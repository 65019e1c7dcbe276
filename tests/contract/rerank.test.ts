// The reranking contract (validation, chunking defaults, ordering) and its pure scoring
// functions, on hand-checkable examples.
import { describe, expect, it } from 'vitest';
import { MAX_RERANK_TEXTS, rankResults, validateRerankRequest, type RerankCapabilities } from '../../src/contract/index.ts';
import { chunkTexts } from '../../src/embedder/rerank-run.ts';
import { bm25Normalized, chunkScore, combineChunkScores, scoreTexts, terms } from '../../src/embedder/rerank-score.ts';

const caps: RerankCapabilities = { rerankModelName: 'legal-2-reranker', maxChunkTokens: 510, maxQueryTokens: 512 };
const base = { model: 'legal-2-reranker', query: 'Notice to quit', texts: ['The landlord shall give notice.', 'Severability'] };
const detail = (body: unknown) => {
  const r = validateRerankRequest(body, caps);
  return r.ok ? 'ok' : `${r.problem.code}: ${r.problem.detail}`;
};

describe('validateRerankRequest', () => {
  it('accepts the minimal request and fills the defaults', () => {
    const r = validateRerankRequest(base, caps);
    expect(r.ok && r.value).toMatchObject({ top_n: null, is_iql: false, scoring_method: 'auto', chunking_options: null, chunking: { size: 510, overlap: 127 } });
  });

  it('accepts the request shape the official SDK sends (every field, chunking options included)', () => {
    const sdk = { ...base, top_n: 1, is_iql: false, scoring_method: 'chunk_avg', chunking_options: { size: 512, overlap_ratio: 0.1, overlap_tokens: null } };
    const r = validateRerankRequest(sdk, caps);
    // 512 is more than the model reads beside its special tokens: capped to 510, overlap from the ratio.
    expect(r.ok && r.value.chunking).toEqual({ size: 510, overlap: 51 });
  });

  it.each([
    [{ ...base, model: 'legal-2-embedder' }, 'validation: model must be "legal-2-reranker"'],
    [{ ...base, query: undefined }, 'validation: query is required'],
    [{ ...base, query: ' \n\u0085' }, 'validation: query must contain at least one non-whitespace character'],
    [{ ...base, texts: [] }, 'validation: texts must hold at least 1 text'],
    [{ ...base, texts: 'one string' }, `validation: texts must be an array of 1 to ${MAX_RERANK_TEXTS} strings`],
    [{ ...base, texts: ['fine', '  '] }, 'validation: texts[1] must contain at least one non-whitespace character'],
    [{ ...base, texts: Array(MAX_RERANK_TEXTS + 1).fill('x') }, `validation: texts must hold at most ${MAX_RERANK_TEXTS} texts`],
    [{ ...base, top_n: 0 }, 'validation: top_n must be an integer of at least 1, or null'],
    [{ ...base, top_n: 1.5 }, 'validation: top_n must be an integer of at least 1, or null'],
    [{ ...base, is_iql: true }, 'validation: is_iql must be false or absent: this deployment does not serve IQL (query language) queries'],
    [{ ...base, scoring_method: 'max' }, 'validation: scoring_method must be one of "auto", "chunk_max", "chunk_avg", "chunk_min"'],
    [{ ...base, chunking_options: { size: 0 } }, 'validation: chunking_options.size must be an integer of at least 1 (tokens), or null'],
    [{ ...base, chunking_options: { overlap_ratio: 1 } }, 'validation: chunking_options.overlap_ratio must be a number from 0 up to (not including) 1, or null'],
    [{ ...base, chunking_options: { overlap_tokens: -1 } }, 'validation: chunking_options.overlap_tokens must be an integer of at least 0 (tokens), or null'],
    [{ ...base, chunking_options: { size: 8, overlap_tokens: 8 } }, 'validation: chunking_options.overlap_tokens must be an integer from 0 to 7 tokens (less than the chunk size 8, or each chunk would repeat the last), got 8'],
    [{ ...base, chunking_options: { width: 8 } }, 'validation: chunking_options has unknown field "width"; allowed fields are size, overlap_ratio, overlap_tokens'],
    [{ ...base, documents: [] }, 'validation: the request has unknown field "documents"; allowed fields are model, query, texts, top_n, is_iql, scoring_method, chunking_options'],
    [[base], 'validation: the request body must be a JSON object'],
  ].map(([body, expected]) => [expected, body] as const))('%s', (expected, body) => {
    expect(detail(body)).toBe(expected);
  });

  it('overlap_tokens takes the place of overlap_ratio; null options are the defaults', () => {
    const r = validateRerankRequest({ ...base, chunking_options: { size: 100, overlap_ratio: 0.5, overlap_tokens: 10 } }, caps);
    expect(r.ok && r.value.chunking).toEqual({ size: 100, overlap: 10 });
    const d = validateRerankRequest({ ...base, chunking_options: { size: null, overlap_ratio: null, overlap_tokens: null } }, caps);
    expect(d.ok && d.value.chunking).toEqual({ size: 510, overlap: 127 });
  });
});

describe('rankResults', () => {
  it('orders by score, highest first, equal scores in input order, and keeps the top n', () => {
    expect(rankResults([0.2, 0.9, 0.2, 0.5], null)).toEqual([{ index: 1, score: 0.9 }, { index: 3, score: 0.5 }, { index: 0, score: 0.2 }, { index: 2, score: 0.2 }]);
    expect(rankResults([0.2, 0.9, 0.2, 0.5], 2).map((r) => r.index)).toEqual([1, 3]);
    expect(rankResults([0.1], 5)).toEqual([{ index: 0, score: 0.1 }]);
  });
});

describe('scoring', () => {
  it('chunks whole words with overlap (chunk.ts, as lexembed embed --chunk-tokens), frames them as the model reads a document, and names a text with nothing readable or where a cap was passed', async () => {
    // A toy tokenizer: [CLS]=101, one id per word (its length), [SEP]=102.
    const tokenizer = { encode: (t: string) => [101, ...t.split(/\s+/).filter(Boolean).map((w) => w.length), 102], decode: (ids: readonly number[]) => ids.join(' ') };
    const chunked = await chunkTexts(tokenizer, ['a bb ccc dddd', 'ee'], { size: 3, overlap: 1 }, '');
    expect(chunked).toEqual({ sequences: [[101, 1, 2, 3, 102], [101, 3, 4, 102], [101, 2, 102]], chunkTexts: [['1 2 3', '3 4'], ['2']] });
    expect(await chunkTexts(tokenizer, ['fine', '   '], { size: 3, overlap: 0 }, '')).toEqual({ unreadable: 1 });
    expect(await chunkTexts(tokenizer, ['a bb ccc dddd', 'ee', 'f'], { size: 3, overlap: 1 }, '', { maxChunks: 2 })).toEqual({ tooMany: { texts: 2, chunks: 3 } });
  });

  it('BM25 over the request: IDF from its documents, divided by the query ceiling', () => {
    // Two one-word documents, query "rent": df 1 of n 2, idf = ln(1 + 1.5/1.5) = ln 2; the
    // document's length equals the average, so its BM25 is idf·1·(k1+1)/(1+k1) = ln 2, and the
    // query's ceiling is idf·(k1+1) = 1.9·ln 2: a share of 1/1.9.
    const [a, b] = bm25Normalized(['rent'], [['rent'], ['lease']]);
    expect(a).toBeCloseTo(1 / 1.9, 12);
    expect(b).toBe(0);
    expect(bm25Normalized(['absent'], [['rent']])).toEqual([0]);
    expect(terms('Notice to QUIT, s. 12(b)')).toEqual(['notice', 'to', 'quit', 's', '12', 'b']);
  });

  it('combines chunk scores per method, and the calibrated score is monotonic in both signals', () => {
    expect(combineChunkScores('auto', [0.2, 0.8, 0.5])).toBe(0.8);
    expect(combineChunkScores('chunk_max', [0.2, 0.8, 0.5])).toBe(0.8);
    expect(combineChunkScores('chunk_min', [0.2, 0.8, 0.5])).toBe(0.2);
    expect(combineChunkScores('chunk_avg', [0.2, 0.8, 0.5])).toBeCloseTo(0.5, 12);
    const w = { intercept: -5, cosine: 10, lexical: 2 };
    expect(chunkScore(w, 0.5, 0)).toBeCloseTo(0.5, 12);
    expect(chunkScore(w, 0.6, 0)).toBeGreaterThan(chunkScore(w, 0.5, 0));
    expect(chunkScore(w, 0.5, 0.5)).toBeGreaterThan(chunkScore(w, 0.5, 0));
  });

  it('scores texts from their chunks: each method on a two-chunk text beside a one-chunk text', () => {
    const w = { intercept: 0, cosine: 1, lexical: 0 };
    const s = (x: number) => 1 / (1 + Math.exp(-x));
    const chunks = [['alpha', 'beta'], ['gamma']];
    const sims = [[0.9, 0.1], [0.5]];
    expect(scoreTexts(w, 'chunk_max', 'q', chunks, sims)).toEqual([s(0.9), s(0.5)]);
    expect(scoreTexts(w, 'chunk_min', 'q', chunks, sims)).toEqual([s(0.1), s(0.5)]);
    expect(scoreTexts(w, 'chunk_avg', 'q', chunks, sims)[0]).toBeCloseTo((s(0.9) + s(0.1)) / 2, 12);
    // The lexical share counts: with equal similarity, the chunk holding the query's word wins.
    const lexical = scoreTexts({ intercept: 0, cosine: 1, lexical: 3 }, 'chunk_max', 'gamma', [['alpha'], ['gamma']], [[0.5], [0.5]]);
    expect(lexical[1]).toBeGreaterThan(lexical[0]!);
  });
});
