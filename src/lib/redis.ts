import { Redis } from 'ioredis';

/**
 * A Redis connection for counters that have a local fallback (rate limits, usage limits, spend
 * reservations): while disconnected a command fails at once instead of queueing, so the caller's
 * in-memory counter answers meanwhile, and the client keeps reconnecting in the background.
 */
export function failFastRedis(url: string, commandTimeoutMs: number): Redis {
  return new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: commandTimeoutMs,
    connectTimeout: 2_000,
    retryStrategy: (times) => Math.min(times * 200, 5_000),
  });
}
