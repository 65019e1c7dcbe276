// A document's context (its opening lines, which name it): a pure function of
// src/search-index/context.ts.
import { describe, expect, it } from 'vitest';
import { contextOf, CONTEXT_CHARACTERS } from '../../src/search-index/context.ts';

describe('contextOf', () => {
  it('is the first line: a contract\'s title', () => {
    expect(contextOf('AGREEMENT OF LEASE - RICKMAN CONSTRUCTION CO.\n\n1. TERM. The term of this lease is five years.')).toBe('AGREEMENT OF LEASE - RICKMAN CONSTRUCTION CO.');
  });

  it('takes the next line after a short one (an exhibit number), and collapses whitespace', () => {
    expect(contextOf('Exhibit 10.1\n\nSUPPLY AGREEMENT between  Acme Ltd and Birch Inc.\nThis Agreement is made on 1 May 2020.')).toBe('Exhibit 10.1 SUPPLY AGREEMENT between Acme Ltd and Birch Inc.');
  });

  it('cuts a long opening between words, within the limit', () => {
    const opening = `${'This Master Services Agreement is made between the parties named below '.repeat(8)}end`;
    const context = contextOf(opening);
    expect(context.length).toBeLessThanOrEqual(CONTEXT_CHARACTERS);
    expect(context.length).toBeGreaterThan(CONTEXT_CHARACTERS - 20);
    expect(opening.replace(/\s+/g, ' ').startsWith(`${context} `)).toBe(true);
  });
});
