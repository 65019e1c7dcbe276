// onnxruntime-node's own WebGPU execution provider (Dawn built into onnxruntime-node 1.30; no
// WASM, no `webgpu` package) on Mesa's lavapipe, as issue 25 asks to try before switching the
// --device webgpu path to it: the embedder conformance suite on it, and the bundled model's
// vectors against the CPU provider's. bench/native-webgpu.ts measures it beside today's path.
import { basename, dirname } from 'node:path';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createEmbedder } from '../../src/embedder/embedder.ts';
import { parseModelSettings, SETTINGS_FILE } from '../../src/embedder/settings.ts';
import type { Embedder } from '../../src/embedder/types.ts';
import { BUNDLED_MODEL_DIR, TEST_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { createTransformersBackend } from '../../src/backend/transformers-backend.ts';
import { describeEmbedderConformance } from '../embedder/conformance.ts';

async function nativeEmbedder(dir: string, device: 'cpu' | 'webgpu'): Promise<Embedder> {
  const settings = parseModelSettings(JSON.parse(readFileSync(join(dir, SETTINGS_FILE), 'utf8')), SETTINGS_FILE);
  const backend = await createTransformersBackend({ modelId: basename(dir), localModelPath: dirname(dir) + '/', settings, device });
  expect(backend.name).toBe(`transformers.js (${device})`);
  return createEmbedder(settings, backend);
}

describeEmbedderConformance('webgpu (onnxruntime-node native provider), test model', () => nativeEmbedder(TEST_MODEL_DIR, 'webgpu'), { exactRepeat: false });

let cpu: Embedder;
let gpu: Embedder;
beforeAll(async () => {
  [cpu, gpu] = await Promise.all([nativeEmbedder(BUNDLED_MODEL_DIR, 'cpu'), nativeEmbedder(BUNDLED_MODEL_DIR, 'webgpu')]);
}, 120_000);
afterAll(async () => Promise.all([cpu?.dispose(), gpu?.dispose()]));

it('the bundled model on the native WebGPU provider gives the CPU provider\'s vectors (cosine ≥ 0.999)', async () => {
  const texts = ['The lessee shall pay the rent on the first day of each month.', 'Limitation period', 'Every person who contravenes section 12 is guilty of an offence.'];
  const embed = async (e: Embedder) => {
    const r = await e.embed({ texts, task: 'retrieval/document', overflowStrategy: 'drop_end', dimensions: null });
    if (!r.ok) throw new Error(r.problem.detail ?? '');
    return r.value.vectors;
  };
  const [a, b] = [await embed(cpu), await embed(gpu)];
  a.forEach((v, i) => expect(v.reduce((s, x, k) => s + x * b[i]![k]!, 0)).toBeGreaterThanOrEqual(0.999));
}, 120_000);
