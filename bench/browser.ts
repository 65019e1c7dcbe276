// `npm run bench:browser`: in-browser throughput of the bundled model in Debian's Chromium (the
// built demo's in-page client, WASM, 2 threads under COOP/COEP), beside the Node embedder
// (onnxruntime-node) on the same texts in the same run. The page runs three times per round, each
// in a fresh context: as before (?dtype=fp32&before=1: the float32 graph on onnxruntime-web's
// asyncify build in batches of 512 tokens), the float32 graph as the page runs it now (plain WASM
// build, 2,048-token batches), and the page's default (int8 where the model card says it keeps
// quality); rounds alternate; ratio default ÷ before. Timed inside the page.
// Usage: npm run bench:browser -- [--texts 128] [--words 100] [--batch 32] [--rounds 2]   (builds the demo first)
import { execFileSync, spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import { chromium } from '@playwright/test';
import { BUNDLED_MODEL_DIR, PROJECT_ROOT, loadModelFolder } from '../src/node/runtime/load-model.ts';
import { CHROMIUM_FLAGS } from '../playwright.config.ts';
import { makeTexts } from './texts.ts';

const { values } = parseArgs({
  options: { texts: { type: 'string', default: '128' }, words: { type: 'string', default: '100' }, batch: { type: 'string', default: '32' }, rounds: { type: 'string', default: '2' } },
});
const rounds = Number(values.rounds);
const texts = makeTexts(Number(values.texts), Number(values.words));
const batch = Number(values.batch);
const PORT = 4199;

execFileSync('npm', ['run', 'demo:build'], { cwd: PROJECT_ROOT, stdio: 'ignore' });
const preview = spawn('npx', ['vite', 'preview', '--config', 'web-demo/vite.config.ts', '--host', '127.0.0.1', '--port', String(PORT), '--strictPort'], { cwd: PROJECT_ROOT, stdio: 'ignore', detached: true });
try {
  await waitFor(`http://127.0.0.1:${PORT}/`);
  const browser = await chromium.launch({ executablePath: process.env.LEXEMBED_CHROMIUM ?? '/usr/bin/chromium', args: CHROMIUM_FLAGS });
  /** One fresh page at `dtype`: its texts/s over the texts (after one warm-up batch), its load time and what it chose. */
  const measure = async (query: string) => {
    const page = await (await browser.newContext()).newPage();
    const started = performance.now();
    await page.goto(`http://127.0.0.1:${PORT}/?device=wasm&${query}`);
    await page.waitForSelector('body[data-ready=true]', { timeout: 300_000 });
    const loadS = (performance.now() - started) / 1000;
    const chose = `${await page.locator('body').getAttribute('data-backend')} ${(await page.locator('body').getAttribute('data-dtype')) ?? ''}`.trim();
    const run = (chunk: string[]) => page.evaluate((p) => (globalThis as any).lexembed.create(p), { model: 'legal-2-embedder', texts: chunk });
    const first = await run(texts.slice(0, batch)); // warm-up, not timed
    const tokens = first.response.usage.input_tokens / batch;
    // Timed inside the page: returning every vector to this process through page.evaluate (its
    // JSON over the DevTools pipe) cost about as much again as the embedding, and is not the page's.
    const ms = await page.evaluate(
      async ({ all, size }) => {
        const t0 = performance.now();
        for (let i = 0; i < all.length; i += size) {
          const r = await (globalThis as any).lexembed.create({ model: 'legal-2-embedder', texts: all.slice(i, i + size) });
          if (r.type !== 'created') throw new Error(JSON.stringify(r).slice(0, 300));
        }
        return performance.now() - t0;
      },
      { all: texts, size: batch },
    );
    const rate = texts.length / (ms / 1000);
    await page.context().close();
    return { rate, loadS, chose, tokens };
  };
  // What the page ran before (the float32 graph on onnxruntime-web's asyncify build, batches of 512
  // tokens), the float32 graph as the page runs it now, and the page's default now (auto: int8), alternating.
  const CONFIGS = { before: 'dtype=fp32&before=1', fp32: 'dtype=fp32', auto: 'dtype=auto' } as const;
  const runs: Record<string, Awaited<ReturnType<typeof measure>>[]> = { before: [], fp32: [], auto: [] };
  for (let round = 0; round < rounds; round++) for (const [name, query] of Object.entries(CONFIGS)) runs[name]!.push(await measure(query));
  await browser.close();
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const browserRate = mean(runs.auto!.map((r) => r.rate));
  const beforeRate = mean(runs.before!.map((r) => r.rate));
  const tokens = runs.auto![0]!.tokens;

  const node = await loadModelFolder(BUNDLED_MODEL_DIR);
  const input = (chunk: string[]) => ({ texts: chunk, task: null, overflowStrategy: 'drop_end' as const, dimensions: null });
  await node.embed(input(texts.slice(0, batch)));
  const t1 = performance.now();
  for (let i = 0; i < texts.length; i += batch) await node.embed(input(texts.slice(i, i + batch)));
  const nodeRate = texts.length / ((performance.now() - t1) / 1000);
  await node.dispose();

  console.log(`model ${BUNDLED_MODEL_DIR}; ${texts.length} texts of ~${tokens.toFixed(0)} tokens, batches of ${batch}`);
  for (const [name, rs] of Object.entries(runs)) {
    console.log(`Chromium in-page client, ${name} (?${CONFIGS[name as keyof typeof CONFIGS]}; ${rs[0]!.chose}): ${mean(rs.map((r) => r.rate)).toFixed(1)} texts/s (rounds: ${rs.map((r) => r.rate.toFixed(1)).join(', ')}; page ready in ${mean(rs.map((r) => r.loadS)).toFixed(1)} s)`);
  }
  console.log(`page default now (auto) / before (fp32, asyncify build, 512-token batches): ${(browserRate / beforeRate).toFixed(2)} (target ≥ 1.5)`);
  console.log(`Node embedder, onnxruntime-node, same texts:  ${nodeRate.toFixed(1)} texts/s`);
  console.log(`browser / node: ${(browserRate / nodeRate).toFixed(2)}`);
} finally {
  process.kill(-preview.pid!, 'SIGTERM');
}

async function waitFor(url: string) {
  for (;;) {
    if (await fetch(url).then((r) => r.ok, () => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}
