// The model fingerprint outside Node (src/embedder/fingerprint.ts): files hashed as they stream in
// through the loader's fetch give the value Node's modelFingerprint reads from disk, and the same
// vectors fingerprint; SHA-256 in plain TypeScript (sha256.ts) equals node:crypto's. The vectors
// fingerprint moves with what makes a stored document's vectors, and only with that.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fingerprintedFile, fingerprintingFetch, graphFileOf, vectorsFingerprint } from '../../src/embedder/fingerprint.ts';
import { Sha256 } from '../../src/embedder/sha256.ts';
import { modelFingerprint, modelVectorsFingerprint, STATIC_MODEL_DIR, TEST_MODEL_DIR } from '../../src/node/runtime/load-model.ts';

/** A fetch that serves a folder's files in uneven chunks, as a network does. */
function folderFetch(folder: string, served: string[] = []): typeof fetch {
  return async (input) => {
    const file = new URL(String(input), 'http://x/').pathname.replace(/^\/models\/m\//, '');
    served.push(file);
    let bytes: Uint8Array;
    try {
      bytes = readFileSync(join(folder, file));
    } catch {
      return new Response('not found', { status: 404 });
    }
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < bytes.length; at += 7919) controller.enqueue(bytes.slice(at, at + 7919));
        controller.close();
      },
    });
    return new Response(body, { status: 200 });
  };
}

describe('Sha256', () => {
  it("equals node:crypto's digest at every length around the block edges, fed in any pieces", () => {
    for (const n of [0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 1000, 65537]) {
      const bytes = randomBytes(n);
      const hash = new Sha256();
      for (let at = 0; at < n; at += 1 + (at % 97)) hash.update(bytes.subarray(at, at + 1 + (at % 97)));
      expect(Buffer.from(hash.digest()).toString('hex'), `${n} bytes`).toBe(createHash('sha256').update(bytes).digest('hex'));
    }
  });

  it('clones: more hashed into the copy leaves the original as it was', () => {
    const a = new Sha256().update(Buffer.from('lease '));
    const b = a.clone().update(Buffer.from('termination'));
    expect(Buffer.from(a.digest()).toString('hex')).toBe(createHash('sha256').update('lease ').digest('hex'));
    expect(Buffer.from(b.digest()).toString('hex')).toBe(createHash('sha256').update('lease termination').digest('hex'));
  });
});

