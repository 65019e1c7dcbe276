// npm run edge:dev: the built edge Worker (edge/dist, from npm run edge:build) in workerd on this
// machine, through miniflare, as Cloudflare would run it: the model folder's files come through
// the MODEL service binding, API keys from a key store's keys.json (LEXEMBED_KEYS), or none.
//
//   npm run edge:build && npm run edge:dev -- [--port 8787] [--model models/legal-2-embedder-static]
//                                             [--keys .lexembed/keys.json | --no-auth]
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Miniflare } from 'miniflare';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'edge', 'dist');
const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '8787' },
    model: { type: 'string', default: join(root, 'models', 'legal-2-embedder-static') },
    keys: { type: 'string', default: join(root, '.lexembed', 'keys.json') },
    'no-auth': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  console.log(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(0, 6).join('\n').replace(/^\/\/ ?/gm, ''));
  process.exit(0);
}
if (!existsSync(join(dist, 'worker.mjs'))) {
  console.error('edge:dev: edge/dist/worker.mjs is missing; run npm run edge:build first');
  process.exit(2);
}
const model = resolve(values.model);
if (!existsSync(join(model, 'lexembed.json'))) {
  console.error(`edge:dev: ${model} is not a model folder (no lexembed.json); pass --model <folder>`);
  process.exit(2);
}
const bindings = {};
if (values['no-auth']) bindings.LEXEMBED_NO_AUTH = 'true';
else if (existsSync(values.keys)) bindings.LEXEMBED_KEYS = readFileSync(values.keys, 'utf8');
else {
  console.error(`edge:dev: no key store at ${values.keys}: create a key (npx lexembed keys create --account me), pass --keys <keys.json>, or --no-auth`);
  process.exit(2);
}

const mf = new Miniflare({
  modules: [
    { type: 'ESModule', path: join(dist, 'worker.mjs') },
    { type: 'CompiledWasm', path: join(dist, 'ort-wasm-simd-threaded.asyncify.wasm') },
  ],
  modulesRoot: dist,
  compatibilityDate: '2026-04-01',
  cf: false,
  host: '127.0.0.1',
  port: Number(values.port),
  bindings,
  serviceBindings: {
    MODEL: async (request) => {
      const file = new URL(request.url).pathname.slice(1);
      const path = resolve(model, file);
      if (!path.startsWith(model + '/') || !existsSync(path)) return new Response('not found', { status: 404 });
      return new Response(readFileSync(path));
    },
  },
});
const url = await mf.ready;
// The name requests must send is the folder's own (legal-2-embedder-static for the default folder).
const modelName = (() => { try { return JSON.parse(readFileSync(join(model, 'lexembed.json'), 'utf8')).name; } catch { return null; } })();
console.log(`edge Worker (workerd) on ${url} serving ${model}${modelName ? ` as model "${modelName}"` : ''}${values['no-auth'] ? ' without API keys' : ` with the keys of ${values.keys}`}; Ctrl-C stops it`);
const stop = async () => (await mf.dispose(), process.exit(0));
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
