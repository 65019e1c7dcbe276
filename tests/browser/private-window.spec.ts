// The built demo as a private (incognito) window loads it: a fresh browser context each time (an
// in-memory HTTP cache, as Chromium's incognito profile has), and no request interception, which
// would take the HTTP cache out of the path (the other specs route every request to keep them
// offline). Users open legal demos in private windows; the 38 MB model once failed there every time
// (net::ERR_CACHE_WRITE_FAILURE) while every routed test passed.
import { expect, test } from '@playwright/test';
import { SAMPLE_QUERY } from '../../web-demo/src/passages.ts';

const TRIES = Number(process.env.LEXEMBED_PRIVATE_TRIES ?? 3);

test(`loads and searches in ${TRIES} fresh private contexts in a row, with no failed request`, async ({ browser }) => {
  test.setTimeout(TRIES * 120_000);
  for (let i = 0; i < TRIES; i++) {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const failed: string[] = [];
      page.on('requestfailed', (r) => failed.push(`${new URL(r.url()).pathname}: ${r.failure()?.errorText}`));
      await page.goto('/?device=wasm');
      await expect(page.locator('body')).toHaveAttribute('data-ready', 'true', { timeout: 90_000 });
      await page.fill('#query', SAMPLE_QUERY.text);
      await page.click('#search-button');
      await expect(page.locator('[data-testid=result]').first()).toHaveAttribute('data-id', SAMPLE_QUERY.expected, { timeout: 60_000 });
      expect(failed, `try ${i + 1}`).toEqual([]);
    } finally {
      await context.close();
    }
  }
});
