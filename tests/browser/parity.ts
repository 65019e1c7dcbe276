// Vectors from the Node server's embedder for the browser parity checks.
import { loadModelFolder, BUNDLED_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { DEFAULT_OVERLAP_RATIO } from '../../src/contract/index.ts';

export const PARITY_TEXTS = [
  'The Lessee shall indemnify and hold harmless the Lessor from all claims.',
  'Notwithstanding subsection 12(3), the Minister may, by order, prescribe fees.',
  'Overtime compensation at one and one-half times the regular rate.',
  'A debt collector may not communicate with a consumer at any unusual time or place.',
];

export async function nodeVectors(texts: string[], dimensions: number | null = null): Promise<number[][]> {
  const embedder = await loadModelFolder(BUNDLED_MODEL_DIR, { inference: 'main' });
  try {
    const r = await embedder.embed({ texts, task: 'retrieval/document', overflowStrategy: 'drop_end', dimensions });
    if (!r.ok) throw new Error(r.problem.detail ?? '');
    return r.value.vectors.map((v) => Array.from(v));
  } finally {
    await embedder.dispose();
  }
}

export const cosine = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0) / Math.sqrt(a.reduce((s, x) => s + x * x, 0) * b.reduce((s, x) => s + x * x, 0));

/** Reranking scores from the Node server's embedder (default chunking), in input order. */
export async function nodeRerank(query: string, texts: string[]): Promise<{ scores: number[]; inputTokens: number }> {
  const embedder = await loadModelFolder(BUNDLED_MODEL_DIR, { inference: 'main' });
  try {
    const size = embedder.reranker!.maxChunkTokens;
    const r = await embedder.reranker!.rerank({ query, texts, chunking: { size, overlap: Math.floor(size * DEFAULT_OVERLAP_RATIO) }, method: 'auto' });
    if (!r.ok) throw new Error(r.problem.detail ?? '');
    return r.value;
  } finally {
    await embedder.dispose();
  }
}
