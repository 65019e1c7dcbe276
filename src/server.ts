// lexembed/server: the Node server as a library, for those who build their own process around it
// (the `lexembed` command of @lexembed/server runs `main`). Needs the server's packages:
// @huggingface/transformers (onnxruntime-node), hono, @hono/node-server, prom-client, and ioredis
// for a Redis key store: `npm install @lexembed/server` brings them all.
export { main } from './cli/index.ts';
export { createApp, DEFAULT_MAX_BODY_BYTES, type AppOptions, type Authenticate } from './http/app.ts';
export { loadModelFolder, BUNDLED_MODEL_DIR, STATIC_MODEL_DIR, type LoadModelOptions } from './node/runtime/load-model.ts';
export { startServer, type FetchApp, type RunningServer } from './node/server.ts';
