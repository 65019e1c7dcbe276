// The model folder's tokenizer for the main thread, from @huggingface/tokenizers: the library
// transformers.js wraps (AutoTokenizer builds the same `Tokenizer` from the same two files and
// passes encode, decode and tokenize straight to it), without loading transformers.js itself,
// which only the inference worker needs. Measured in a process whose worker had loaded
// transformers.js: importing it on the main thread too added 126 MB resident; this, nothing
// measurable. tests/node/runtime/tokenizer.test.ts checks both give the same ids, pieces and text.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';

export interface FolderTokenizer {
  /** Token ids with [CLS] … [SEP] (transformers.js `encode(text, { add_special_tokens: true })`). */
  encode(text: string): number[];
  /** The text of `ids` without special tokens (transformers.js `decode(ids, { skip_special_tokens: true })`). */
  decode(ids: readonly number[]): string;
  /** Word pieces without special tokens (transformers.js `tokenize(text)`). */
  tokenize(text: string): string[];
}

/** The tokenizer of a model folder (tokenizer.json, and tokenizer_config.json where present). */
export function loadFolderTokenizer(folder: string): FolderTokenizer {
  const read = (file: string) => JSON.parse(readFileSync(join(folder, file), 'utf8')) as object;
  const config = existsSync(join(folder, 'tokenizer_config.json')) ? read('tokenizer_config.json') : {};
  const tokenizer = new Tokenizer(read('tokenizer.json'), config);
  return {
    encode: (text) => tokenizer.encode(text, { add_special_tokens: true }).ids,
    decode: (ids) => tokenizer.decode(ids as number[], { skip_special_tokens: true }),
    tokenize: (text) => tokenizer.tokenize(text, { add_special_tokens: false }),
  };
}
