// The document form (lexembed.json "document_form", model/graph/document_form.py): documents at full
// width reach the model with the marker piece in place of [CLS]; queries, texts without a task,
// prefixes and folders without the setting reach it unchanged. The bundled model's vectors in that
// form are checked against the Python recipe in legal-model.test.ts.
import { describe, expect, it } from 'vitest';
import { asDocuments } from '../../src/embedder/document-form.ts';
import { createEmbedder } from '../../src/embedder/embedder.ts';
import { CLS, SEP, createFakeBackend, fakeSettings } from '../support/fake-backend.ts';

const form = { document_form: { marker: 2, replaces: CLS }, dimensions: { default: 8, max: 8, matryoshka: [4] } };

describe('asDocuments', () => {
  it('puts the marker in place of [CLS] at full width only', () => {
    const settings = fakeSettings(form);
    expect(settings.document_form).toEqual({ marker: 2, replaces: CLS, full_width_only: true });
    expect(asDocuments(settings, [[CLS, 7, SEP], [CLS, SEP]], 8)).toEqual([[2, 7, SEP], [2, SEP]]);
    expect(asDocuments(settings, [[CLS, 7, SEP]], 4)).toEqual([[CLS, 7, SEP]]);
  });

  it('leaves a folder without a document form alone', () => {
    expect(asDocuments(fakeSettings(), [[CLS, 7, SEP]], 8)).toEqual([[CLS, 7, SEP]]);
  });

  it('refuses a sequence that does not start with the piece the marker replaces (a tokenizer that adds no [CLS])', () => {
    expect(() => asDocuments(fakeSettings(form), [[7, SEP]], 8)).toThrow(/starts with id 7, not 101/);
  });

  it('is refused in lexembed.json with a clear error when malformed', () => {
    expect(() => fakeSettings({ document_form: { marker: 'x', replaces: CLS } })).toThrow(/document_form\.marker/);
  });
});

describe('the embedder asks for the document form', () => {
  const run = async (task: 'retrieval/query' | 'retrieval/document' | null, dimensions: number | null) => {
    const backend = createFakeBackend();
    const embedder = createEmbedder(fakeSettings(form), backend);
    const r = await embedder.embed({ texts: ['lease term'], task, overflowStrategy: null, dimensions });
    expect(r.ok).toBe(true);
    return { sent: backend.calls.flat(), tokens: r.ok ? r.value.inputTokens : -1 };
  };

  it('for retrieval/document at full width, counting the same tokens', async () => {
    const asDocument = await run('retrieval/document', null);
    const asText = await run(null, null);
    expect(asDocument.sent[0]![0]).toBe(2);
    expect(asDocument.sent[0]!.slice(1)).toEqual(asText.sent[0]!.slice(1));
    expect(asDocument.tokens).toBe(asText.tokens);
  });

  it('not for queries, texts without a task or a Matryoshka prefix', async () => {
    expect((await run('retrieval/query', null)).sent[0]![0]).toBe(CLS);
    expect((await run(null, null)).sent[0]![0]).toBe(CLS);
    expect((await run('retrieval/document', 4)).sent[0]![0]).toBe(CLS);
  });

  it('for the chunks a reranking reads, not its query', async () => {
    const backend = createFakeBackend();
    const settings = fakeSettings({ ...form, reranking: { weights: { intercept: 0, cosine: 1, lexical: 0 } } });
    const embedder = createEmbedder(settings, backend);
    const r = await embedder.reranker!.rerank({ query: 'lease', texts: ['lease term', 'rent due'], chunking: { size: 6, overlap: 0 }, method: 'auto' });
    expect(r.ok).toBe(true);
    const sent = backend.calls.flat();
    expect(sent.map((s) => s[0])).toEqual([CLS, 2, 2]);
  });
});
