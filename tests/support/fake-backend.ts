// A deterministic fake EmbeddingBackend beside the real-model tests: words → ids, vectors
// from a hash of the ids, so results are predictable and instant.
import type { EmbeddingBackend } from '../../src/embedder/types.ts';
import { parseModelSettings, type ModelSettings } from '../../src/embedder/settings.ts';

export const CLS = 101;
export const SEP = 102;

export function fakeSettings(overrides: Record<string, unknown> = {}): ModelSettings {
  return parseModelSettings(
    { max_input_tokens: 8, dimensions: { default: 6, max: 8 }, prompts: { 'retrieval/query': 'q ', 'retrieval/document': null }, ...overrides },
    'fake',
  );
}

export function createFakeBackend(width = 8): EmbeddingBackend & { calls: number[][][] } {
  const calls: number[][][] = [];
  return {
    name: 'fake',
    calls,
    encode: (text) => [CLS, ...text.split(/\s+/u).filter(Boolean).map((w) => 1000 + hash(w) % 5000), SEP],
    async run(batch) {
      calls.push(batch.map((s) => [...s]));
      return batch.map((seq) => Float32Array.from({ length: width }, (_, k) => Math.sin(seq.reduce((a, id, i) => a + id * (k + 1) * (i + 1), 0)) + 1.5));
    },
    async dispose() {},
  };
}

function hash(s: string): number {
  let h = 2166136261;
  for (const ch of s) h = Math.imul(h ^ ch.codePointAt(0)!, 16777619) >>> 0;
  return h;
}