describe('fingerprintingFetch', () => {
  it("gives Node's fingerprint for the graph loaded, whatever order the files stream in", async () => {
    const files = fingerprintingFetch(folderFetch(TEST_MODEL_DIR));
    for (const file of ['tokenizer.json', 'onnx/model.onnx', 'lexembed.json']) await (await files.fetch(`/models/m/${file}`)).arrayBuffer();
    expect(await files.fingerprint(graphFileOf('fp32'))).toBe(modelFingerprint(TEST_MODEL_DIR));
  });

  it('reads a file the loader took from elsewhere (a cache) through the fallback; null when it cannot', async () => {
    const served: string[] = [];
    const files = fingerprintingFetch(folderFetch(TEST_MODEL_DIR, served));
    await (await files.fetch('/models/m/lexembed.json')).text();
    const direct = folderFetch(TEST_MODEL_DIR);
    expect(await files.fingerprint('onnx/model.onnx', (file) => direct(`/models/m/${file}`))).toBe(modelFingerprint(TEST_MODEL_DIR));
    expect(await fingerprintingFetch(folderFetch(TEST_MODEL_DIR)).fingerprint('onnx/model_fused.onnx', (file) => direct(`/models/m/${file}`))).toBeNull();
    expect(await fingerprintingFetch(folderFetch(TEST_MODEL_DIR)).fingerprint('onnx/model.onnx')).toBeNull();
  });

  it('hashes only whole files: a range request, a HEAD, a 404 or a file half read leave no digest', async () => {
    const files = fingerprintingFetch(folderFetch(TEST_MODEL_DIR));
    await (await files.fetch('/models/m/tokenizer.json')).arrayBuffer();
    await (await files.fetch('/models/m/lexembed.json')).text();
    await (await files.fetch('/models/m/onnx/model.onnx', { headers: { range: 'bytes=0-99' } })).arrayBuffer();
    await (await files.fetch('/models/m/onnx/model.onnx', { method: 'HEAD' })).arrayBuffer();
    await (await files.fetch('/models/m/onnx/missing.onnx')).arrayBuffer();
    expect(await files.fingerprint('onnx/model.onnx')).toBeNull();
    await (await files.fetch('/models/m/onnx/model.onnx')).arrayBuffer();
    expect(await files.fingerprint('onnx/model.onnx')).toBe(modelFingerprint(TEST_MODEL_DIR));

    const half = fingerprintingFetch(folderFetch(TEST_MODEL_DIR));
    await (await half.fetch('/models/m/onnx/model.onnx')).arrayBuffer();
    await (await half.fetch('/models/m/lexembed.json')).text();
    const reader = (await half.fetch('/models/m/tokenizer.json')).body!.getReader();
    await reader.read();
    await reader.cancel();
    expect(await half.fingerprint('onnx/model.onnx')).toBeNull();
  });

  it('names the files the fingerprint covers by their place in the folder', () => {
    expect(fingerprintedFile('https://cdn.example/models/legal-2-embedder/onnx/model_quantized.onnx?v=2')).toBe('onnx/model_quantized.onnx');
    expect(fingerprintedFile('/models/m/tokenizer.json')).toBe('tokenizer.json');
    expect(fingerprintedFile('/models/m/tokenizer_config.json')).toBeNull();
    expect(graphFileOf('q8')).toBe('onnx/model_quantized.onnx');
    expect(graphFileOf('fp32', 'fused')).toBe('onnx/model_fused.onnx');
  });
});

