// A Redis key store, so several server replicas share keys and account states.
import { AccountSchema, KeyRecordSchema, type Account, type KeyRecord } from '../records.ts';
import { withLimits, type KeyStore } from '../store.ts';
import { openRedisConnection, type RedisConnection } from './redis-connection.ts';

/**
 * `target`: a Redis URL (the store opens its own connection), or a connection it shares with the
 * usage store (see redis-connection.ts; the store releases it on close).
 */
export function createRedisKeyStore(target: string | RedisConnection, prefix = 'lexembed:'): KeyStore {
  const connection = typeof target === 'string' ? openRedisConnection(target) : target;
  const { redis, reachable } = connection;
  const k = {
    byHash: (hash: string) => `${prefix}key:hash:${hash}`,
    byId: (id: string) => `${prefix}key:id:${id}`,
    keyIds: `${prefix}keys`,
    account: (id: string) => `${prefix}account:${id}`,
    accountIds: `${prefix}accounts`,
  };
  const parseKey = (raw: string | null) => (raw ? KeyRecordSchema.parse(JSON.parse(raw)) : null);
  const parseAccount = (raw: string | null) => (raw ? AccountSchema.parse(JSON.parse(raw)) : null);

  /** Changes a key record by id with an optimistic transaction (retried if another replica changed it meanwhile). */
  const change = async (id: string, apply: (record: KeyRecord) => KeyRecord): Promise<KeyRecord | null> => {
    const hash = await redis.get(k.byId(id));
    if (!hash) return null;
    for (;;) {
      await redis.watch(k.byHash(hash));
      const record = parseKey(await redis.get(k.byHash(hash)));
      if (!record) return (await redis.unwatch(), null);
      const next = apply(record);
      const done = await redis.multi().set(k.byHash(hash), JSON.stringify(next)).exec();
      if (done) return next;
    }
  };

  return {
    name: 'redis',
    async insertKey(record: KeyRecord) {
      await redis.multi().set(k.byHash(record.hash), JSON.stringify(record)).set(k.byId(record.id), record.hash).sadd(k.keyIds, record.id).exec();
    },
    async findKeyByHash(hash) {
      reachable();
      return parseKey(await redis.get(k.byHash(hash)));
    },
    async listKeys() {
      const ids = await redis.smembers(k.keyIds);
      if (!ids.length) return [];
      const hashes = await redis.mget(ids.map(k.byId));
      const present = hashes.filter((h): h is string => !!h);
      if (!present.length) return [];
      return (await redis.mget(present.map(k.byHash))).map(parseKey).filter((r): r is KeyRecord => !!r);
    },
    async revokeKey(id, at) {
      return change(id, (record) => ({ ...record, revoked: record.revoked ?? at }));
    },
    async setKeyLimits(id, limits) {
      return change(id, (record) => withLimits(record, limits));
    },
    async getAccount(id) {
      reachable();
      return parseAccount(await redis.get(k.account(id)));
    },
    async putAccount(account: Account) {
      await redis.multi().set(k.account(account.id), JSON.stringify(account)).sadd(k.accountIds, account.id).exec();
    },
    async listAccounts() {
      const ids = await redis.smembers(k.accountIds);
      if (!ids.length) return [];
      return (await redis.mget(ids.map(k.account))).map(parseAccount).filter((a): a is Account => !!a);
    },
    async close() {
      await connection.release();
    },
  };
}
