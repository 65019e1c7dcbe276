// The two bundled models make unrelated vectors, so each answers to a name of its own: the hybrid to
// the spec's legal-2-embedder, the static model to legal-2-embedder-static, and a request for the
// other name is refused with a problem that names the model served. Each also shows which weights it
// is (model_id) and a fingerprint of them, in /health, on every answered operation and in
// /openai/v1/models, so an index can be checked against a server.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/http/app.ts';
import { BUNDLED_MODEL_DIR, loadModelFolder, modelFingerprint, STATIC_MODEL_DIR, TEST_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import type { Embedder } from '../../src/embedder/types.ts';

const post = (body: unknown) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const work = mkdtempSync(join(tmpdir(), 'lexembed-identity-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the bundled hybrid and static models', () => {
  let hybrid: Embedder;
  let sttc: Embedder;
  beforeAll(async () => void ([hybrid, sttc] = await Promise.all([loadModelFolder(BUNDLED_MODEL_DIR, { inference: 'main' }), loadModelFolder(STATIC_MODEL_DIR, { inference: 'main' })])), 120_000);
  afterAll(async () => void (await Promise.all([hybrid?.dispose(), sttc?.dispose()])));

  it('answer to different API names, and have different ids and fingerprints', () => {
    expect(hybrid.modelName).toBe('legal-2-embedder');
    expect(sttc.modelName).toBe('legal-2-embedder-static');
    expect(hybrid.settings.id).toBe('legal-2-embedder-hybrid-v4.6');
    expect(sttc.settings.id).toBe('legal-2-embedder-static-v4.6');
    expect(hybrid.settings.fingerprint).toMatch(/^sha256:[0-9a-f]{16}$/);
    expect(sttc.settings.fingerprint).toMatch(/^sha256:[0-9a-f]{16}$/);
    expect(hybrid.settings.fingerprint).not.toBe(sttc.settings.fingerprint);
  });

  it('show them in /health, on embeddings responses and in /openai/v1/models', async () => {
    for (const embedder of [hybrid, sttc]) {
      const app = createApp({ embedder });
      const { id: model_id, fingerprint } = embedder.settings;
      const res = await app.request('/v1/embeddings', post({ model: embedder.modelName, texts: ['Notice of termination'] }));
      expect(res.status).toBe(200);
      expect(await (await app.request('/health')).json()).toMatchObject({ status: 'ok', model: embedder.modelName, model_id, fingerprint });
      expect(res.headers.get('x-lexembed-model-id')).toBe(embedder.settings.id);
      expect(res.headers.get('x-lexembed-model-fingerprint')).toBe(fingerprint);
      const models = await (await app.request('/openai/v1/models')).json();
      for (const m of models.data) expect(m).toMatchObject({ owned_by: 'lexembed', lexembed_model_id: embedder.settings.id, fingerprint });
      // A refused request says nothing about weights it did not use.
      const bad = await app.request('/v1/embeddings', post({ model: embedder.modelName, texts: [] }));
      expect(bad.status).toBe(400);
      expect(bad.headers.get('x-lexembed-model-fingerprint')).toBeNull();
    }
  });

  it("refuse the other model's name on every route that takes one, naming the model served", async () => {
    for (const [embedder, other] of [[hybrid, sttc], [sttc, hybrid]] as const) {
      const app = createApp({ embedder });
      for (const [path, body] of [
        ['/v1/embeddings', { model: other.modelName, texts: ['Notice of termination'] }],
        ['/v1/embeddings/sparse', { model: other.modelName, texts: ['Notice of termination'] }],
        ['/v1/tokenize', { model: other.modelName, texts: ['Notice of termination'] }],
        ['/openai/v1/embeddings', { model: other.modelName, input: 'Notice of termination' }],
      ] as const) {
        const res = await app.request(path, post(body));
        expect(res.status, path).toBe(400);
        const refusal = (await res.json()) as { detail?: string; error?: { message: string } };
        expect(refusal.detail ?? refusal.error?.message, path).toMatch(new RegExp(`^model must be (one of )?"${embedder.modelName}"`));
        expect(res.headers.get('x-lexembed-model-fingerprint'), path).toBeNull();
      }
    }
  });
});

describe('modelFingerprint', () => {
  it('changes when the weights, the tokenizer or the settings change, and only then', () => {
    const copy = join(work, 'tiny');
    cpSync(TEST_MODEL_DIR, copy, { recursive: true });
    const original = modelFingerprint(TEST_MODEL_DIR);
    expect(modelFingerprint(copy)).toBe(original);
    const onnx = join(copy, 'onnx', 'model.onnx');
    const bytes = readFileSync(onnx);
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 1, bytes.length - 1);
    writeFileSync(onnx, bytes);
    const changedWeights = modelFingerprint(copy);
    expect(changedWeights).not.toBe(original);
    const settings = join(copy, 'lexembed.json');
    writeFileSync(settings, JSON.stringify({ ...JSON.parse(readFileSync(settings, 'utf8')), max_input_tokens: 64 }));
    expect(modelFingerprint(copy)).not.toBe(changedWeights);
  });
});
