// What the WebGPU tests share: texts (short, a phrase, a sentence, one past 512 tokens) and the
// vector comparison against the CPU path.
import { expect } from 'vitest';
import type { EmbedInput, Embedder } from '../../src/embedder/types.ts';

export const GPU_TEXTS = [
  'The lessee shall pay the rent on the first day of each month.',
  'Limitation period',
  'Every person who contravenes section 12 is guilty of an offence punishable on summary conviction.',
  Array.from({ length: 300 }, (_, i) => `subsection${i % 11}`).join(' '),
];

/** The cosine of two unit vectors. */
export const cosine = (a: ArrayLike<number>, b: ArrayLike<number>) => Array.from(a).reduce((s, x, i) => s + x * b[i]!, 0);

/** Embeds `input` with both, checks every vector of `actual`'s is within cosine `min` of `expected`'s, and returns both results. */
export async function expectSameEmbeddings(expected: Embedder, actual: Embedder, input: EmbedInput, min: number) {
  const [a, b] = [await expected.embed(input), await actual.embed(input)];
  if (!a.ok || !b.ok) throw new Error('embed failed');
  expectSameVectors(a.value.vectors, b.value.vectors, min);
  return [a.value, b.value] as const;
}

/** Every vector of `actual` is within cosine `min` of the same row of `expected`. */
export function expectSameVectors(expected: readonly ArrayLike<number>[], actual: readonly ArrayLike<number>[], min: number): void {
  expect(actual).toHaveLength(expected.length);
  expected.forEach((v, i) => expect(cosine(v, actual[i]!), `row ${i}`).toBeGreaterThanOrEqual(min));
}
