// `lexembed serve`: the HTTP server on a model folder, with API keys from the key store.
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { z } from 'zod';
import type { KeyStore } from '../auth/store.ts';
import { createKey, createStoreAuthenticator } from '../auth/service.ts';
import { createApp, DEFAULT_MAX_BODY_BYTES } from '../http/app.ts';
import { BUNDLED_MODEL_DIR, checkModelFolder, loadModelFolder } from '../node/runtime/load-model.ts';
import { DEFAULT_SCHEDULER_LIMITS } from '../embedder/scheduler.ts';
import { CPU_AUTO_BATCH_SIZE, CPU_AUTO_BATCH_TOKENS, DEFAULT_SMALL_BATCH_TOKENS } from '../node/runtime/batch-plan.ts';
import { createServerMetrics } from '../node/metrics.ts';
import { startServer } from '../node/server.ts';
import { messageOf } from '../util/message-of.ts';
import { DEVICE_OPTIONS, deviceOptions } from './device-options.ts';
import { describeOptions, flag, integerIn, nonNegativeInteger, parseOptions, positiveInteger, type OptionValues } from './options.ts';
import { DEV_KEY_FILE, openServerStores, STORE_OPTIONS, storeDescription } from './store-options.ts';
import { createMeter } from '../usage/meter.ts';
import type { Embedder } from '../embedder/types.ts';
import { IndexError, openIndex, type SearchIndex } from '../search-index/index.ts';
import { checkNotInUse } from '../search-index/location.ts';
import { UsageError } from './options.ts';

const AUTO_OR_INT = 'must be "auto" or a positive integer';
const DRAIN_ERROR = 'must be a number of seconds from 0 to 600';
const autoOrPositiveInt = z.union([z.literal('auto'), z.coerce.number().int({ error: AUTO_OR_INT }).positive({ error: AUTO_OR_INT })], { error: AUTO_OR_INT });

