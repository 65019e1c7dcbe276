// Right-padding of token id sequences into the int64 inputs a BERT-style ONNX graph takes.
// Pure: used by the transformers.js backend and by the benchmark's raw onnxruntime path.

export interface PaddedBatch {
  /** [rows, width], width = the longest sequence. */
  readonly dims: [number, number];
  readonly inputIds: BigInt64Array;
  readonly attentionMask: BigInt64Array;
  /** All zeros (one segment). */
  readonly tokenTypeIds: BigInt64Array;
}

export function padBatch(batch: readonly (readonly number[])[]): PaddedBatch {
  const width = Math.max(...batch.map((s) => s.length));
  const inputIds = new BigInt64Array(batch.length * width);
  const attentionMask = new BigInt64Array(batch.length * width);
  batch.forEach((seq, row) => seq.forEach((id, col) => ((inputIds[row * width + col] = BigInt(id)), (attentionMask[row * width + col] = 1n))));
  return { dims: [batch.length, width], inputIds, attentionMask, tokenTypeIds: new BigInt64Array(batch.length * width) };
}
