// Pooling on the GPU (src/node/runtime/device-pooling.ts) for real on lavapipe: the native WebGPU
// path keeps last_hidden_state in GPU memory and pools it with a second session; its vectors must
// be the CPU path's for mean and cls pooling, and its graphs the ones model/runtime/pooling_graphs.py makes.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { EmbedInput } from '../../../src/embedder/types.ts';
import { POOLING_GRAPHS } from '../../../src/node/runtime/device-pooling.ts';
import { loadModelFolder, TEST_MODEL_DIR } from '../../../src/node/runtime/load-model.ts';
import { pythonWithOnnx } from '../../support/python.ts';
import { expectSameEmbeddings, expectSameVectors } from '../gpu-fixtures.ts';

const work = mkdtempSync(join(tmpdir(), 'lexembed-pooling-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const input = (texts: string[]): EmbedInput => ({ texts, task: 'retrieval/query', overflowStrategy: 'drop_end', dimensions: null });
const TEXTS = ['The lessee shall pay the rent on the first day of each month.', 'Limitation period', 'x '.repeat(700), 'Every person who contravenes section 12 is guilty of an offence.'];

it('the pooling graphs are the ones model/runtime/pooling_graphs.py makes', () => {
  const made = JSON.parse(execFileSync(pythonWithOnnx(), ['-m', 'model.runtime.pooling_graphs']).toString());
  expect(made).toEqual(POOLING_GRAPHS);
});

describe.each(['mean', 'cls'] as const)('%s pooling on the GPU', (pooling) => {
  it("gives the CPU path's vectors (pooled in JavaScript) for a mixed-length batch, and says where it pooled", async () => {
    const dir = join(work, `tiny-${pooling}`);
    cpSync(TEST_MODEL_DIR, dir, { recursive: true });
    const settings = JSON.parse(readFileSync(join(dir, 'lexembed.json'), 'utf8'));
    writeFileSync(join(dir, 'lexembed.json'), JSON.stringify({ ...settings, pooling }));
    const [cpu, gpu] = await Promise.all([loadModelFolder(dir, { device: 'cpu' }), loadModelFolder(dir, { device: 'webgpu' })]);
    try {
      expect(gpu.runtime.deviceReason).toContain(`; ${pooling} pooling on the GPU`);
      expect(cpu.runtime.deviceReason ?? '').not.toContain('pooling on the GPU');
      const [, b] = await expectSameEmbeddings(cpu, gpu, input(TEXTS), 0.9999);
      // A text alone gives the vector it gets inside the mixed batch (padding masked on the GPU too).
      const alone = await gpu.embed(input([TEXTS[1]!]));
      if (!alone.ok) throw new Error('embed failed');
      expectSameVectors([b.vectors[1]!], alone.value.vectors, 0.9999);
    } finally {
      await Promise.all([cpu.dispose(), gpu.dispose()]);
    }
  }, 120_000);
});

it('LEXEMBED_GPU_POOLING=js reads the hidden state back and pools in JavaScript, with the same vectors', async () => {
  const onGpu = await loadModelFolder(TEST_MODEL_DIR, { device: 'webgpu' });
  process.env.LEXEMBED_GPU_POOLING = 'js';
  const inJs = await loadModelFolder(TEST_MODEL_DIR, { device: 'webgpu' }).finally(() => delete process.env.LEXEMBED_GPU_POOLING);
  try {
    expect(onGpu.runtime.deviceReason).toContain('; mean pooling on the GPU');
    expect(inJs.runtime.deviceReason).toContain('; pooling in JavaScript (LEXEMBED_GPU_POOLING=js)');
    await expectSameEmbeddings(onGpu, inJs, input(TEXTS), 0.9999);
  } finally {
    await Promise.all([onGpu.dispose(), inJs.dispose()]);
  }
}, 120_000);
