// A Redis usage store, shared by every replica: limits take from counters in one atomic script,
// and each answered request adds to its usage row before the answer is sent, so a server killed
// mid-load loses no counts. The checks and the records of one event-loop turn go to Redis as one
// script call each (`batched`).
import { Redis } from 'ioredis';
import { COMMAND_TIMEOUT_MS, redactedUrl } from '../../auth/stores/redis.ts';
import { rowKeyOf, rowMatches, sortRows, type TakeItem, type TakeResult, type UsageRow, type UsageRowKey, type UsageStore } from '../store.ts';

/**
 * Several requests' takes in one script call (a tick's worth, see `batched`). ARGV[1] is the
 * number of groups, ARGV[2…] each group's item count, then per item its amount, limit (-1: none)
 * and expiry (ms); KEYS are the items' counters in order. Each group is all or nothing, in order
 * (a later group sees an earlier one's take). Returns per group: the refused item (1-based, 0:
 * taken), then the counters after a take or as they stand.
 */
const TAKE = `
local groups = tonumber(ARGV[1])
local arg = 2 + groups
local key = 1
local out = {}
for g = 1, groups do
  local n = tonumber(ARGV[1 + g])
  local used = {}
  local refused = 0
  for i = 0, n - 1 do
    used[i + 1] = tonumber(redis.call('GET', KEYS[key + i]) or '0')
    local limit = tonumber(ARGV[arg + 3 * i + 1])
    if refused == 0 and limit >= 0 and used[i + 1] + tonumber(ARGV[arg + 3 * i]) > limit then refused = i + 1 end
  end
  if refused == 0 then
    for i = 0, n - 1 do
      used[i + 1] = redis.call('INCRBY', KEYS[key + i], ARGV[arg + 3 * i])
      if redis.call('PTTL', KEYS[key + i]) < 0 then redis.call('PEXPIREAT', KEYS[key + i], ARGV[arg + 3 * i + 2]) end
    end
  end
  out[#out + 1] = refused
  for i = 1, n do out[#out + 1] = used[i] end
  key = key + n
  arg = arg + 3 * n
end
return out
`;
/**
 * Several answered requests' usage in one script call: KEYS[1] the set of days, then per row its
 * day's requests and tokens hashes; ARGV per row: field, tokens, day.
 */
const RECORD = `
for r = 0, #ARGV / 3 - 1 do
  redis.call('HINCRBY', KEYS[2 + 2 * r], ARGV[1 + 3 * r], 1)
  redis.call('HINCRBY', KEYS[3 + 2 * r], ARGV[1 + 3 * r], ARGV[2 + 3 * r])
  redis.call('SADD', KEYS[1], ARGV[3 + 3 * r])
end
return 0
`;
/** Subtracts ARGV[1] from KEYS[1] if it still exists (an expired window needs nothing back). */
const GIVE_BACK = `if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('DECRBY', KEYS[1], ARGV[1]) end return 0`;

/**
 * Gathers the calls made in one turn of the event loop into one: under load, many requests
 * check and record at once, and one script call for all of them costs Redis and this process a
 * fraction of one each. Each caller still gets its own answer (or the shared error).
 */
function batched<Req, Res>(run: (batch: Req[]) => Promise<Res[]>): (req: Req) => Promise<Res> {
  let pending: { req: Req; resolve: (r: Res) => void; reject: (e: unknown) => void }[] = [];
  const flush = () => {
    const batch = pending;
    pending = [];
    run(batch.map((p) => p.req)).then(
      (results) => batch.forEach((p, i) => p.resolve(results[i]!)),
      (error) => batch.forEach((p) => p.reject(error)),
    );
  };
  return (req) =>
    new Promise<Res>((resolve, reject) => {
      if (pending.length === 0) setImmediate(flush);
      pending.push({ req, resolve, reject });
    });
}

export function createRedisUsageStore(url: string, prefix = 'lexembed:'): UsageStore {
  // Auto-pipelining: the commands of concurrent requests go out in one write per tick.
  const redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1, enableOfflineQueue: true, commandTimeout: COMMAND_TIMEOUT_MS, enableAutoPipelining: true });
  redis.on('error', () => {});
  redis.defineCommand('lexembedTake', { lua: TAKE });
  redis.defineCommand('lexembedGiveBack', { numberOfKeys: 1, lua: GIVE_BACK });
  redis.defineCommand('lexembedRecord', { lua: RECORD });
  const scripts = redis as unknown as {
    lexembedTake(keyCount: number, ...keysAndArgs: (string | number)[]): Promise<number[]>;
    lexembedGiveBack(key: string, amount: number): Promise<number>;
    lexembedRecord(keyCount: number, ...keysAndArgs: (string | number)[]): Promise<number>;
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
  const takeBatched = batched(async (groups: (readonly TakeItem[])[]): Promise<TakeResult[]> => {
    const keys = groups.flatMap((items) => items.map((item) => k.counter(item.counter)));
    const args = [groups.length, ...groups.map((items) => items.length), ...groups.flatMap((items) => items.flatMap((item) => [item.amount, item.limit ?? -1, Math.ceil(item.expiresAt)]))];
    const reply = (await scripts.lexembedTake(keys.length, ...keys, ...args)).map(Number);
    let at = 0;
    return groups.map((items) => {
      const refused = reply[at]!;
      const used = reply.slice(at + 1, at + 1 + items.length);
      at += 1 + items.length;
      return refused === 0 ? { taken: true, used } : { taken: false, refused: refused - 1, used };
    });
  });
  const recordBatched = batched(async (rows: { row: UsageRowKey; inputTokens: number }[]) => {
    const keys = [k.days, ...rows.flatMap(({ row }) => [k.requests(row.day), k.tokens(row.day)])];
    await scripts.lexembedRecord(keys.length, ...keys, ...rows.flatMap(({ row, inputTokens }) => [rowKeyOf(row), inputTokens, row.day]));
    return rows.map(() => undefined);
  });

  return {
    name: 'redis',
    async take(items) {
      reachable();
      return takeBatched(items);
    },
    async giveBack(counter, amount) {
      await scripts.lexembedGiveBack(k.counter(counter), amount);
    },
    async record(row, inputTokens) {
      reachable();
      await recordBatched({ row, inputTokens });
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
