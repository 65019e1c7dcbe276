// Shared steps of the browser tests.
import { expect, type Page } from '@playwright/test';
import { mkdirSync } from 'node:fs';
import { SAMPLE_QUERY } from '../../web-demo/src/passages.ts';

const SCREENSHOTS = 'test-results/screenshots';
mkdirSync(SCREENSHOTS, { recursive: true });

/** Fails any request that leaves the app's origin: the demo must work offline. */
export async function offline(page: Page) {
  const external: string[] = [];
  await page.context().route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.hostname === '127.0.0.1' || url.protocol === 'data:' || url.protocol === 'blob:') return route.fallback();
    external.push(url.href);
    return route.abort();
  });
  return external;
}

export async function searchAndCheck(page: Page, name: string) {
  await expect(page.locator('body')).toHaveAttribute('data-ready', 'true', { timeout: 90_000 });
  await page.fill('#query', SAMPLE_QUERY.text);
  await page.click('#search-button');
  // On the software WebGPU adapter a query takes seconds (~85× WASM): the default 5 s was tight.
  await expect(page.locator('body')).toHaveAttribute('data-searched', '1', { timeout: 60_000 });
  const results = page.locator('[data-testid=result]');
  await expect(results).toHaveCount(10);
  await expect(results.first()).toHaveAttribute('data-id', SAMPLE_QUERY.expected);
  await expect(page.locator('[data-testid=heatmap] td')).toHaveCount(11 * 10);
  await expect(page.locator('#timings')).toContainText('query embedded in');
  await page.screenshot({ path: `${SCREENSHOTS}/${name}.png`, fullPage: true });
}


/** Sends a request through the page's client (in the model worker). */
export function create(page: Page, params: unknown): Promise<any> {
  return page.evaluate((p) => (window as any).lexembed.create(p), params);
}

/** Sends a reranking request through the page's client (in the model worker). */
export function rerank(page: Page, params: unknown): Promise<any> {
  return page.evaluate((p) => (window as any).lexembed.rerank(p), params);
}
