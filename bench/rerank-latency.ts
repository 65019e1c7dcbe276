// Reranking latency on the real server: one POST /v1/rerankings of 100 texts of ~500 tokens
// (target ≤ 1 s on a 2-core machine with the static model), beside the baseline of the same run:
// POST /v1/embeddings of the same 100 texts (what reranking must embed anyway; 128 at most per
// request, so one call). Median and worst of --runs requests each, after one warm-up.
// Usage: npm run bench:rerank-latency -- [--model models/legal-2-embedder-static] [--runs 7] [--texts 100] [--tokens 500]
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { AutoTokenizer, env } from '@huggingface/transformers';
import { STATIC_MODEL_DIR } from '../src/node/runtime/load-model.ts';
import { startServe } from '../tests/support/cli.ts';
import { makeTexts, wordsForTokens } from './texts.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: STATIC_MODEL_DIR },
    runs: { type: 'string', default: '7' },
    texts: { type: 'string', default: '100' },
    tokens: { type: 'string', default: '500' },
  },
});
const modelDir = values.model!;
env.allowRemoteModels = false;
env.localModelPath = join(modelDir, '..') + '/';
const tokenizer = await AutoTokenizer.from_pretrained(modelDir.split('/').filter(Boolean).pop()!);
const encode = (t: string) => tokenizer.encode(t);
const texts = makeTexts(Number(values.texts), wordsForTokens(encode, Number(values.tokens)), 11);
const meanTokens = texts.reduce((s, t) => s + encode(t).length, 0) / texts.length;

const server = await startServe(['--no-auth', '--model', modelDir]);
const url = server.url;

async function time(path: string, body: unknown): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
  return (performance.now() - started) / 1000;
}
const rerank = { model: 'legal-2-reranker', query: 'termination of the lease for breach of covenant', texts };
const embed = { model: 'legal-2-embedder', texts };
const runs = Number(values.runs);
const results: Record<string, number[]> = { rerank: [], embed: [] };
await time('/v1/rerankings', rerank);
await time('/v1/embeddings', embed);
for (let i = 0; i < runs; i++) {
  results.rerank!.push(await time('/v1/rerankings', rerank));
  results.embed!.push(await time('/v1/embeddings', embed));
}
await server.stop();

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`model ${modelDir}; ${texts.length} texts of ${meanTokens.toFixed(0)} tokens on average; ${runs} runs each, interleaved\n`);
console.log('request                                median    worst');
console.log(`POST /v1/rerankings (100 texts)      ${median(results.rerank!).toFixed(3)} s  ${Math.max(...results.rerank!).toFixed(3)} s   target ≤ 1 s`);
console.log(`POST /v1/embeddings (same texts)     ${median(results.embed!).toFixed(3)} s  ${Math.max(...results.embed!).toFixed(3)} s   baseline`);
console.log(`\nreranking / embedding the same texts: ${(median(results.rerank!) / median(results.embed!)).toFixed(2)}x`);
