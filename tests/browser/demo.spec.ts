// The built demo in a real Chromium, offline: the model loads from the app's own files, the
// fixed query ranks the expected passage first, on WASM and on WebGPU (software adapter).
import { expect, test, type Page } from '@playwright/test';
import { create, offline, rerank, searchAndCheck } from './helpers.ts';
import { cosine, nodeRerank, nodeVectors, PARITY_TEXTS } from './parity.ts';
import { SAMPLE_DOCUMENTS } from '../../web-demo/src/samples.ts';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, startServe } from '../support/cli.ts';
import { BUNDLED_MODEL_DIR, modelFingerprint } from '../../src/node/runtime/load-model.ts';
import { makeDocx, makeOle, makePdf } from '../support/documents.ts';

test('loads offline on WASM, shows progress and backend, ranks the expected passage first', async ({ page }) => {
  const external = await offline(page);
  const requested: string[] = [];
  page.on('request', (r) => requested.push(new URL(r.url()).pathname));
  await page.goto('/?device=wasm');
  await expect(page.locator('#load-progress')).toBeVisible();
  await searchAndCheck(page, 'wasm');
  await expect(page.locator('body')).toHaveAttribute('data-backend', 'wasm');
  await expect(page.locator('#status')).toContainText('Backend: wasm — wasm was requested (WASM); dtype q8 (auto: the int8 graph keeps quality: dev nDCG@10');
  await expect(page.locator('body')).toHaveAttribute('data-dtype', 'q8');
  // The page names the model as a Node server does: lexembed.json's id and the fingerprint of the graph it loaded.
  await expect(page.locator('body')).toHaveAttribute('data-model-id', JSON.parse(readFileSync(join(BUNDLED_MODEL_DIR, 'lexembed.json'), 'utf8')).id);
  await expect(page.locator('body')).toHaveAttribute('data-fingerprint', modelFingerprint(BUNDLED_MODEL_DIR, 'q8'));
  expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
  // On WASM the page loads the int8 graph (the model card's loss is within 0.005), not the float32 one.
  expect(requested.some((p) => p.endsWith('/models/legal-2-embedder/onnx/model_quantized.onnx'))).toBe(true);
  expect(requested.some((p) => p.endsWith('/models/legal-2-embedder/onnx/model.onnx'))).toBe(false);
  // On WASM, onnxruntime-web's plain build (the asyncify one is WebGPU's).
  expect(requested.some((p) => /ort-wasm-simd-threaded-[^.]*\.wasm$/.test(p))).toBe(true);
  expect(requested.some((p) => /ort-wasm-simd-threaded\.asyncify-.*\.wasm$/.test(p))).toBe(false);
  expect(external).toEqual([]);
});

test('a reload takes the model from the Cache API and still names its fingerprint (read back from the cache)', async ({ page }) => {
  await offline(page);
  await page.goto('/?device=wasm');
  await expect(page.locator('body')).toHaveAttribute('data-ready', 'true', { timeout: 90_000 });
  const first = await page.locator('body').getAttribute('data-fingerprint');
  const requested: string[] = [];
  page.on('request', (r) => requested.push(new URL(r.url()).pathname));
  await page.reload();
  await expect(page.locator('body')).toHaveAttribute('data-ready', 'true', { timeout: 90_000 });
  expect(first).toBe(modelFingerprint(BUNDLED_MODEL_DIR, 'q8'));
  await expect(page.locator('body')).toHaveAttribute('data-fingerprint', first!);
  // The graph came from transformers.js's Cache API copy, not the network.
  expect(requested.some((p) => p.endsWith('/onnx/model_quantized.onnx'))).toBe(false);
});

test('a model file whose first fetch fails (connection dropped, then a 503) still loads: the fetch is retried', async ({ page }) => {
  await offline(page);
  const failures: string[] = [];
  await page.context().route('**/models/legal-2-embedder/onnx/model_quantized.onnx', async (route) => {
    if (failures.length === 0) return failures.push('abort'), route.abort('connectionreset');
    if (failures.length === 1) return failures.push('503'), route.fulfill({ status: 503, body: 'busy' });
    return route.fallback();
  });
  await page.goto('/?device=wasm');
  await searchAndCheck(page, 'wasm-retried');
  expect(failures).toEqual(['abort', '503']);
});

