// (d) What a user would otherwise write: one transformers.js pipeline call per request.
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { env, pipeline } from '@huggingface/transformers';
import { availableParallelism } from 'node:os';
import { basename, dirname, resolve } from 'node:path';

const modelDir = resolve(process.argv[2] ?? '');
const port = Number(process.argv[3] ?? 0);
env.allowRemoteModels = false;
env.localModelPath = dirname(modelDir) + '/';
const extractor = await pipeline('feature-extraction', basename(modelDir), {
  dtype: 'fp32',
  device: 'cpu',
  session_options: { intraOpNumThreads: availableParallelism(), interOpNumThreads: 1 },
});
const app = new Hono();
app.get('/health', (c) => c.json({ status: 'ok' }));
app.post('/v1/embeddings', async (c) => {
  const body = await c.req.json();
  const texts: string[] = typeof body.texts === 'string' ? [body.texts] : body.texts;
  const output = await extractor(texts, { pooling: 'mean', normalize: true, truncation: true, max_length: 512 } as never);
  const data = output.tolist() as number[][];
  return c.json({ embeddings: data.map((embedding, index) => ({ index, embedding })), usage: { input_tokens: 0 } });
});
serve({ fetch: app.fetch, port, hostname: '127.0.0.1' }, (info) => console.log(`naive listening on http://127.0.0.1:${info.port}`));
