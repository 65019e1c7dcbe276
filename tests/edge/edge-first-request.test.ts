// The edge entry's model load in workerd, whatever the first request is: a platform's health probe
// (/health) and a request without a key (401) start the load and the next embedding is answered;
// a load that fails is reported as such and tried again by a later request, never leaving one
// waiting without end. Each case runs a fresh Worker (a fresh isolate, as after a deploy).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Miniflare } from 'miniflare';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../src/auth/service.ts';
import { createMemoryKeyStore } from '../../src/auth/stores/memory.ts';
import { PROJECT_ROOT, STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';

const DIST = join(PROJECT_ROOT, 'edge', 'dist');
/** Far beyond the static model's load here (seconds), far below "without end". */
const ANSWER_WITHIN_MS = 90_000;
let mf: Miniflare | undefined;

beforeAll(async () => {
  await import(join(PROJECT_ROOT, 'edge', 'build.mjs'));
}, 120_000);
afterEach(async () => {
  await mf?.dispose();
  mf = undefined;
});

/** A Worker whose MODEL binding serves the static model folder; `failFirst` files answer 500 the first time each is asked for. */
function worker(bindings: Record<string, string>, failFirst: string[] = []) {
  const failed = new Set<string>();
  return new Miniflare({
    modules: [
      { type: 'ESModule', path: join(DIST, 'worker.mjs') },
      { type: 'CompiledWasm', path: join(DIST, 'ort-wasm-simd-threaded.asyncify.wasm') },
    ],
    modulesRoot: DIST,
    compatibilityDate: '2026-04-01',
    cf: false,
    bindings,
    serviceBindings: {
      MODEL: async (request: { url: string }) => {
        const file = new URL(request.url).pathname.slice(1);
        if (failFirst.includes(file) && !failed.has(file)) {
          failed.add(file);
          return new Response('storage hiccup', { status: 500 });
        }
        try {
          return new Response(readFileSync(join(STATIC_MODEL_DIR, file)));
        } catch {
          return new Response('not found', { status: 404 });
        }
      },
    },
  });
}

const embed = (authorization?: string) =>
  mf!.dispatchFetch('http://edge.local/v1/embeddings', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
    body: JSON.stringify({ model: 'legal-2-embedder-static', texts: ['Notice of termination of a lease'] }),
    signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
  });

/** Embeds until the answer is not a 503 (the model loading), each request bounded in time. */
async function embedWhenLoaded(authorization?: string) {
  for (;;) {
    const res = await embed(authorization);
    if (res.status !== 503) return res;
    await res.arrayBuffer();
  }
}

describe('edge worker: the first request of any kind starts the model load', () => {
  it('after /health first (503 while loading), the next embedding is answered', async () => {
    mf = worker({ LEXEMBED_NO_AUTH: 'true' });
    const health = await mf.dispatchFetch('http://edge.local/health', { signal: AbortSignal.timeout(ANSWER_WITHIN_MS) });
    expect([200, 503]).toContain(health.status);
    await health.arrayBuffer();
    const res = await embed();
    expect(res.status).toBe(200);
    expect(((await res.json()) as { embeddings: unknown[] }).embeddings).toHaveLength(1);
    expect((await mf.dispatchFetch('http://edge.local/health')).status).toBe(200);
  }, 2 * ANSWER_WITHIN_MS);

  it('after a 401 first (no key), the next embedding with a key is answered', async () => {
    const store = createMemoryKeyStore();
    const { key } = await createKey(store, { account: 'edge', resources: ['embeddings'] });
    mf = worker({ LEXEMBED_KEYS: JSON.stringify({ keys: await store.listKeys(), accounts: await store.listAccounts() }) });
    const refused = await embed();
    expect(refused.status).toBe(401);
    await refused.arrayBuffer();
    const res = await embed(`Bearer ${key}`);
    expect(res.status).toBe(200);
  }, 2 * ANSWER_WITHIN_MS);

  it('a load that fails is answered 503 saying so, and a later request loads the model again', async () => {
    mf = worker({ LEXEMBED_NO_AUTH: 'true' }, ['onnx/model.onnx']);
    const first = await embed();
    expect(first.status).toBe(503);
    const problem = (await first.json()) as { detail: string };
    expect(problem.detail).toBe('the model failed to load (onnx/model.onnx could not be fetched: the MODEL binding answered 500); the next request tries again');
    const res = await embedWhenLoaded();
    expect(res.status).toBe(200);
  }, 3 * ANSWER_WITHIN_MS);
});