test('a long document: chunked with exact offsets, searched by example queries, the best passage highlighted in place', async ({ page }) => {
  await offline(page);
  await page.goto('/?device=wasm');
  const body = page.locator('body');
  await expect(body).toHaveAttribute('data-ready', 'true', { timeout: 90_000 });
  // The heat map of the passages is there before any search.
  await expect(page.locator('[data-testid=heatmap] td')).toHaveCount(10 * 10);
  await page.click('#load-sample');
  const text = await page.inputValue('#document');
  expect(text.length).toBeGreaterThan(7000);
  await page.click('#index-document');
  await expect(body).toHaveAttribute('data-doc-ready', 'true', { timeout: 120_000 });
  expect(Number(await body.getAttribute('data-chunks'))).toBeGreaterThan(10);
  await expect(page.locator('#document-status')).toContainText(/characters → \d+ chunks of at most 128 tokens/);
  const chips = page.locator('#document-examples button');
  const examples = SAMPLE_DOCUMENTS[0]!.queries;
  await expect(chips).toHaveCount(examples.length);
  let firstHits = 0;
  for (const [i, example] of examples.entries()) {
    await chips.nth(i).click();
    await expect(body).toHaveAttribute('data-doc-searched', String(i + 1));
    const results = page.locator('[data-testid=document-result]');
    const best = results.first();
    const sliceOf = async (r: typeof best) => text.slice(Number(await r.getAttribute('data-start')), Number(await r.getAttribute('data-end')));
    const [start, end] = [Number(await best.getAttribute('data-start')), Number(await best.getAttribute('data-end'))];
    // The results' offsets are the document's own: the clause the query is about is in the slice of
    // one of the first two (model v3 ranks the deposit clause's neighbouring chunk first; v2 did not)…
    const topTwo = [await sliceOf(best), await sliceOf(results.nth(1))];
    expect(topTwo.some((slice) => slice.includes(example.expect)), example.text).toBe(true);
    if (topTwo[0]!.includes(example.expect)) firstHits++;
    await expect(best).toContainText(/chunk \d+ of \d+ · lines? \d+/);
    // …and that slice is what is highlighted in place.
    await expect(page.locator('#document-view mark.best')).toHaveText(text.slice(start, end));
  }
  // …and most examples find their clause first (v3: 5 of 6; v2: 6 of 6).
  expect(firstHits).toBeGreaterThanOrEqual(examples.length - 1);
  await page.screenshot({ path: 'test-results/screenshots/document-search.png', fullPage: true });
});

