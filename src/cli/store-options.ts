// Options that choose and open the key store, shared by serve, keys and accounts.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { createRedisKeyStore } from '../auth/stores/redis.ts';
import { openRedisConnection } from '../auth/stores/redis-connection.ts';
import type { KeyStore } from '../auth/store.ts';
import { createFileKeyStore, KEYS_FILE } from '../auth/stores/file.ts';
import type { OptionSpecs, OptionValues } from './options.ts';
import type { UsageStore } from '../usage/store.ts';
import { createFileUsageStore } from '../usage/stores/file.ts';
import { createRedisUsageStore } from '../usage/stores/redis.ts';

export const STORE_OPTIONS = {
  store: { env: 'LEXEMBED_STORE', default: 'file', value: z.enum(['file', 'redis'], { error: 'must be "file" or "redis"' }), help: 'key store: file (one server) or redis (several replicas)' },
  'data-dir': { env: 'LEXEMBED_DATA_DIR', default: './.lexembed', value: z.string().min(1), help: 'directory of the file key store' },
  'redis-url': { env: 'LEXEMBED_REDIS_URL', default: '', help: 'Redis URL for --store redis, e.g. redis://127.0.0.1:6379' },
} satisfies OptionSpecs;


/** Where the first start on an empty file store writes its development key. */
export const DEV_KEY_FILE = 'dev-key.txt';

/** The store in words, for messages: the file store's absolute path, Redis's URL without its password. */
export function storeDescription(config: StoreConfig): string {
  if (config.store === 'file') return `file key store in ${resolve(config['data-dir'])}`;
  try {
    const url = new URL(config['redis-url']);
    if (url.password) url.password = '***';
    return `Redis key store at ${url.href}`;
  } catch {
    return 'Redis key store';
  }
}

/** The store as `keys list` names it: the file store's keys file, or the Redis store. */
export function storeFile(config: StoreConfig): string {
  return config.store === 'file' ? `file key store ${join(resolve(config['data-dir']), KEYS_FILE)}` : storeDescription(config);
}

/**
 * What `keys list` says of a store without keys: which store it read, and, for the file store,
 * that a server started from another directory keeps its keys in another one.
 */
export function emptyStoreNote(config: StoreConfig): string {
  if (config.store !== 'file') return `no keys in the ${storeFile(config)}`;
  const missing = existsSync(join(resolve(config['data-dir']), KEYS_FILE)) ? '' : ' (the file does not exist)';
  return (
    `no keys in the ${storeFile(config)}${missing}; a server keeps its keys in its own --data-dir (default ./.lexembed in the directory it was started from; ` +
    'env LEXEMBED_DATA_DIR): run this there, or pass the same --data-dir (or --store redis --redis-url for a Redis store)'
  );
}

/** The store options' values, as parseOptions gives them. */
type StoreConfig = OptionValues<typeof STORE_OPTIONS>;

function redisUrl(config: StoreConfig): string {
  if (!config['redis-url']) throw new Error('--store redis needs --redis-url (LEXEMBED_REDIS_URL), e.g. redis://127.0.0.1:6379');
  return config['redis-url'];
}

export function openKeyStore(config: StoreConfig): KeyStore {
  if (config.store === 'redis') return createRedisKeyStore(redisUrl(config));
  return createFileKeyStore(resolve(config['data-dir']));
}

/** The usage store beside the key store: the file store's usage.log (the server writes it), or the same Redis. */
export function openUsageStore(config: StoreConfig, options: { writer: boolean }): UsageStore {
  if (config.store === 'redis') return createRedisUsageStore(redisUrl(config));
  return createFileUsageStore(resolve(config['data-dir']), options);
}

/**
 * The server's stores: keys, and usage unless `usage` is false (the usage store is then null).
 * On Redis both use one auto-pipelined connection, so key lookups and usage calls share its writes.
 */
export function openServerStores(config: StoreConfig, options: { usage: boolean }): { keys: KeyStore; usage: UsageStore | null } {
  if (config.store === 'redis') {
    const connection = openRedisConnection(redisUrl(config), options.usage ? 2 : 1);
    return { keys: createRedisKeyStore(connection), usage: options.usage ? createRedisUsageStore(connection) : null };
  }
  return { keys: openKeyStore(config), usage: options.usage ? openUsageStore(config, { writer: true }) : null };
}
