// Prometheus metrics of the Node server (prom-client): requests by route and status, latency,
// tokens embedded, batch sizes, queue depth, model load time and the process metrics.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { AppMetrics } from '../http/app.ts';

export interface ServerMetrics extends AppMetrics {
  observeBatch(size: number, paddedTokens: number): void;
  setQueueDepth(texts: number): void;
  setModelLoadSeconds(seconds: number): void;
}

export function createServerMetrics(): ServerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'lexembed_' });
  const requests = new Counter({ name: 'lexembed_http_requests_total', help: 'HTTP requests by route, method and status', labelNames: ['route', 'method', 'status'], registers: [registry] });
  const latency = new Histogram({
    name: 'lexembed_http_request_duration_seconds',
    help: 'HTTP request latency by route',
    labelNames: ['route', 'method'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const tokens = new Counter({ name: 'lexembed_tokens_embedded_total', help: 'Tokens input to the model by successful requests', registers: [registry] });
  const batchSize = new Histogram({ name: 'lexembed_batch_size', help: 'Sequences per model call', buckets: [1, 2, 4, 8, 16, 32, 64, 128], registers: [registry] });
  const batchTokens = new Histogram({ name: 'lexembed_batch_padded_tokens', help: 'Padded tokens per model call', buckets: [16, 64, 256, 1024, 4096, 16384, 65536], registers: [registry] });
  const queueDepth = new Gauge({ name: 'lexembed_queue_depth', help: 'Texts accepted and waiting for the model', registers: [registry] });
  const modelLoad = new Gauge({ name: 'lexembed_model_load_seconds', help: 'Time taken to load the model', registers: [registry] });

  return {
    observeRequest({ route, method, status, seconds, inputTokens }) {
      requests.inc({ route, method, status: String(status) });
      latency.observe({ route, method }, seconds);
      if (inputTokens && status < 400) tokens.inc(inputTokens);
    },
    async render() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
    observeBatch(size, paddedTokens) {
      batchSize.observe(size);
      batchTokens.observe(paddedTokens);
    },
    setQueueDepth: (texts) => queueDepth.set(texts),
    setModelLoadSeconds: (seconds) => modelLoad.set(seconds),
  };
}