export const SERVE_OPTIONS = {
  port: { env: ['LEXEMBED_PORT', 'PORT'], default: '8080', value: integerIn(0, 65535), help: 'TCP port to listen on' },
  host: { env: ['LEXEMBED_HOST', 'HOST'], default: '', help: 'address to bind (default 127.0.0.1; 0.0.0.0, all interfaces, in proxy mode)' },
  deployment: {
    env: 'LEXEMBED_DEPLOYMENT',
    default: 'api',
    value: z.enum(['api', 'proxy'], { error: 'must be "api" or "proxy"' }),
    help: 'api (public API with keys) or proxy (private deployment: /invocations, /ping, no keys)',
  },
  model: { env: 'LEXEMBED_MODEL', default: BUNDLED_MODEL_DIR, value: z.string().min(1, { error: 'must name a model folder' }), help: 'model folder (config.json, tokenizer.json, onnx/, lexembed.json)' },
  'model-name': { env: 'LEXEMBED_MODEL_NAME', default: '', help: 'model name the API accepts (default: from lexembed.json, legal-2-embedder)' },
  'docs-url': { env: 'LEXEMBED_DOCS_URL', default: '', help: 'base of problem type URIs (default: /docs on the origin each request came to)' },
  'max-body-bytes': { env: 'LEXEMBED_MAX_BODY_BYTES', default: String(DEFAULT_MAX_BODY_BYTES), value: positiveInteger, help: 'largest request body accepted (413 above)' },
  threads: { env: 'LEXEMBED_THREADS', default: '0', value: nonNegativeInteger, help: 'onnxruntime intra-op threads of each inference lane (0: one per core)' },
  lanes: {
    env: 'LEXEMBED_LANES',
    default: '1',
    value: integerIn(1, 64),
    help: "inference lanes on the cpu: worker threads each running its own copy of the model; 2 gave 1.05-1.17x the texts/s for requests of many texts on 2 cores, but fewer requests/s for many concurrent one-text requests (queries), and each lane costs the model's memory again (docs/gpu.md has the figures); webgpu runs 1",
  },
  'thread-spinning': {
    env: 'LEXEMBED_THREAD_SPINNING',
    default: 'off',
    value: z.enum(['on', 'off'], { error: 'must be "on" or "off"' }),
    help: "on: onnxruntime's CPU threads spin-wait for work between batches (its own default: a lone request answers sooner, but the cores burn while the server waits); off: they sleep (less CPU per text and more texts/s under load; docs/gpu.md has the figures, npm run bench:cpu measures them)",
  },
  'small-batch-tokens': {
    env: 'LEXEMBED_SMALL_BATCH_TOKENS',
    default: String(DEFAULT_SMALL_BATCH_TOKENS),
    value: nonNegativeInteger,
    help: "batches of at most this many padded tokens (texts x the longest) run on a one-thread copy of the model, so a lone query wakes no sleeping onnxruntime thread (on 2 cores one thread was faster up to 4x64 tokens); 0: off, which saves the copy's memory; cpu with --threads above 1 only",
  },
  'max-batch-tokens': {
    env: 'LEXEMBED_MAX_BATCH_TOKENS',
    default: 'auto',
    value: autoOrPositiveInt,
    help: `most padded tokens per model call, or auto: ${CPU_AUTO_BATCH_TOKENS} on cpu (src/embedder/batch-defaults.ts says why); on webgpu measured at start-up (the largest of 1024…32768 whose batch runs within 250 ms and still adds ≥ 10 % texts/s)`,
  },
  'max-batch-size': {
    env: 'LEXEMBED_MAX_BATCH_SIZE',
    default: 'auto',
    value: autoOrPositiveInt,
    help: `most texts per model call, or auto: ${CPU_AUTO_BATCH_SIZE}; on webgpu with a measured budget, that budget / 128 if more`,
  },
  'max-queue-tokens': { env: 'LEXEMBED_MAX_QUEUE_TOKENS', default: '262144', value: positiveInteger, help: 'tokens waiting before new requests get 503 + Retry-After' },
  ...DEVICE_OPTIONS,
  inference: {
    env: 'LEXEMBED_INFERENCE',
    default: 'worker',
    value: z.enum(['worker', 'main'], { error: 'must be "worker" or "main"' }),
    help: 'where the model runs: worker (a worker thread; keeps HTTP responsive) or main',
  },
  'no-auth': flag({ env: 'LEXEMBED_NO_AUTH', help: 'serve without API keys (local experiments only; warns)' }),
  'no-dev-key': flag({
    env: 'LEXEMBED_NO_DEV_KEY',
    help: 'never create a development key (by default the first start on an empty file store writes one to <data-dir>/dev-key.txt; a Redis store never gets one)',
  }),
  'no-usage': flag({
    env: 'LEXEMBED_NO_USAGE',
    help: "neither record usage (lexembed usage) nor apply keys' rate limits and accounts' monthly quotas (by default all three, in the key store: <data-dir>/usage.log, or Redis)",
  }),
  'drain-delay': {
    env: 'LEXEMBED_DRAIN_DELAY',
    default: '0',
    value: z.coerce.number({ error: DRAIN_ERROR }).min(0, { error: DRAIN_ERROR }).max(600, { error: DRAIN_ERROR }),
    help: 'seconds between SIGTERM and closing the listener, while /readyz already answers 503 and requests are still served (so a load balancer or Kubernetes stops sending first; e.g. 5 there)',
  },
  'cors-origins': {
    env: 'LEXEMBED_CORS_ORIGINS',
    default: '',
    value: z.string().refine((v) => v === '' || v.split(',').every((o) => o.trim() === '*' || /^https?:\/\/[^\s/]+$/.test(o.trim())), {
      error: 'must be * or a comma-separated list of origins like https://app.example.com',
    }),
    help: 'comma-separated origins browsers may call from, or * (default: CORS off)',
  },
  index: {
    env: 'LEXEMBED_INDEX',
    default: '',
    help: 'an index made by lexembed index (a folder or postgres:// URL) to serve POST /v1/search on, kept open with the model (lexembed search <index> --remote <this server> asks it); the index must have been made with --model',
  },
  ...STORE_OPTIONS,
};




export const SERVE_USAGE = `Usage: lexembed serve [options]

Serves POST /v1/embeddings (and GET /health, /docs) on a model folder; with --index, also
POST /v1/search on that index, warm (the model and the index stay open):

  lexembed serve --index contracts.index
  lexembed search contracts.index "governing law" --remote http://127.0.0.1:8080/v1

Every option can also be set by its environment variable.

Options:
${describeOptions(SERVE_OPTIONS)}
`;

const DRAIN_TIMEOUT_MS = 10_000;
/** A key hash no key has: /readyz looks it up to see that the key store answers. */
const READINESS_PROBE_HASH = '0'.repeat(64);