test('a dropped PDF and DOCX are read in the page, chunked, embedded and searched; the best passage names its page or paragraph', async ({ page }) => {
  const external = await offline(page);
  await page.goto('/?device=wasm');
  const body = page.locator('body');
  await expect(body).toHaveAttribute('data-ready', 'true', { timeout: 90_000 });
  // Pages of about 150 tokens each, so that the chunks (at most 128 tokens) mostly keep to one page.
  const filler = (topic: string) => Array.from({ length: 5 }, (_, i) => `${topic} clause ${i + 1}: the parties agree to the schedule set out in annex ${i + 1}.`);
  const pdf = makePdf([
    ['RESIDENTIAL LEASE AGREEMENT', '1. Rent. The Tenant shall pay a monthly rent of 1,200 dollars on the first day of each month.', ...filler('Rent')],
    [...filler('Deposit').slice(0, 2), '2. Termination. Either party may terminate this lease by giving the other at least sixty days written notice.', ...filler('Repairs').slice(0, 3)],
    ['3. Governing law. This lease is governed by the laws of the Province of Ontario.', ...filler('Law')],
  ]);
  await page.setInputFiles('#file', { name: 'lease.pdf', mimeType: 'application/pdf', buffer: Buffer.from(pdf) });
  await expect(page.locator('#document-status')).toContainText('Read lease.pdf in this page: 3 pages');
  expect(await page.inputValue('#document')).toContain('sixty days written notice');
  await page.click('#index-document');
  await expect(body).toHaveAttribute('data-doc-ready', 'true', { timeout: 120_000 });
  await page.fill('#document-query', 'How much notice is needed to end the lease?');
  await page.press('#document-query', 'Enter');
  await expect(body).toHaveAttribute('data-doc-searched', '1');
  const best = page.locator('[data-testid=document-result]').first();
  await expect(best).toHaveAttribute('data-page', '2');
  await expect(best).toContainText(/chunk \d+ of \d+ · pages? 2(–3)? · characters/);
  await expect(page.locator('#document-view mark.best')).toContainText('sixty days written notice');

  const docx = await makeDocx(['MUTUAL NON-DISCLOSURE AGREEMENT', '1. Confidential Information means information marked confidential.', '2. Return of materials. On request, the receiving party shall return or destroy all confidential documents.']);
  await page.setInputFiles('#file', { name: 'nda.docx', mimeType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', buffer: Buffer.from(docx) });
  await expect(page.locator('#document-status')).toContainText('Read nda.docx in this page: 3 paragraphs');
  await page.click('#index-document');
  await expect(body).toHaveAttribute('data-doc-ready', 'true', { timeout: 120_000 });
  await page.fill('#document-query', 'must the recipient give the documents back?');
  await page.press('#document-query', 'Enter');
  await expect(body).toHaveAttribute('data-doc-searched', '2');
  await expect(page.locator('[data-testid=document-result]').first()).toContainText(/paragraphs? \d/);

  // A scanned PDF is said to be one, not shown as an empty document.
  await page.setInputFiles('#file', { name: 'scan.pdf', mimeType: 'application/pdf', buffer: Buffer.from(makePdf([['x']], { scan: true })) });
  const status = page.locator('#document-status');
  await expect(status).toHaveText(/^Could not read scan\.pdf: none of its 1 page has a text layer \(a scanned PDF\?\); lexembed does no OCR: run OCR first/);
  // Files are read by their bytes, and named once, with what to do, as the CLI names them: a
  // Word 97–2003 file (named .doc, or renamed .docx) and a PDF cut off in a download.
  const before = await page.inputValue('#document');
  await page.setInputFiles('#file', { name: 'minutes.doc', mimeType: 'application/msword', buffer: Buffer.from(makeOle('WordDocument')) });
  await expect(status).toHaveText(/^Could not read minutes\.doc: a legacy Word \.doc file \(Word 97–2003\), a format lexembed does not read; save it as \.docx/);
  expect(await page.inputValue('#document'), 'the binary file is not shown as text').toBe(before);
  await page.setInputFiles('#file', { name: 'report.docx', mimeType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', buffer: Buffer.from(makeOle('WordDocument')) });
  await expect(status).toHaveText(/^Could not read report\.docx: its name ends in \.docx, but it is a legacy Word \.doc file .*; save it as \.docx/);
  const whole = makePdf([['1. Rent.'], ['2. Notice.']]);
  await page.setInputFiles('#file', { name: 'cut.pdf', mimeType: 'application/pdf', buffer: Buffer.from(whole.slice(0, Math.floor(whole.length * 0.6))) });
  await expect(status).toHaveText(/^Could not read cut\.pdf: a PDF cut off before its end .*; get the file again/);
  expect(external).toEqual([]);
});

test('a result shows the sentences that answer, past character 400 of its passage, with an ellipsis for the rest (issue 66 item 2)', async ({ page }) => {
  await offline(page);
  await page.goto('/?device=wasm');
  const body = page.locator('body');
  await expect(body).toHaveAttribute('data-ready', 'true', { timeout: 90_000 });
  // One passage (under 128 tokens: one chunk) whose answer starts past character 400.
  const opening = [
    'SCHEDULE 4. GENERAL PROVISIONS.',
    'The parties have read this schedule and agree to it.',
    'Words defined in the recitals have the same meaning in this schedule.',
    'Headings are for convenience only and do not affect its interpretation.',
    'A reference to a statute includes any amendment or re-enactment of it.',
    'The singular includes the plural and the plural the singular.',
    'Nothing in this schedule creates a partnership or agency between the parties.',
  ].join(' ');
  const answer = 'The Tenant may end this lease early by giving the Landlord ninety days written notice.';
  const text = `${opening} ${answer} Any notice must be in writing.`;
  expect(text.indexOf(answer)).toBeGreaterThan(400);
  await page.fill('#document', text);
  await page.click('#index-document');
  await expect(body).toHaveAttribute('data-doc-ready', 'true', { timeout: 120_000 });
  await expect(body).toHaveAttribute('data-chunks', '1');
  await page.fill('#document-query', 'How can the tenant end the lease early?');
  await page.press('#document-query', 'Enter');
  await expect(body).toHaveAttribute('data-doc-searched', '1');
  const excerpt = page.locator('[data-testid=document-result]').first().locator('.excerpt');
  await expect(excerpt).toContainText(answer);
  await expect(excerpt).toHaveText(/^… /);
  await expect(excerpt).not.toContainText('SCHEDULE 4');
});

test('a fresh page asks for nothing that is missing (no favicon.ico 404), and the sample selector names a loaded file, not the sample (issue 66 item 7)', async ({ browser }) => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const missing: string[] = [];
  page.on('response', (r) => r.status() >= 400 && missing.push(`${r.status()} ${r.url()}`));
  await offline(page);
  await page.goto('/?device=wasm');
  await expect(page.locator('body')).toHaveAttribute('data-ready', 'true', { timeout: 90_000 });
  // A browser with a window asks for /favicon.ico unless the page names its icon (headless
  // Chromium does not ask): the page names one, and it loads.
  const icon = await page.evaluate(async () => {
    const href = document.querySelector<HTMLLinkElement>('link[rel~=icon]')?.href;
    return href ? { href: href.slice(0, 30), ok: (await fetch(href)).ok } : null;
  });
  expect(icon, 'a <link rel="icon"> in the page').toMatchObject({ ok: true });
  const selected = page.locator('#sample option:checked');
  await expect(selected).toHaveText(SAMPLE_DOCUMENTS[0]!.title);
  const pdf = makePdf([['RESIDENTIAL LEASE AGREEMENT', '1. Rent. The Tenant shall pay a monthly rent of 1,200 dollars.']]);
  await page.setInputFiles('#file', { name: 'lease.pdf', mimeType: 'application/pdf', buffer: Buffer.from(pdf) });
  await expect(page.locator('#document-status')).toContainText('Read lease.pdf in this page');
  await expect(selected).toHaveText('Your file: lease.pdf');
  // Typing over it makes it the reader's own text; loading the sample again names the sample.
  await page.fill('#document', 'My own clause.');
  await expect(selected).toHaveText('Your text');
  await page.selectOption('#sample', SAMPLE_DOCUMENTS[0]!.id);
  await page.click('#load-sample');
  await expect(selected).toHaveText(SAMPLE_DOCUMENTS[0]!.title);
  expect(missing).toEqual([]);
  await context.close();
});

test('auto picks WASM when no WebGPU adapter is available, and says why', async ({ page }) => {
  await offline(page);
  await page.goto('/?device=auto');
  await expect(page.locator('body')).toHaveAttribute('data-ready', 'true', { timeout: 90_000 });
  await expect(page.locator('body')).toHaveAttribute('data-backend', 'wasm');
  await expect(page.locator('#status')).toContainText(/no WebGPU adapter|navigator\.gpu is missing|software fallback/);
});


test('the in-page client gives the Node server\'s vectors and the same typed errors', async ({ page }) => {
  await offline(page);
  await page.goto('/?device=wasm');
  await expect(page.locator('body')).toHaveAttribute('data-ready', 'true', { timeout: 90_000 });
  const local = await create(page, { model: 'legal-2-embedder', texts: PARITY_TEXTS, task: 'retrieval/document' });
  expect(local.type).toBe('created');
  const expected = await nodeVectors(PARITY_TEXTS);
  local.response.embeddings.forEach((e: { index: number; embedding: number[] }, i: number) => {
    expect(e.index).toBe(i);
    expect(cosine(e.embedding, expected[i]!)).toBeGreaterThanOrEqual(0.999);
  });
  const bad = await create(page, { model: 'legal-2-embedder', texts: ['ok', '  '] });
  expect(bad).toMatchObject({ type: 'error', name: 'BadRequestError', status: 400, title: 'Validation error', detail: 'texts[1] must contain at least one non-whitespace character', errorType: '/docs/api-reference/errors#400-validation-error' });
  const dims = await create(page, { model: 'legal-2-embedder', texts: 'x', dimensions: 1793 }); // one above the model's 1792
  expect(dims).toMatchObject({ name: 'BadRequestError', title: 'Unsupported embedding dimension error' });
});

test('the in-page client answers OpenAI-shaped requests: base64 decodes to its own vectors for the same task, and refusals are typed errors', async ({ page }) => {
  await offline(page);
  await page.goto('/?device=wasm');
  await expect(page.locator('body')).toHaveAttribute('data-ready', 'true', { timeout: 90_000 });
  const openai = (params: unknown) => page.evaluate((p) => (window as any).lexembed.openai(p), params);
  const b64 = await openai({ model: 'legal-2-embedder:document', input: PARITY_TEXTS, encoding_format: 'base64' });
  expect(b64.type, JSON.stringify(b64)).toBe('created');
  expect(b64.response).toMatchObject({ object: 'list', model: 'legal-2-embedder:document' });
  const spec = await create(page, { model: 'legal-2-embedder', texts: PARITY_TEXTS, task: 'retrieval/document' });
  b64.response.data.forEach((d: { embedding: string }, i: number) => {
    const bytes = Buffer.from(d.embedding, 'base64');
    const decoded = Array.from({ length: bytes.length / 4 }, (_, k) => bytes.readFloatLE(k * 4));
    expect(cosine(decoded, spec.response.embeddings[i].embedding)).toBeGreaterThanOrEqual(0.999999);
  });
  const bad = await openai({ model: 'legal-2-embedder', input: [[1, 2]] });
  expect(bad).toMatchObject({ type: 'error', name: 'BadRequestError', status: 400, detail: expect.stringMatching(/^input as token ids is not supported/) });
});

test('the in-page client reranks with the Node server\'s scores, and refuses what the server refuses', async ({ page }) => {
  await offline(page);
  await page.goto('/?device=wasm');
  await expect(page.locator('body')).toHaveAttribute('data-ready', 'true', { timeout: 90_000 });
  const params = { model: 'legal-2-reranker', query: 'Return of a security deposit', texts: PARITY_TEXTS, top_n: 3 };
  const local = await rerank(page, params);
  expect(local.type, JSON.stringify(local)).toBe('created');
  const expected = await nodeRerank(params.query, PARITY_TEXTS);
  expect(local.response.usage.input_tokens).toBe(expected.inputTokens);
  const order = expected.scores.map((score, index) => ({ index, score })).sort((a, b) => b.score - a.score || a.index - b.index).slice(0, 3);
  expect(local.response.results.map((r: { index: number }) => r.index)).toEqual(order.map((r) => r.index));
  local.response.results.forEach((r: { index: number; score: number }) => expect(r.score).toBeCloseTo(expected.scores[r.index]!, 3));
  const bad = await rerank(page, { ...params, is_iql: true });
  expect(bad).toMatchObject({ type: 'error', name: 'BadRequestError', status: 400, title: 'Validation error' });
});

/** Loads the page (WASM, offline), then switches it to a lexembed server with a key. */
async function pointAtServer(page: Page, url: string, key: string) {
  await offline(page);
  await page.goto('/?device=wasm');
  await expect(page.locator('body')).toHaveAttribute('data-ready', 'true', { timeout: 90_000 });
  await page.check('input[name=mode][value=remote]');
  await page.fill('#server-url', url);
  await page.fill('#api-key', key);
  await page.click('#apply');
}

test('a server that does not allow the page\'s origin is named as a CORS refusal with the flag that fixes it; a stopped one as unreachable', async ({ page }) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'lexembed-demo-'));
  const server = await startServe(['--data-dir', dataDir, '--no-dev-key']); // no --cors-origins
  try {
    await pointAtServer(page, `${server.url}/v1`, 'lxk_v1_whatever');
    await expect(page.locator('#status')).toContainText("does not allow calls from this page's origin (CORS): start it with --cors-origins http://127.0.0.1:4173", { timeout: 30_000 });
    await server.stop();
    await page.click('#apply');
    await expect(page.locator('#status')).toContainText(`Nothing answers at ${server.url}/v1`, { timeout: 30_000 });
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('the switch points the page at a lexembed server (CORS, API key)', async ({ page }) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'lexembed-demo-'));
  const key = (await runCli(['keys', 'create', '--account', 'demo', '--data-dir', dataDir])).stdout.trim().split('\n').at(-1)!;
  const server = await startServe(['--data-dir', dataDir, '--cors-origins', 'http://127.0.0.1:4173']);
  try {
    await pointAtServer(page, `${server.url}/v1`, key);
    await expect(page.locator('body')).toHaveAttribute('data-backend', 'server', { timeout: 30_000 });
    await expect(page.locator('body')).toHaveAttribute('data-ready', 'true');
    await searchAndCheck(page, 'server');
    await expect(page.locator('#status')).toContainText(`lexembed server at ${server.url}/v1`);
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
