// The model fingerprint outside Node (src/embedder/fingerprint.ts): files hashed as they stream in
// through the loader's fetch give the value Node's modelFingerprint reads from disk; SHA-256 in
// plain TypeScript (sha256.ts) equals node:crypto's.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fingerprintedFile, fingerprintingFetch, graphFileOf } from '../../src/embedder/fingerprint.ts';
import { Sha256 } from '../../src/embedder/sha256.ts';
import { modelFingerprint, TEST_MODEL_DIR } from '../../src/node/runtime/load-model.ts';

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
