// The main thread's tokenizer (@huggingface/tokenizers, tokenizer.ts) against transformers.js's
// AutoTokenizer on the same folder: the same ids, word pieces and decoded text for every shipped
// model, on texts meant to find a difference (accents, CJK, control and zero-width characters,
// special-token strings, long and empty texts). And that `lexembed serve` keeps transformers.js
// off its main thread.
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { AutoTokenizer, env } from '@huggingface/transformers';
import { describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR, PROJECT_ROOT, STATIC_MODEL_DIR, TEST_MODEL_DIR } from '../../../src/node/runtime/load-model.ts';
import { loadFolderTokenizer } from '../../../src/node/runtime/tokenizer.ts';

const TEXTS = [
  'The lessee shall pay the rent on the first day of each month.',
  'Art. 6(1)(f) GDPR — „berechtigtes Interesse“; Verordnung (EU) 2016/679, Erwägungsgrund 47.',
  'Société à responsabilité limitée: clause résolutoire, préavis de trente (30) jours.',
  '第十二条 合同的内容由当事人约定 — 契約の解除 — 계약 해지',
  'Zero\u200bwidth\u00adsoft\ufeffhyphen and\ttabs\nnewlines\r\n and  double  spaces',
  '[CLS] [SEP] [MASK] [PAD] [UNK] are words here, ##not pieces',
  'e-mail: counsel@firm.example, https://eur-lex.europa.eu/eli/reg/2016/679/oj?x=1&y=2',
  'ÀÉÎÕÜ ǅ ß İstanbul ΣΊΣΥΦΟΣ ﬁnancial ① ½ ™ ©',
  '§ 573 Abs. 2 Nr. 1 BGB; 42 U.S.C. § 1983; [2024] UKSC 12 at [45]–[47]',
  '   ',
  '',
  'indemnification '.repeat(700),
];

describe.each([BUNDLED_MODEL_DIR, STATIC_MODEL_DIR, TEST_MODEL_DIR])('the tokenizer of %s', (folder) => {
  it('gives the ids, pieces and decoded text transformers.js gives', async () => {
    env.allowRemoteModels = false;
    env.localModelPath = `${dirname(folder)}/`;
    const reference = await AutoTokenizer.from_pretrained(basename(folder));
    const ours = loadFolderTokenizer(folder);
    for (const text of TEXTS) {
      const ids = reference.encode(text, { add_special_tokens: true });
      expect(ours.encode(text), text.slice(0, 40)).toEqual(ids);
      expect(ours.tokenize(text)).toEqual(reference.tokenize(text));
      expect(ours.decode(ids)).toBe(reference.decode(ids, { skip_special_tokens: true }));
      expect(ours.decode(ids.slice(1, 5))).toBe(reference.decode(ids.slice(1, 5), { skip_special_tokens: true }));
    }
    expect(ours.encode('lexembed warm-up').length).toBeGreaterThan(2);
  });
});

describe('the server main thread', () => {
  it('loads no transformers.js: none of the modules `lexembed serve` imports statically does', () => {
    // Static imports only (`import … from`, not `import type`, not `await import()`): what loads
    // before the model does. transformers.js belongs in the inference worker and --inference main.
    const seen = new Set<string>();
    const found: string[] = [];
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const [, spec] of readFileSync(file, 'utf8').matchAll(/^import\s+(?!type\b)(?:[^'"]*?from\s+)?['"]([^'"]+)['"]/gm)) {
        if (spec!.startsWith('@huggingface/transformers')) found.push(file);
        else if (spec!.startsWith('.') && existsSync(resolve(dirname(file), spec!))) visit(resolve(dirname(file), spec!));
      }
    };
    visit(join(PROJECT_ROOT, 'src', 'cli', 'serve.ts'));
    expect(seen.has(join(PROJECT_ROOT, 'src', 'node', 'runtime', 'tokenizer.ts'))).toBe(true);
    expect(found).toEqual([]);
  });
});
