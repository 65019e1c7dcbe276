// Embedder throughput on this machine, beside the raw runtime on the same texts in the same run:
//   (a) raw onnxruntime-node InferenceSession on pre-tokenised, length-sorted batches (the ceiling)
//   (b) the lexembed Embedder (tokenising, truncation, batching, pooling, normalising)
//   (t) the tokenizer alone
//   (s) where the embedder serves the int8 graph: the same embedder with its texts batched together
//       (oneTextPerRun false, as before issue 66 item 9: a text's vector then moves with its batch
//       companions), timed on the same requests, alternating with (b); (b)/(s) is what one text per
//       call costs
// Usage: npm run bench:embedder -- [--model <dir>] [--texts 2048] [--tokens 16,128,512] [--json out.json]
import { mkdirSync, writeFileSync } from 'node:fs';
import type { Embedder } from '../src/embedder/types.ts';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import { AutoTokenizer, env } from '@huggingface/transformers';
import { BUNDLED_MODEL_DIR, PROJECT_ROOT, loadModelFolder } from '../src/node/runtime/load-model.ts';
import { truncateToMaxTokens } from '../src/contract/index.ts';
import { padBatch } from '../src/backend/padding.ts';
import { makeTexts, wordsForTokens } from './texts.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: BUNDLED_MODEL_DIR },
    texts: { type: 'string', default: '2048' },
    tokens: { type: 'string', default: '16,128,512' },
    batch: { type: 'string', default: '32' },
    threads: { type: 'string', default: String(availableParallelism()) },
    json: { type: 'string', default: join(PROJECT_ROOT, 'bench-results', 'embedder.json') },
  },
});
const modelDir = resolve(values.model!);
const threads = Number(values.threads);
const batchSize = Number(values.batch);

env.allowRemoteModels = false;
env.localModelPath = dirname(modelDir) + '/';
const tokenizer = await AutoTokenizer.from_pretrained(modelDir.split('/').pop()!);
const embedder = await loadModelFolder(modelDir, { threads });
const int8 = / dtype q8 /.test(embedder.runtime.deviceReason ?? '');
const shared = int8 ? await loadModelFolder(modelDir, { threads, oneTextPerRun: false }) : null;
const session = await ort.InferenceSession.create(join(modelDir, 'onnx', 'model.onnx'), { intraOpNumThreads: threads, interOpNumThreads: 1 });
const maxTokens = embedder.settings.max_input_tokens;
const encode = (t: string) => tokenizer.encode(t);

console.log(`model ${modelDir} (${embedder.settings.description ?? ''})`);
console.log(`threads ${threads}, batch ${batchSize}, max_input_tokens ${maxTokens}, cores ${availableParallelism()}, node ${process.version}`);
console.log(`embedder: ${embedder.runtime.deviceReason}\n`);
const rows: Record<string, unknown>[] = [];
console.log(
  'tokens/text  texts   (a) raw ort texts/s   (b) embedder texts/s   (b)/(a)   (t) tokenizer texts/s   embedder tokens/s' + (shared ? '   (s) int8 batched texts/s   (b)/(s)' : ''),
);
for (const target of values.tokens!.split(',').map(Number)) {
  const count = target >= 512 ? Math.min(512, Number(values.texts)) : Number(values.texts);
  const texts = makeTexts(count, wordsForTokens(encode, target), target);

  const t0 = performance.now();
  const ids = texts.map((t) => truncateToMaxTokens(encode(t), maxTokens));
  const tokenizeSeconds = (performance.now() - t0) / 1000;
  const tokens = ids.reduce((s, x) => s + x.length, 0);

  // (a) the ceiling: sorted batches straight into the session, timing inference only.
  const sorted = [...ids].sort((x, y) => x.length - y.length);
  await runRaw(sorted.slice(0, batchSize)); // warm-up
  const t1 = performance.now();
  for (let i = 0; i < sorted.length; i += batchSize) await runRaw(sorted.slice(i, i + batchSize));
  const rawSeconds = (performance.now() - t1) / 1000;

  // (b) the library, in API-sized requests of 128 texts; (s) alternating with it, request by request.
  await embedRequest(embedder, texts.slice(0, 8));
  if (shared) await embedRequest(shared, texts.slice(0, 8));
  let libSeconds = 0;
  let sharedSeconds = 0;
  for (let i = 0; i < texts.length; i += 128) {
    libSeconds += await embedRequest(embedder, texts.slice(i, i + 128));
    if (shared) sharedSeconds += await embedRequest(shared, texts.slice(i, i + 128));
  }

  const row = {
    target_tokens: target,
    mean_tokens: +(tokens / count).toFixed(1),
    texts: count,
    raw_texts_per_s: +(count / rawSeconds).toFixed(0),
    embedder_texts_per_s: +(count / libSeconds).toFixed(0),
    ratio: +(rawSeconds / libSeconds).toFixed(3),
    tokenizer_texts_per_s: +(count / tokenizeSeconds).toFixed(0),
    embedder_tokens_per_s: +(tokens / libSeconds).toFixed(0),
    ...(shared ? { int8_batched_texts_per_s: +(count / sharedSeconds).toFixed(0), one_per_call_ratio: +(sharedSeconds / libSeconds).toFixed(3) } : {}),
  };
  rows.push(row);
  console.log(
    `${String(row.mean_tokens).padStart(11)}  ${String(count).padStart(5)}   ${String(row.raw_texts_per_s).padStart(19)}   ${String(row.embedder_texts_per_s).padStart(20)}   ${row.ratio.toFixed(2).padStart(7)}   ${String(row.tokenizer_texts_per_s).padStart(21)}   ${String(row.embedder_tokens_per_s).padStart(17)}` +
      (shared ? `   ${String(row.int8_batched_texts_per_s).padStart(24)}   ${row.one_per_call_ratio!.toFixed(2).padStart(7)}` : ''),
  );
}
mkdirSync(dirname(values.json!), { recursive: true });
writeFileSync(values.json!, JSON.stringify({ model: modelDir, threads, batch: batchSize, node: process.version, rows }, null, 2));
console.log(`\nwrote ${values.json}`);
await embedder.dispose();
await shared?.dispose();
await session.release();

/** Seconds one request of `texts` takes. */
async function embedRequest(on: Embedder, texts: string[]): Promise<number> {
  const start = performance.now();
  const r = await on.embed({ texts, task: null, overflowStrategy: 'drop_end', dimensions: null });
  if (!r.ok) throw new Error(r.problem.detail ?? 'embed failed');
  return (performance.now() - start) / 1000;
}

async function runRaw(batch: number[][]) {
  const { dims, inputIds, attentionMask, tokenTypeIds } = padBatch(batch);
  const feeds: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor('int64', inputIds, dims),
    attention_mask: new ort.Tensor('int64', attentionMask, dims),
    token_type_ids: new ort.Tensor('int64', tokenTypeIds, dims),
  };
  return session.run(Object.fromEntries(session.inputNames.map((n) => [n, feeds[n]!])));
}
