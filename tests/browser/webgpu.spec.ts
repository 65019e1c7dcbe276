// The demo's WebGPU path in Chromium with --enable-unsafe-webgpu (a software adapter: this
// proves the code path, not the speed).
import { expect, test } from '@playwright/test';
import { create, offline, searchAndCheck } from './helpers.ts';
import { cosine, nodeVectors, PARITY_TEXTS } from './parity.ts';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadModelFolder, PROJECT_ROOT } from '../../src/node/runtime/load-model.ts';

const TINY_BERT = join(PROJECT_ROOT, 'models', 'test-tiny-bert');

test('runs the WebGPU path on a software adapter and ranks the same passage first', async ({ page }) => {
  const external = await offline(page);
  await page.goto('/?device=webgpu');
  await searchAndCheck(page, 'webgpu');
  await expect(page.locator('body')).toHaveAttribute('data-backend', 'webgpu');
  await expect(page.locator('#status')).toContainText('webgpu was requested; adapter:');
  expect(external).toEqual([]);
  const local = await create(page, { model: 'legal-2-embedder', texts: PARITY_TEXTS.slice(0, 2), task: 'retrieval/document', dimensions: 128 });
  const expected = await nodeVectors(PARITY_TEXTS.slice(0, 2), 128);
  local.response.embeddings.forEach((e: { embedding: number[] }, i: number) => expect(cosine(e.embedding, expected[i]!)).toBeGreaterThanOrEqual(0.999));
});

test('runs a folder\'s fused graph on WebGPU (the tiny BERT served in place of the bundled model), with the exported graph\'s vectors', async ({ page }) => {
  const external = await offline(page);
  // The page asks for models/legal-2-embedder/…: answer with models/test-tiny-bert's files, which
  // include onnx/model_fused.onnx (model/runtime/fuse.py) and its "fused" record.
  const requested: string[] = [];
  await page.context().route('**/models/legal-2-embedder/**', async (route) => {
    const file = new URL(route.request().url()).pathname.split('/models/legal-2-embedder/')[1]!;
    requested.push(file);
    const path = join(TINY_BERT, file);
    if (!existsSync(path)) return route.fulfill({ status: 404, body: 'not found' });
    return route.fulfill({ status: 200, body: readFileSync(path), headers: { 'content-type': file.endsWith('.json') ? 'application/json' : 'application/octet-stream', 'cross-origin-resource-policy': 'same-origin' } });
  });
  await page.goto('/?device=webgpu');
  const body = page.locator('body');
  await expect(body).toHaveAttribute('data-ready', 'true', { timeout: 90_000 });
  await expect(body).toHaveAttribute('data-graph', 'fused');
  await expect(page.locator('#status')).toContainText("fused graph onnx/model_fused.onnx (auto: onnxruntime's fused kernels on WebGPU)");
  expect(requested).toContain('onnx/model_fused.onnx');
  expect(requested).not.toContain('onnx/model.onnx');
  const local = await create(page, { model: 'legal-2-embedder', texts: PARITY_TEXTS, task: 'retrieval/document' });
  expect(local.type).toBe('created');
  const cpu = await loadModelFolder(TINY_BERT, { inference: 'main', device: 'cpu' });
  try {
    const r = await cpu.embed({ texts: PARITY_TEXTS, task: 'retrieval/document', overflowStrategy: 'drop_end', dimensions: null });
    if (!r.ok) throw new Error(r.problem.detail ?? '');
    local.response.embeddings.forEach((e: { embedding: number[] }, i: number) => expect(cosine(e.embedding, Array.from(r.value.vectors[i]!))).toBeGreaterThanOrEqual(0.9999));
  } finally {
    await cpu.dispose();
  }
  expect(external).toEqual([]);
});
