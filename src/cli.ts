// The `lexembed` command line: `lexembed serve` runs the HTTP server on a model folder.
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { createApp, DEFAULT_MAX_BODY_BYTES } from './http/app.ts';
import { BUNDLED_MODEL_DIR, loadModelFolder } from './node/load-model.ts';
import { startServer } from './node/server.ts';

const SERVE_OPTIONS = {
  port: { env: 'PORT', default: '8080', help: 'TCP port to listen on' },
  host: { env: 'HOST', default: '127.0.0.1', help: 'address to bind (0.0.0.0 for all interfaces)' },
  model: { env: 'LEXEMBED_MODEL', default: BUNDLED_MODEL_DIR, help: 'model folder (config.json, tokenizer.json, onnx/, lexembed.json)' },
  'model-name': { env: 'LEXEMBED_MODEL_NAME', default: '', help: 'model name the API accepts (default: the settings file name, legal-2-embedder)' },
  'docs-url': { env: 'LEXEMBED_DOCS_URL', default: '/docs', help: 'base of problem type URIs' },
  'max-body-bytes': { env: 'LEXEMBED_MAX_BODY_BYTES', default: String(DEFAULT_MAX_BODY_BYTES), help: 'largest request body accepted (413 above)' },
  threads: { env: 'LEXEMBED_THREADS', default: '0', help: 'onnxruntime intra-op threads (0: one per core)' },
} as const;

const ServeConfigSchema = z.object({
  port: z.coerce.number({ error: 'must be an integer from 0 to 65535' }).int().min(0).max(65535),
  host: z.string().min(1),
  model: z.string().min(1),
  'model-name': z.string(),
  'docs-url': z.string().min(1),
  'max-body-bytes': z.coerce.number({ error: 'must be a positive integer' }).int().positive(),
  threads: z.coerce.number({ error: 'must be a non-negative integer' }).int().min(0),
});

const USAGE = `lexembed — self-hosted legal embedding API

Usage:
  lexembed serve [options]   serve POST /v1/embeddings
  lexembed --help

serve options (flag, environment variable, default):
${Object.entries(SERVE_OPTIONS)
  .map(([name, o]) => `  --${name.padEnd(16)} ${o.env.padEnd(24)} ${o.help}\n  ${' '.repeat(16 + 27)}default: ${o.default || '(none)'}`)
  .join('\n')}
`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(USAGE);
    return command ? 0 : 1;
  }
  if (command !== 'serve') {
    process.stderr.write(`lexembed: unknown command "${command}"; run lexembed --help\n`);
    return 2;
  }
  return serveCommand(rest);
}

async function serveCommand(args: string[]): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args,
      options: { ...Object.fromEntries(Object.keys(SERVE_OPTIONS).map((k) => [k, { type: 'string' as const }])), help: { type: 'boolean', short: 'h' } },
      strict: true,
    }).values;
  } catch (error) {
    process.stderr.write(`lexembed serve: ${(error as Error).message}; run lexembed serve --help\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const raw = Object.fromEntries(
    Object.entries(SERVE_OPTIONS).map(([name, o]) => [name, (values[name] as string | undefined) ?? process.env[o.env] ?? o.default]),
  );
  const parsed = ServeConfigSchema.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const name = String(issue.path[0]) as keyof typeof SERVE_OPTIONS;
      process.stderr.write(`lexembed serve: --${name} (${SERVE_OPTIONS[name].env}) ${issue.message}; got "${raw[name]}"\n`);
    }
    return 2;
  }
  const config = parsed.data;
  // Listen for signals before anything slow, so an early SIGTERM still shuts down cleanly.
  const stopped = new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  const started = Date.now();
  const embedder = loadModelFolder(config.model, {
    modelName: config['model-name'] || undefined,
    threads: config.threads || undefined,
  });
  embedder.catch(() => {});
  const app = createApp({ embedder, docsUrl: config['docs-url'], maxBodyBytes: config['max-body-bytes'] });
  const server = await startServer(app, { port: config.port, host: config.host });
  log(`listening on ${server.url} (POST /v1/embeddings, GET /health)`);
  const loaded = await Promise.race([embedder.then((e) => ({ e }), (error: Error) => ({ error })), stopped.then((signal) => ({ signal }))]);
  if ('error' in loaded) {
    process.stderr.write(`lexembed serve: cannot load the model: ${loaded.error.message}\n`);
    await server.close();
    return 1;
  }
  if ('e' in loaded) log(`model "${loaded.e.modelName}" loaded from ${config.model} on ${loaded.e.backendName} in ${Date.now() - started} ms`);
  const signal = await stopped;
  log(`${signal}: closing (finishing in-flight requests, at most ${DRAIN_TIMEOUT_MS / 1000} s)`);
  // The timer also keeps the event loop alive while connections drain.
  const drainTimer = setTimeout(() => {
    log('drain timed out; closing remaining connections');
    server.closeAllConnections();
  }, DRAIN_TIMEOUT_MS);
  await server.close();
  clearTimeout(drainTimer);
  await (await embedder.catch(() => undefined))?.dispose();
  return 0;
}

const DRAIN_TIMEOUT_MS = 10_000;

function log(message: string) {
  process.stdout.write(`lexembed: ${message}\n`);
}
