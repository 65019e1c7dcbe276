// The graph files a model folder offers beside onnx/model.onnx, read once into the facts the
// inference plan decides the precision from (inference-plan.ts), on whichever thread plans.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ModelSettings } from '../../embedder/settings.ts';
import type { InferenceFacts } from './inference-plan.ts';
import { FP16_MODEL_FILE, FUSED_MODEL_FILE, Q8_MODEL_FILE } from './webgpu/decide.ts';

export { graphFileOf } from '../../embedder/fingerprint.ts';

/** What `folder` (with its parsed lexembed.json) offers the plan. */
export function modelFacts(folder: string, settings: Pick<ModelSettings, 'dtype' | 'pooling' | 'quantized' | 'fused'>): InferenceFacts['model'] {
  // model.onnx (50 MB for the hybrid) is hashed at most once, and only where a record needs it.
  let sha256: string | undefined;
  const modelSha256 = () => (sha256 ??= createHash('sha256').update(readFileSync(join(folder, 'onnx', 'model.onnx'))).digest('hex'));
  return {
    dtype: settings.dtype,
    pooling: settings.pooling,
    hasFp16File: existsSync(join(folder, FP16_MODEL_FILE)),
    quantized: siblingFacts(folder, Q8_MODEL_FILE, 'quantized', settings.quantized, modelSha256),
    fused: siblingFacts(folder, FUSED_MODEL_FILE, 'fused', settings.fused, modelSha256),
    folder,
  };
}

/** A graph made from onnx/model.onnx (int8, fused): there or not, and stale where its record names another float32 graph than the folder's. */
function siblingFacts<R extends { source_sha256?: string } | undefined>(
  folder: string,
  file: string,
  section: string,
  record: R,
  modelSha256: () => string,
): { hasFile: boolean; record: R; stale?: string } {
  const hasFile = existsSync(join(folder, file));
  if (!hasFile || !record?.source_sha256) return { hasFile, record };
  const now = modelSha256();
  return now === record.source_sha256
    ? { hasFile, record }
    : { hasFile, record, stale: `${file} was made from another onnx/model.onnx (lexembed.json "${section}" names sha256 ${record.source_sha256.slice(0, 12)}…, the folder's is ${now.slice(0, 12)}…): the folder was rebuilt since` };
}