describe('the vectors fingerprint', () => {
  it("is the same streamed in (edge, browser) as read from disk (Node), for a folder with a sparse table and one without", async () => {
    for (const folder of [STATIC_MODEL_DIR, TEST_MODEL_DIR]) {
      const files = fingerprintingFetch(folderFetch(folder));
      for (const file of ['lexembed.json', 'onnx/model.onnx', 'tokenizer.json']) await (await files.fetch(`/models/m/${file}`)).arrayBuffer();
      const streamed = await files.fingerprints('onnx/model.onnx');
      expect(streamed, folder).toEqual({ fingerprint: modelFingerprint(folder), vectors: modelVectorsFingerprint(folder) });
      expect(streamed!.vectors.sparse === null, folder).toBe(folder === TEST_MODEL_DIR);
      for (const part of Object.values(streamed!.vectors).filter((v) => v !== null)) expect(part).toMatch(/^sha256:[0-9a-f]{16}$/);
    }
  }, 60_000);

  // The static model's lexembed.json: a sparse table with stem classes, term weights, word pairs and query neighbours.
  const settings = JSON.parse(readFileSync(join(STATIC_MODEL_DIR, 'lexembed.json'), 'utf8'));
  const graph = new Uint8Array(32).fill(7);
  const tokenizer = new TextEncoder().encode('{"model": {}}');
  const base = vectorsFingerprint(graph, tokenizer, settings);
  /** The settings with `path` (dotted) set to `value` (undefined: removed). */
  const changed = (path: string, value: unknown) => {
    const copy = structuredClone(settings);
    const keys = path.split('.');
    const last = keys.pop()!;
    const parent = keys.reduce((at, key) => (at[key] ??= {}), copy);
    if (value === undefined) delete parent[last];
    else parent[last] = value;
    return vectorsFingerprint(graph, tokenizer, copy);
  };
  /** A base64 table with its first 4-byte value changed. */
  const flipped = (base64: string) => {
    const bytes = Buffer.from(base64, 'base64');
    bytes[0] = bytes[0]! ^ 1;
    return bytes.toString('base64');
  };

  it('stays as it was when a release changes only the query side, the reranker or what describes the model', () => {
    const unchanged: [string, unknown][] = [
      ['name', 'legal-3-embedder'],
      ['id', 'legal-2-embedder-static-v4.7'],
      ['description', 'A new release.'],
      ['prompts.retrieval/query', 'query: '],
      ['dimensions.matryoshka', [64, 256]],
      ['tasks', ['retrieval/query', 'retrieval/document']],
      ['dtype', 'q8'],
      ['reranking.weights.lexical', 0.5],
      ['quantized', { file: 'onnx/model_quantized.onnx', dtype: 'q8', min_cosine: 0.999 }],
      ['sparse.recipe', 'bm25-stem-classes-v4'],
      ['sparse.expansion.weight', 0.45],
      ['sparse.expansion.similarities', flipped(settings.sparse.expansion.similarities)],
      ['sparse.expansion', undefined],
      // A default written out hashes as the default left out.
      ['document_form.full_width_only', undefined],
    ];
    for (const [path, value] of unchanged) expect(changed(path, value), path).toEqual(base);
    // No term weights weigh as the idf: the same vectors as weights equal to it.
    expect(changed('sparse.weight', undefined)).toEqual(changed('sparse.weight', settings.sparse.idf));
    const tiny = JSON.parse(readFileSync(join(TEST_MODEL_DIR, 'lexembed.json'), 'utf8'));
    expect(tiny.pooling).toBe('mean');
    expect(vectorsFingerprint(graph, tokenizer, { ...tiny, pooling: undefined })).toEqual(vectorsFingerprint(graph, tokenizer, tiny));
  });

  it("changes the document part for each setting that changes a document's dense vector, and the sparse part for each entry of its sparse table", () => {
    const documentSide: [string, unknown][] = [
      ['max_input_tokens', 256],
      ['pooling', 'mean'],
      ['dimensions.default', 1024],
      ['dimensions.max', 2048],
      ['prompts.retrieval/document', 'passage: '],
      ['document_form.marker', 3],
      ['document_form.replaces', 102],
      ['document_form.full_width_only', false],
      ['document_form', undefined],
    ];
    for (const [path, value] of documentSide) {
      const now = changed(path, value);
      expect([now.document !== base.document, now.graph, now.tokenizer, now.sparse], path).toEqual([true, base.graph, base.tokenizer, base.sparse]);
    }
    const sparseSide: [string, unknown][] = [
      ['sparse.k1', 1.3],
      ['sparse.b', 0.7],
      ['sparse.avg_len', 100],
      ['sparse.idf', flipped(settings.sparse.idf)],
      ['sparse.weight', flipped(settings.sparse.weight)],
      ['sparse.canonical', flipped(settings.sparse.canonical)],
      ['sparse.canonical', undefined],
      ['sparse.bigrams.weight', 0.5],
      ['sparse.bigrams.slots', 1000],
      ['sparse.bigrams.continuations', flipped(settings.sparse.bigrams.continuations)],
      ['sparse.bigrams', undefined],
    ];
    for (const [path, value] of sparseSide) {
      const now = changed(path, value);
      expect([now.sparse !== base.sparse, now.graph, now.tokenizer, now.document], path).toEqual([true, base.graph, base.tokenizer, base.document]);
    }
    expect(changed('sparse', undefined)).toEqual({ ...base, sparse: null });
  });

  it('changes the graph part with the graph file and the tokenizer part with tokenizer.json, each alone', () => {
    const otherGraph = vectorsFingerprint(new Uint8Array(32).fill(8), tokenizer, settings);
    expect(otherGraph).toEqual({ ...base, graph: expect.not.stringMatching(base.graph) });
    const otherTokenizer = vectorsFingerprint(graph, new TextEncoder().encode('{"model": {} }'), settings);
    expect(otherTokenizer).toEqual({ ...base, tokenizer: expect.not.stringMatching(base.tokenizer) });
  });
});
