// fp16 on a GPU is checked once, at load, against the CPU path's fp32 on the same token ids. Dawn
// turns shader-f16 off on NVIDIA under Vulkan by default (crbug.com/42251215: conformance
// failures) and lexembed turns it on (dawnFlags in webgpu/detect.ts), as onnxruntime-node does for
// its own device; a driver whose fp16 arithmetic is wrong would otherwise serve wrong vectors
// without a word. load-model.ts falls back to fp32 under --dtype auto and stops under --dtype fp16.
import { truncateAndNormalize, truncateToMaxTokens } from '../../contract/index.ts';
import type { TransformersBackendOptions } from '../../backend/transformers-backend.ts';
import { dot } from '../../contract/vectors.ts';
import type { EmbeddingBackend } from '../../embedder/types.ts';

/** Lowest cosine between a probe's fp16 vector and its fp32 CPU vector that is accepted. */
export const FP16_MIN_COSINE = 0.999;

/** Legal texts of 4 to about 60 tokens, run as one padded batch, so the check also covers masking. */
const PROBES = [
  'Rent.',
  'The Lessee shall pay the rent monthly in advance on the first day of each month.',
  'Governing law: this Agreement is governed by the laws of England and Wales.',
  'Either party may terminate this Agreement on thirty (30) days written notice to the other party.',
  'What is the limitation period for a claim in contract?',
  'Article 6(1)(f) GDPR: processing is necessary for the purposes of the legitimate interests pursued by the controller or by a third party, except where such interests are overridden by the interests or fundamental rights and freedoms of the data subject.',
  'force majeure',
  'The Licensor grants the Licensee a non-exclusive, non-transferable licence to use the Software solely for its internal business purposes during the Term.',
];

export interface Fp16Check {
  readonly texts: number;
  readonly minCosine: number;
  readonly ok: boolean;
}

/**
 * Runs the probes through `gpu` (the fp16 session) and through a CPU session of the same folder in
 * fp32, loaded for this and disposed after, and compares the unit vectors.
 */
export async function checkFp16AgainstCpu(gpu: EmbeddingBackend, cpuOptions: TransformersBackendOptions): Promise<Fp16Check> {
  const { settings } = cpuOptions;
  const batch = PROBES.map((text) => truncateToMaxTokens(gpu.encode(text), settings.max_input_tokens));
  const { createTransformersBackend } = await import('../../backend/transformers-backend.ts'); // on the GPU path only
  const cpu = await createTransformersBackend({ ...cpuOptions, device: 'cpu', intraOpNumThreads: 1 });
  try {
    const [a, b] = [await gpu.run(batch), await cpu.run(batch)];
    const dims = settings.dimensions.max;
    // Math.min keeps a NaN (an fp16 overflow), which then fails the check too.
    const minCosine = Math.min(...a.map((v, i) => dot(truncateAndNormalize(v, dims), truncateAndNormalize(b[i]!, dims))));
    return { texts: batch.length, minCosine, ok: minCosine >= FP16_MIN_COSINE };
  } finally {
    await cpu.dispose();
  }
}

/** The device line's words for a check. */
export function describeFp16Check(check: Fp16Check): string {
  const cosine = check.minCosine.toFixed(6); // 'NaN' for NaN
  return check.ok
    ? `fp16 checked at load against the CPU path's fp32 on ${check.texts} texts: min cosine ${cosine}`
    : `fp16 vectors were off at load: min cosine ${cosine} against the CPU path's fp32 on ${check.texts} texts (below ${FP16_MIN_COSINE})`;
}
