// The demo's WebGPU path in Chromium with --enable-unsafe-webgpu (a software adapter: this
// proves the code path, not the speed).
import { expect, test } from '@playwright/test';
import { create, offline, searchAndCheck } from './helpers.ts';
import { cosine, nodeVectors, PARITY_TEXTS } from './parity.ts';

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