export async function serveCommand(args: string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const { values: config, help } = parseOptions('lexembed serve', args, SERVE_OPTIONS);
  if (help) return (out(SERVE_USAGE), 0);
  // One JSON object per line: startup notices and one record per request (never texts or keys).
  const logRecord = (level: 'info' | 'warn' | 'error', record: Record<string, unknown>) => out(JSON.stringify({ time: new Date().toISOString(), level, ...record }));
  const log = (msg: string) => logRecord('info', { msg });
  // Listen for signals before anything slow, so an early SIGTERM still shuts down cleanly.
  const stopped = new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });

  // A folder that is not a model folder is refused before the server listens (the load itself runs after).
  checkModelFolder(config.model);
  if (config.index) refuseBusyIndex(config.index);
  const proxyMode = config.deployment === 'proxy';
  const host = config.host || (proxyMode ? '0.0.0.0' : '127.0.0.1');
  // Usage lives where the keys do; without keys there is no one to meter.
  const stores = config['no-auth'] || proxyMode ? null : openServerStores(config, { usage: !config['no-usage'] });
  const store = stores?.keys ?? null;
  const usageStore = stores?.usage ?? null;
  await announceAuthentication(config, store, proxyMode, { log, logRecord, err });

  let draining = false;
  const started = Date.now();
  const metrics = createServerMetrics();
  const embedder = loadModelFolder(config.model, {
    modelName: config['model-name'] || undefined,
    threads: config.threads || undefined,
    lanes: config.lanes,
    threadSpinning: config['thread-spinning'] === 'on',
    smallBatchTokens: config['small-batch-tokens'],
    inference: config.inference,
    ...deviceOptions(config),
    limits: { ...DEFAULT_SCHEDULER_LIMITS, maxQueueTokens: config['max-queue-tokens'] },
    batch: { tokens: config['max-batch-tokens'], size: config['max-batch-size'] },
    hooks: { onBatch: metrics.observeBatch, onQueueDepth: metrics.setQueueDepth },
  });
  embedder.catch(() => {});
  const index = config.index ? openServedIndex(config.index, embedder) : undefined;
  const app = createApp({
    search: index,
    embedder,
    authenticate: store ? createStoreAuthenticator(store, { onStoreError: keyStoreErrorLog(logRecord) }) : undefined,
    usage: usageStore ? createMeter(usageStore, { onStoreError: usageStoreErrorLog(logRecord) }) : undefined,
    docsUrl: config['docs-url'] || undefined,
    maxBodyBytes: config['max-body-bytes'],
    deployment: config.deployment,
    metrics,
    // 503 is an expected state (loading, full queue, draining), not a fault: warn, so alerts on errors stay quiet.
    log: (record) => logRecord(record.status === 503 ? 'warn' : record.status >= 500 ? 'error' : 'info', { ...record }),
    readiness: {
      draining: () => draining,
      // One key lookup: the cheapest call that proves the store answers (Redis: one GET).
      checkStore: store ? () => store.findKeyByHash(READINESS_PROBE_HASH).then(() => {}) : undefined,
    },
    corsOrigins: config['cors-origins'] ? config['cors-origins'].split(',').map((o) => o.trim()) : [],
    onUnexpectedError: (error) => logRecord('error', { msg: 'unexpected error', error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) }),
  });
  const server = await startServer(app, { port: config.port, host, docsUrl: config['docs-url'] || undefined });
  log(`listening on ${server.url} (POST /v1/embeddings${index ? ', POST /v1/search' : ''}, GET /health)${store ? ` with API keys from the ${storeDescription(config)}` : ''}`);
  // Everything opened, closed in reverse however the run ends.
  const closeRest = async () => {
    await (await index?.catch(() => undefined))?.close();
    await (await embedder.catch(() => undefined))?.dispose();
    await usageStore?.close();
    await store?.close();
  };
  const loaded = await Promise.race([embedder.then((e) => ({ e }), (error: Error) => ({ error })), stopped.then((signal) => ({ signal }))]);
  const failure = 'error' in loaded ? `cannot load the model: ${loaded.error.message}` : 'e' in loaded ? await announceLoaded(loaded.e, { started, config, metrics, index, log, logRecord }) : null;
  if (failure) {
    err(`lexembed serve: ${failure}`);
    await server.close();
    await closeRest();
    return 'error' in loaded ? 1 : 2;
  }
  const signal = await stopped;
  draining = true;
  if (config['drain-delay'] > 0) {
    log(`${signal}: /readyz answers 503 now; still serving for ${config['drain-delay']} s (--drain-delay) so the load balancer stops sending first`);
    await new Promise((r) => setTimeout(r, config['drain-delay'] * 1000));
  }
  log(`${signal}: closing (no new connections; finishing every request received, at most ${DRAIN_TIMEOUT_MS / 1000} s)`);
  const { unfinished } = await server.close(DRAIN_TIMEOUT_MS);
  if (unfinished) logRecord('error', { msg: `drain timed out: answered ${unfinished} unfinished request(s) with 503 Retry-After` });
  log('closed: every received request was answered');
  await closeRest();
  return 0;
}

/** A folder index another process holds is refused before the model loads (a usage error, exit 2). */
function refuseBusyIndex(location: string): void {
  try {
    checkNotInUse(location);
  } catch (error) {
    if (error instanceof IndexError) throw new UsageError(`lexembed serve: --index: ${error.message}`);
    throw error;
  }
}

