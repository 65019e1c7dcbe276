// A Redis usage store, shared by every replica: limits take from counters in one atomic script,
// and each answered request adds to its usage row before the answer is sent, so a server killed
// mid-load loses no counts. The checks and the records of one event-loop turn go to Redis together
// in one script call (`batched`).
import { openRedisConnection, type RedisConnection } from '../../auth/stores/redis-connection.ts';
import { rowKeyOf, rowMatches, sortRows, type TakeItem, type TakeResult, type UsageRow, type UsageRowKey, type UsageStore } from '../store.ts';

/**
 * A group of takes and records in one script call (see `batched`). KEYS are the distinct keys of
 * the call, KEYS[1] the set of days. ARGV[1] is the number of takes, ARGV[2] the number of usage
 * rows; then per take its item count n and per item its counter's index in KEYS, amount, limit
 * (-1: none) and expiry (ms); then per row the index of its day's requests hash (the tokens hash
 * follows it), its field, requests, tokens and day.
 * Takes run in order, each all or nothing (a later one sees an earlier one's take), and return the
 * refused item (1-based, 0: taken), then the counters after the take or as they stand. They run on
 * the counters' values read once, and each counter then gets what its takes added in one INCRBY
 * (the call is atomic, so no other client sees the steps between). Records touch no counter.
 */
const APPLY = `
local takes, rows = tonumber(ARGV[1]), tonumber(ARGV[2])
local arg = 3
local value, added, expiry = {}, {}, {}
local out = {}
for t = 1, takes do
  local n = tonumber(ARGV[arg])
  arg = arg + 1
  local refused = 0
  for i = 0, n - 1 do
    local a = arg + 4 * i
    local k = tonumber(ARGV[a])
    if value[k] == nil then
      value[k] = tonumber(redis.call('GET', KEYS[k]) or '0')
      added[k] = 0
      expiry[k] = ARGV[a + 3]
    end
    local limit = tonumber(ARGV[a + 2])
    if refused == 0 and limit >= 0 and value[k] + tonumber(ARGV[a + 1]) > limit then refused = i + 1 end
  end
  if refused == 0 then
    for i = 0, n - 1 do
      local a = arg + 4 * i
      local k = tonumber(ARGV[a])
      local amount = tonumber(ARGV[a + 1])
      value[k] = value[k] + amount
      added[k] = added[k] + amount
    end
  end
  out[#out + 1] = refused
  for i = 0, n - 1 do out[#out + 1] = value[tonumber(ARGV[arg + 4 * i])] end
  arg = arg + 4 * n
end
for k, amount in pairs(added) do
  -- A counter that held nothing gets its window's expiry (the same for every take of it).
  if amount > 0 and redis.call('INCRBY', KEYS[k], amount) == amount then redis.call('PEXPIREAT', KEYS[k], expiry[k]) end
end
for r = 1, rows do
  local h = tonumber(ARGV[arg])
  redis.call('HINCRBY', KEYS[h], ARGV[arg + 1], ARGV[arg + 2])
  redis.call('HINCRBY', KEYS[h + 1], ARGV[arg + 1], ARGV[arg + 3])
  redis.call('SADD', KEYS[1], ARGV[arg + 4])
  arg = arg + 5
end
return out
`;
/** Subtracts ARGV[1] from KEYS[1] if it still exists (an expired window needs nothing back). */
const GIVE_BACK = `if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('DECRBY', KEYS[1], ARGV[1]) end return 0`;

/**
 * Gathers the calls made in one turn of the event loop into one: under load, many requests
 * check and record at once, and one script call for all of them costs Redis and this process a
 * fraction of one each. Each caller still gets its own answer (or the shared error). The call
 * then goes out in the connection's pipeline (see redis-connection.ts).
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

/** What one script call carries: a take, or a record of an answered request. */
type Operation = { readonly kind: 'take'; readonly items: readonly TakeItem[] } | { readonly kind: 'record'; readonly row: UsageRowKey; readonly inputTokens: number };

/**
 * `target`: a Redis URL (the store opens its own connection), or the connection the key store
 * uses, so that key lookups and usage calls share writes (the store releases it on close).
 */
export function createRedisUsageStore(target: string | RedisConnection, prefix = 'lexembed:'): UsageStore {
  const connection = typeof target === 'string' ? openRedisConnection(target) : target;
  const { redis, reachable } = connection;
  redis.defineCommand('lexembedApply', { lua: APPLY });
  redis.defineCommand('lexembedGiveBack', { numberOfKeys: 1, lua: GIVE_BACK });
  const scripts = redis as unknown as {
    lexembedApply(keyCount: number, keys: string[], ...args: (string | number)[][]): Promise<number[]>;
    lexembedGiveBack(key: string, amount: number): Promise<number>;
  };
  const k = {
    counter: (name: string) => `${prefix}usage:counter:${name}`,
    days: `${prefix}usage:days`,
    requests: (day: string) => `${prefix}usage:day:${day}:requests`,
    tokens: (day: string) => `${prefix}usage:day:${day}:tokens`,
  };
  const apply = batched(async (ops: Operation[]): Promise<(TakeResult | undefined)[]> => {
    // Each key is sent once (concurrent requests mostly share them), and the records of one row
    // are summed: the same counts in fewer arguments and fewer Redis commands.
    const keys: string[] = [k.days];
    const keyIndex = new Map<string, number>();
    const indexOf = (key: string) => {
      let i = keyIndex.get(key);
      if (i === undefined) keyIndex.set(key, (i = keys.push(key)));
      return i;
    };
    const takes: (string | number)[] = [];
    const rows = new Map<string, { row: UsageRowKey; requests: number; tokens: number }>();
    let takeCount = 0;
    for (const op of ops) {
      if (op.kind === 'take') {
        takeCount++;
        takes.push(op.items.length);
        for (const item of op.items) takes.push(indexOf(k.counter(item.counter)), item.amount, item.limit ?? -1, Math.ceil(item.expiresAt));
      } else {
        const field = rowKeyOf(op.row);
        const had = rows.get(field);
        if (had) {
          had.requests++;
          had.tokens += op.inputTokens;
        } else {
          rows.set(field, { row: op.row, requests: 1, tokens: op.inputTokens });
        }
      }
    }
    const records: (string | number)[] = [];
    for (const [field, { row, requests, tokens }] of rows) {
      const h = indexOf(k.requests(row.day));
      indexOf(k.tokens(row.day));
      records.push(h, field, requests, tokens, row.day);
    }
    // Arrays, not spread arguments: ioredis flattens them, and a burst of thousands stays one call.
    const reply = await scripts.lexembedApply(keys.length, keys, [takeCount, rows.size], takes, records);
    let at = 0;
    return ops.map((op) => {
      if (op.kind === 'record') return undefined;
      const refused = Number(reply[at]);
      const used = reply.slice(at + 1, at + 1 + op.items.length).map(Number);
      at += 1 + op.items.length;
      return refused === 0 ? { taken: true, used } : { taken: false, refused: refused - 1, used };
    });
  });

  return {
    name: 'redis',
    async take(items) {
      reachable();
      return (await apply({ kind: 'take', items }))!;
    },
    async giveBack(counter, amount) {
      await scripts.lexembedGiveBack(k.counter(counter), amount);
    },
    async record(row, inputTokens) {
      reachable();
      await apply({ kind: 'record', row, inputTokens });
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
      await connection.release();
    },
  };
}
