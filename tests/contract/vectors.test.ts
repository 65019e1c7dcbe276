import { describe, expect, it } from 'vitest';
import { truncateAndNormalize, truncateToMaxTokens } from '../../src/contract/index.ts';

describe('truncateToMaxTokens (drop_end)', () => {
  it('keeps short sequences whole', () => {
    expect(truncateToMaxTokens([101, 5, 6, 102], 4)).toEqual([101, 5, 6, 102]);
  });
  it('drops from the end but keeps the final special token', () => {
    expect(truncateToMaxTokens([101, 1, 2, 3, 4, 102], 4)).toEqual([101, 1, 2, 102]);
  });
});

describe('truncateAndNormalize', () => {
  it('keeps the first d components at unit norm', () => {
    expect(Array.from(truncateAndNormalize([3, 4, 12], 2))).toEqual([0.6, 0.8].map((x) => Math.fround(x)));
  });
  it('leaves a zero vector zero', () => {
    expect(Array.from(truncateAndNormalize([0, 0, 1], 2))).toEqual([0, 0]);
  });
});
