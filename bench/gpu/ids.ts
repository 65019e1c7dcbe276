// Writes the throughput benchmark's workloads as token ids (after the model's truncation), so the
// PyTorch anchor (bench/gpu/torch_anchor.py) embeds exactly the sequences lexembed embeds.
// Usage: tsx bench/gpu/ids.ts --model <dir> --out <file.json> [--workloads short,medium,long]
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { AutoTokenizer, env } from '@huggingface/transformers';
import { truncateToMaxTokens } from '../../src/contract/index.ts';
import { workloadTexts } from '../texts.ts';

const { values } = parseArgs({ options: { model: { type: 'string' }, out: { type: 'string' }, workloads: { type: 'string', default: 'short,medium,long' } } });
if (!values.model || !values.out) {
  console.error('usage: tsx bench/gpu/ids.ts --model <model folder> --out <file.json> [--workloads short,medium,long]');
  process.exit(2);
}
const modelDir = resolve(values.model);
env.allowRemoteModels = false;
env.localModelPath = dirname(modelDir) + '/';
const tokenizer = await AutoTokenizer.from_pretrained(basename(modelDir));
const encode = (t: string) => tokenizer.encode(t);
const maxTokens: number = JSON.parse(readFileSync(join(modelDir, 'lexembed.json'), 'utf8')).max_input_tokens;
const workloads = Object.fromEntries(values.workloads.split(',').map((name) => [name, workloadTexts(name, encode, maxTokens).map((t) => truncateToMaxTokens(encode(t), maxTokens))]));
writeFileSync(values.out, JSON.stringify({ model: modelDir, max_tokens: maxTokens, workloads }));
console.log(`wrote ${values.out}: ${Object.entries(workloads).map(([n, ids]) => `${n} ${ids.length} texts`).join(', ')}`);