/** The index, opened (not made) once the model has loaded: it must be the model that made it. */
function openServedIndex(location: string, embedder: Promise<Embedder>): Promise<SearchIndex> {
  const index = embedder.then((e) => openIndex(location, { embedder: e, create: false }));
  index.catch(() => {}); // announceLoaded reports it
  return index;
}

/** Logs the loaded model and the opened index; what went wrong where the index cannot be opened. */
async function announceLoaded(
  e: Embedder,
  { started, config, metrics, index, log, logRecord }: { started: number; config: OptionValues<typeof SERVE_OPTIONS>; metrics: ReturnType<typeof createServerMetrics>; index: Promise<SearchIndex> | undefined; log: (msg: string) => void; logRecord: (level: 'info', record: Record<string, unknown>) => void },
): Promise<string | null> {
  metrics.setModelLoadSeconds((Date.now() - started) / 1000);
  // The device line comes first: "model … loaded" is the line that says start-up is done (or the index line, with --index).
  if (e.runtime.deviceReason) logRecord('info', { msg: `device: ${e.runtime.deviceReason}`, device_requested: config.device });
  log(`model "${e.modelName}" loaded from ${config.model} on ${e.runtime.backendName} in ${Date.now() - started} ms`);
  if (!index) return null;
  try {
    const opened = await index;
    const { files, passages } = await opened.stats();
    log(`index ${opened.where} open: ${files} files, ${passages} passages (POST /v1/search)`);
    return null;
  } catch (error) {
    return `--index: ${messageOf(error)}`;
  }
}

/** Says how requests are authenticated; on a first start with an empty file store, makes the development key. */
async function announceAuthentication(
  config: OptionValues<typeof SERVE_OPTIONS>,
  store: KeyStore | null,
  proxyMode: boolean,
  { log, logRecord, err }: { log: (msg: string) => void; logRecord: (level: 'warn', record: Record<string, unknown>) => void; err: (s: string) => void },
): Promise<void> {
  if (proxyMode) {
    log('proxy deployment: POST /invocations and GET /ping; API keys are not required and are ignored');
  } else if (store) {
    if ((await store.listKeys()).length === 0) {
      if (config.store === 'file' && !config['no-dev-key']) {
        const { record, file } = await createDevKey(store, config['data-dir']);
        // In the image (LEXEMBED_IN_CONTAINER, set by the Dockerfile) the file is inside the container, not on the host.
        const read = process.env.LEXEMBED_IN_CONTAINER ? `docker exec <container> cat ${file}` : `cat ${file}`;
        const where = process.env.LEXEMBED_IN_CONTAINER ? `${file} inside the container` : file;
        log(`the key store (${storeDescription(config)}) was empty: created development key ${record.id} for account "local"; the key is in ${where} (readable by you alone; never logged): export LEXEMBED_API_KEY=$(${read})`);
      } else {
        logRecord('warn', {
          msg: `the ${storeDescription(config)} has no keys yet, so every request gets 401: create one with lexembed keys create --account <id>${config.store === 'redis' ? ' --store redis --redis-url <url>' : ` --data-dir ${config['data-dir']}`}${config.store === 'redis' ? ' (no development key is made in a shared store)' : ''}`,
        });
      }
    }
  } else {
    err('lexembed: WARNING: authentication is OFF (--no-auth). Anyone who can reach this server can use it. Use only for local experiments.');
    logRecord('warn', { msg: 'authentication is off (--no-auth)' });
  }
}

/** A key for account "local", written to <data-dir>/dev-key.txt (mode 600), not to any log. */
async function createDevKey(store: KeyStore, dataDir: string) {
  const { key, record } = await createKey(store, { account: 'local' });
  const file = resolve(dataDir, DEV_KEY_FILE);
  await writeFile(file, `${key}\n`, { mode: 0o600 });
  return { record, file };
}

/** Usage-store failures: checks as the key store's (each request gets its 503); a lost record every time. */
function usageStoreErrorLog(logRecord: (level: 'error', record: Record<string, unknown>) => void) {
  const checks = keyStoreErrorLog(logRecord, 'the usage store cannot be reached: metered requests get 503 until it can');
  return (error: unknown, during: 'check' | 'record') =>
    during === 'check' ? checks(error) : logRecord('error', { msg: 'a request was answered but its usage could not be recorded', error: messageOf(error) });
}

/** Logs key-store failures as they start and then at most every 10 s (each request still gets its 503). */
function keyStoreErrorLog(logRecord: (level: 'error', record: Record<string, unknown>) => void, msg = 'the key store cannot be reached: requests get 503 until it can') {
  let lastLogged = -Infinity;
  let since = 0;
  return (error: unknown) => {
    since++;
    if (Date.now() - lastLogged < 10_000) return;
    logRecord('error', { msg, error: messageOf(error), failed_lookups: since });
    lastLogged = Date.now();
    since = 0;
  };
}
