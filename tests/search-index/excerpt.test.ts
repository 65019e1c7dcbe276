// The pure parts of search: the excerpt shows the clause that matched (not a passage's first
// characters), file globs become the SQL filter's regular expression, and score fusion is
// Qdrant's DBSF as model/evaluate/dev.py measured it.
import { describe, expect, it } from 'vitest';
import { excerptOf, stemOf } from '../../src/search-index/excerpt.ts';
import { fuseByDistribution, globToRegex, selectiveTerms } from '../../src/search-index/search.ts';

// A passage shaped like the one a new user met: the answer starts past character 600.
const PASSAGE = [
  'shall indemnify the Licensor against all losses arising from any claim brought by a third party.',
  'The Licensee shall give the Licensor written notice of any such claim within ten business days of receiving it, with full particulars of the claim, the amount sought and the documents served, and shall not settle any claim without the prior written consent of the Licensor, which shall not be unreasonably withheld.',
  '5.1 Term. This Agreement begins on the Effective Date and continues for three years unless ended earlier under this Section 5.',
  '5.2 Termination. The licensee may terminate this Agreement for convenience on ninety days written notice to the Licensor.',
  '5.3 Effect of Termination. On termination all licences granted end and the Licensee shall return all Confidential Information.',
  '6.7 GOVERNING LAW. This Agreement is governed by the laws of the State of Delaware.',
].join(' ');

describe('excerptOf', () => {
  it('starts at the clause that answers, with its heading, however deep in the passage it is', () => {
    expect(PASSAGE.indexOf('5.2 Termination')).toBeGreaterThan(400);
    const excerpt = excerptOf(PASSAGE, 'Can either party terminate for convenience?');
    expect(excerpt.startsWith('… 5.2 Termination. The licensee may terminate this Agreement for convenience')).toBe(true);
    expect(excerpt.length).toBeLessThanOrEqual(330);
    expect(excerptOf(PASSAGE, 'governing law')).toBe('… 6.7 GOVERNING LAW. This Agreement is governed by the laws of the State of Delaware.');
  });

  it('marks what it leaves out and keeps a passage that fits whole', () => {
    expect(excerptOf(PASSAGE, 'notice of a claim', 120)).toMatch(/^… The Licensee shall give the Licensor written notice of any such claim .* …$/);
    expect(excerptOf('Rent is due monthly.', 'rent')).toBe('Rent is due monthly.');
    expect(excerptOf('Rent is due monthly. Fees are due yearly.', 'nothing matches')).toBe('Rent is due monthly. Fees are due yearly.');
  });

  it('keeps a numbered heading whole ("7. WARRANTY.", not "… WARRANTY.")', () => {
    const text = 'SUPPLY AGREEMENT between Acme Ltd and Birch Inc. 1. GENERAL. The parties agree. 7. WARRANTY. The Supplier warrants the goods for twelve months.';
    expect(excerptOf(text, 'How long is the warranty on the goods?')).toBe('… 7. WARRANTY. The Supplier warrants the goods for twelve months.');
  });

  it('matches inflections of a word', () => {
    expect(stemOf('termination')).toBe(stemOf('terminate'));
    expect(stemOf('Governing')).toBe(stemOf('governed'));
  });
});

describe('globToRegex', () => {
  const matches = (glob: string, path: string) => new RegExp(globToRegex(glob)).test(path);
  it('treats * as any characters within a folder, ** as any folders, and escapes the rest', () => {
    expect(matches('*.pdf', 'acme.pdf')).toBe(true);
    expect(matches('*.pdf', 'leases/acme.pdf')).toBe(false);
    expect(matches('leases/**', 'leases/2024/acme.pdf')).toBe(true);
    expect(matches('**/acme*.pdf', 'acme-supply.pdf')).toBe(true);
    expect(matches('**/acme*.pdf', 'a/b/acme-supply.pdf')).toBe(true);
    expect(matches('a+b (1).pdf', 'a+b (1).pdf')).toBe(true);
    expect(matches('a?.txt', 'ab.txt')).toBe(true);
    expect(matches('a?.txt', 'a/.txt')).toBe(false);
  });
});

describe('fuseByDistribution', () => {
  it("rescales each list by its mean ± 3 standard deviations and sums; a passage outside a list gets nothing from it", () => {
    const dense = [{ id: 'a', score: 0.9 }, { id: 'b', score: 0.5 }, { id: 'c', score: 0.1 }];
    const sparse = [{ id: 'c', score: 30 }, { id: 'd', score: 10 }];
    const fused = fuseByDistribution([dense, sparse]);
    const sd = Math.sqrt(((0.9 - 0.5) ** 2 + 0 + (0.1 - 0.5) ** 2) / 3);
    const densePart = (x: number) => (x - (0.5 - 3 * sd)) / (6 * sd);
    const sparsePart = (x: number) => (x - (20 - 3 * 10)) / (6 * 10);
    expect(Object.fromEntries(fused.map((f) => [f.id, f.score]))).toEqual({
      a: expect.closeTo(densePart(0.9), 12),
      b: expect.closeTo(densePart(0.5), 12),
      c: expect.closeTo(densePart(0.1) + sparsePart(30), 12),
      d: expect.closeTo(sparsePart(10), 12),
    });
    expect(fused.map((f) => f.id)).toEqual(['c', 'a', 'b', 'd']);
  });
});

describe('selectiveTerms', () => {
  const query = { indices: [1, 2, 3, 4, 5, 6], values: [1, 1, 1, 1, 1, 1] };
  const counts = (passages: number, df: Record<number, number>) => ({ passages, df: new Map(Object.entries(df).map(([t, n]) => [Number(t), n])) });

  it('keeps the terms the index holds, rarest first, up to 1/20 of the passages; the finders within 8,000 passages of candidates', () => {
    // 200,000 passages: the cap is 10,000; 6 is held by none.
    const { selective, finders } = selectiveTerms(query, counts(200_000, { 1: 9_000, 2: 40, 3: 8_000, 4: 10_001, 5: 7_000 }));
    expect(selective).toEqual([2, 5, 3, 1]);
    expect(finders).toEqual([2, 5]);
  });

  it('the rarest term always, however common; none where the index holds none of them', () => {
    expect(selectiveTerms(query, counts(1_000, { 3: 900, 4: 950 }))).toEqual({ selective: [3], finders: [3] });
    expect(selectiveTerms(query, counts(1_000, {}))).toEqual({ selective: [], finders: [] });
  });
});
