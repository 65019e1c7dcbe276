// A learned query prefix (model/train/transformer.py --query-prefix [unused0], written into a
// folder by model/export/onnx_weights.py --write --query-prefix): the folder lists the piece as an added
// token and serves it as the retrieval/query prompt, so a query gets exactly one extra token that
// the model was trained on, never the four pieces "[", "unused", "##0", "]" the text would give.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadModelFolder, TEST_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import type { Embedder } from '../../src/embedder/types.ts';

let dir: string;
let prefixed: Embedder;
let plain: Embedder;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lexembed-prefix-'));
  for (const name of ['prefixed', 'plain']) cpSync(TEST_MODEL_DIR, join(dir, name), { recursive: true });
  const tokenizerPath = join(dir, 'prefixed', 'tokenizer.json');
  const tokenizer = JSON.parse(readFileSync(tokenizerPath, 'utf8'));
  const id = tokenizer.model.vocab['[unused0]'];
  tokenizer.added_tokens.push({ id, content: '[unused0]', single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  writeFileSync(tokenizerPath, JSON.stringify(tokenizer));
  for (const name of ['prefixed', 'plain']) {
    const path = join(dir, name, 'lexembed.json');
    const settings = JSON.parse(readFileSync(path, 'utf8'));
    writeFileSync(path, JSON.stringify({ ...settings, prompts: { 'retrieval/query': '[unused0] ', 'retrieval/document': null } }));
  }
  [prefixed, plain] = await Promise.all([loadModelFolder(join(dir, 'prefixed')), loadModelFolder(join(dir, 'plain'))]);
}, 120_000);
afterAll(async () => {
  await Promise.all([prefixed?.dispose(), plain?.dispose()]);
  rmSync(dir, { recursive: true, force: true });
});

it('a query costs one token more than the text alone, and a document none', async () => {
  const text = 'What notice must a landlord give?';
  const [none] = await prefixed.tokenize([text], { task: null, offsets: false });
  const [query] = await prefixed.tokenize([text], { task: 'retrieval/query', offsets: false });
  const [document] = await prefixed.tokenize([text], { task: 'retrieval/document', offsets: false });
  expect(query!.input_tokens).toBe(none!.input_tokens + 1);
  expect(document!.input_tokens).toBe(none!.input_tokens);
  // Without the added-token entry the same prompt is ordinary text: four pieces.
  const [asText] = await plain.tokenize([text], { task: 'retrieval/query', offsets: false });
  expect(asText!.input_tokens).toBe(none!.input_tokens + 4);
});

it('the query vector is the model run on [CLS] [unused0] text [SEP]', async () => {
  const text = 'Termination for convenience';
  const query = await prefixed.embed({ texts: [text], task: 'retrieval/query', overflowStrategy: 'drop_end', dimensions: null });
  const spelled = await prefixed.embed({ texts: [`[unused0] ${text}`], task: null, overflowStrategy: 'drop_end', dimensions: null });
  const bare = await prefixed.embed({ texts: [text], task: null, overflowStrategy: 'drop_end', dimensions: null });
  if (!query.ok || !spelled.ok || !bare.ok) throw new Error('embedding failed');
  expect([...query.value.vectors[0]!]).toEqual([...spelled.value.vectors[0]!]);
  expect([...query.value.vectors[0]!]).not.toEqual([...bare.value.vectors[0]!]);
  // The same weights reading the prompt as four ordinary pieces give another vector: the one
  // token is what the model sees, not merely the prompt's text.
  const asText = await plain.embed({ texts: [text], task: 'retrieval/query', overflowStrategy: 'drop_end', dimensions: null });
  if (!asText.ok) throw new Error('embedding failed');
  expect([...query.value.vectors[0]!]).not.toEqual([...asText.value.vectors[0]!]);
});
