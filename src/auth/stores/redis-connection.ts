// One Redis connection for the stores of a server (keys, accounts and usage). Each write to Redis
// (and each reply) costs both processes a system call and a wake-up, and that, more than Redis's
// work, was what usage metering cost (docs/operating.md). On one auto-pipelined connection, key
// lookups and usage calls share its writes: one in flight, the next gathering whatever both stores
// queued meanwhile. Measured under the metering bench's load (same run, four rounds): Redis read
// 0.25-0.26 times a request with one connection, 0.28-0.30 with one per store.
import { Redis } from 'ioredis';

/** How long one Redis command may take before a store reports Redis unreachable. */
export const COMMAND_TIMEOUT_MS = 1000;

export interface RedisConnection {
  readonly redis: Redis;
  /** Throws (saying so) while the connection is known lost: lookups on the request path then fail at once. */
  reachable(): void;
  /** One user is done with it; the last one closes it. */
  release(): Promise<void>;
}

/**
 * A connection to `url`. A command waits at most COMMAND_TIMEOUT_MS (also while queued during a
 * reconnect), so a request meets a stopped Redis as a prompt 503, not a 10 s wait. With
 * auto-pipelining, the commands of one turn of the event loop go out in one write, and while a
 * write's replies are awaited the next one gathers (ioredis keeps one pipeline in flight).
 * `users` is how many stores will share it (each calls release once).
 */
export function openRedisConnection(url: string, users = 1): RedisConnection {
  const redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1, enableOfflineQueue: true, commandTimeout: COMMAND_TIMEOUT_MS, enableAutoPipelining: true });
  redis.on('error', () => {}); // surfaced through rejected commands instead
  let left = users;
  return {
    redis,
    reachable() {
      if (redis.status === 'reconnecting' || redis.status === 'end' || redis.status === 'close') {
        throw new Error(`the connection to Redis at ${redactedUrl(url)} is lost (${redis.status})`);
      }
    },
    async release() {
      if (--left > 0) return;
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}

/** The URL without its password, for messages. */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.href;
  } catch {
    return 'the configured URL';
  }
}
