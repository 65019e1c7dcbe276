// A Redis usage store, shared by every replica: limits take from counters in one atomic script,
// and each answered request adds to its usage row (one script, atomic) before the answer is sent, so a server
// killed mid-load loses no counts.
import { Redis } from 'ioredis';
import { COMMAND_TIMEOUT_MS, redactedUrl } from '../../auth/stores/redis.ts';
import { rowKeyOf, rowMatches, sortRows, type UsageRow, type UsageStore } from '../store.ts';

/**
 * For each KEYS[i], ARGV[3i-2] the amount, ARGV[3i-1] the limit (-1: none), ARGV[3i] the expiry
 * (ms): all or nothing. Returns {1, used…} or {0, refused index (1-based), used…}.
 */
const TAKE = `
local used = {}
for i = 1, #KEYS do used[i] = tonumber(redis.call('GET', KEYS[i]) or '0') end
for i = 1, #KEYS do
  local limit = tonumber(ARGV[3 * i - 1])
  if limit >= 0 and used[i] + tonumber(ARGV[3 * i - 2]) > limit then return {0, i, unpack(used)} end
end
for i = 1, #KEYS do
  used[i] = redis.call('INCRBY', KEYS[i], ARGV[3 * i - 2])
  if redis.call('PTTL', KEYS[i]) < 0 then redis.call('PEXPIREAT', KEYS[i], ARGV[3 * i]) end
end
return {1, unpack(used)}
`;
/** Adds a request (1) and ARGV[2] tokens to field ARGV[1] of KEYS[1] (requests) and KEYS[2] (tokens); the day ARGV[3] to the set KEYS[3]. */
const RECORD = `redis.call('HINCRBY', KEYS[1], ARGV[1], 1) redis.call('HINCRBY', KEYS[2], ARGV[1], ARGV[2]) redis.call('SADD', KEYS[3], ARGV[3]) return 0`;
/** Subtracts ARGV[1] from KEYS[1] if it still exists (an expired window needs nothing back). */
const GIVE_BACK = `if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('DECRBY', KEYS[1], ARGV[1]) end return 0`;

export function createRedisUsageStore(url: string, prefix = 'lexembed:'): UsageStore {
  // Auto-pipelining: the commands of concurrent requests go out in one write per tick.
  const redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1, enableOfflineQueue: true, commandTimeout: COMMAND_TIMEOUT_MS, enableAutoPipelining: true });
  redis.on('error', () => {});
  redis.defineCommand('lexembedTake', { lua: TAKE });
  redis.defineCommand('lexembedGiveBack', { numberOfKeys: 1, lua: GIVE_BACK });
  // One script a record, not MULTI…EXEC: one command for Redis to run instead of five.
  redis.defineCommand('lexembedRecord', { numberOfKeys: 3, lua: RECORD });
  const scripts = redis as unknown as {
    lexembedTake(keyCount: number, ...keysAndArgs: (string | number)[]): Promise<number[]>;
    lexembedGiveBack(key: string, amount: number): Promise<number>;
    lexembedRecord(requests: string, tokens: string, days: string, field: string, inputTokens: number, day: string): Promise<number>;
  };
  const reachable = () => {
    if (redis.status === 'reconnecting' || redis.status === 'end' || redis.status === 'close') {
      throw new Error(`the connection to Redis at ${redactedUrl(url)} is lost (${redis.status})`);
    }
  };
  const k = {
    counter: (name: string) => `${prefix}usage:counter:${name}`,
    days: `${prefix}usage:days`,
    requests: (day: string) => `${prefix}usage:day:${day}:requests`,
    tokens: (day: string) => `${prefix}usage:day:${day}:tokens`,
  };
  return {
    name: 'redis',
    async take(items) {
      reachable();
      const args = items.flatMap((item) => [item.amount, item.limit ?? -1, Math.ceil(item.expiresAt)]);
      const reply = (await scripts.lexembedTake(items.length, ...items.map((item) => k.counter(item.counter)), ...args)).map(Number);
      if (reply[0] === 1) return { taken: true, used: reply.slice(1) };
      return { taken: false, refused: reply[1]! - 1, used: reply.slice(2) };
    },
    async giveBack(counter, amount) {
      await scripts.lexembedGiveBack(k.counter(counter), amount);
    },
    async record(row, inputTokens) {
      reachable();
      const field = rowKeyOf(row);
      await scripts.lexembedRecord(k.requests(row.day), k.tokens(row.day), k.days, field, inputTokens, row.day);
    },
    async rows(filter = {}) {
      const days = (await redis.smembers(k.days)).filter((day) => rowMatches({ day, account: filter.account ?? '', key_id: '', operation: '' }, { ...filter, account: undefined }));
      const rows: UsageRow[] = [];
      for (const day of days) {
        const [requests, tokens] = await Promise.all([redis.hgetall(k.requests(day)), redis.hgetall(k.tokens(day))]);
        for (const [field, count] of Object.entries(requests)) {
          const [d, account, key_id, operation] = JSON.parse(field) as [string, string, string, string];
          const row = { day: d, account, key_id, operation, requests: Number(count), input_tokens: Number(tokens[field] ?? 0) };
          if (rowMatches(row, filter)) rows.push(row);
        }
      }
      return sortRows(rows);
    },
    async close() {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
