// /openapi.json is valid OpenAPI 3.1 (checked by a real validator) and covers every route and
// every problem of the app; /docs renders it with no external assets.
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { PROBLEM_CATALOGUE, problem } from '../../src/contract/index.ts';
import { createApp, type AppMetrics } from '../../src/http/app.ts';
import { createEmbedder } from '../../src/embedder/embedder.ts';
import { createMeter } from '../../src/usage/meter.ts';
import { createMemoryUsageStore } from '../../src/usage/stores/memory.ts';
import { createFakeBackend, fakeSettings } from '../support/fake-backend.ts';

const metrics: AppMetrics = { observeRequest() {}, render: async () => ({ contentType: 'text/plain', body: '' }) };
const configurations = {
  api: createApp({ embedder: createEmbedder(fakeSettings(), createFakeBackend()), authenticate: () => null, usage: createMeter(createMemoryUsageStore()), metrics }),
  proxy: createApp({ embedder: createEmbedder(fakeSettings(), createFakeBackend()), deployment: 'proxy', metrics }),
};

describe.each(Object.entries(configurations))('OpenAPI document (%s mode)', (mode, app) => {
  it('is valid OpenAPI 3.1', async () => {
    const doc = await (await app.request('/openapi.json')).json();
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.openapi).toBe('3.1.0');
  });

  it('lists every route the app serves, with its method', async () => {
    const doc = await (await app.request('/openapi.json')).json();
    const served = app.routes.filter((r) => r.method !== 'ALL').map((r) => `${r.method.toLowerCase()} ${r.path}`);
    expect(served.length).toBeGreaterThan(5);
    for (const route of served) {
      const [method = '', path = ''] = route.split(' ');
      expect(doc.paths[path]?.[method], `${route} missing from /openapi.json`).toBeDefined();
    }
  });

  it('documents every problem title with its status and type anchor', async () => {
    const text = JSON.stringify(await (await app.request('/openapi.json')).json());
    const applicable = Object.entries(PROBLEM_CATALOGUE).filter(([code]) => mode === 'api' || !['incorrectKey', 'unauthorizedKey', 'accountOverdue', 'noSubscription', 'accessForbidden', 'rateLimited', 'quotaExceeded'].includes(code));
    for (const [, entry] of applicable) {
      expect(text).toContain(`"title":"${entry.title}","status":${entry.status}`);
      expect(text).toContain(`/api-reference/errors#${entry.anchor}`);
    }
  });

  it('describes the request from the contract schema, field by field', async () => {
    const doc = await (await app.request('/openapi.json')).json();
    const req = doc.components.schemas.EmbeddingRequest;
    expect(req.required).toEqual(['model', 'texts']);
    expect(req.additionalProperties).toBe(false);
    expect(req.properties.model.const).toBe('legal-2-embedder');
    expect(req.properties.texts.anyOf[1]).toMatchObject({ type: 'array', minItems: 1, maxItems: 128 });
    expect(req.properties.overflow_strategy.default).toBe('drop_end');
  });

  it('serves /docs from local content only, linking the errors page', async () => {
    const res = await app.request('/docs');
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await res.text();
    expect(html).toContain('/docs/api-reference/errors');
    expect(html).toContain('/v1/embeddings');
    expect(html).toContain('overflow_strategy');
    expect(html).not.toMatch(/<script|<link[^>]+href="https?:|src="https?:/);
  });
});

it('a problem the app answers with is one the document lists (sample over HTTP)', async () => {
  const app = createApp({ embedder: createEmbedder(fakeSettings(), createFakeBackend()), authenticate: () => problem('noSubscription', 'x') });
  const doc = await (await app.request('/openapi.json')).json();
  const res = await app.request('/v1/embeddings', { method: 'POST' });
  const body = await res.json();
  const listed = doc.paths['/v1/embeddings'].post.responses[String(res.status)].content['application/problem+json'].examples;
  expect(Object.values(listed).map((e: any) => e.value.title)).toContain(body.title);
});
