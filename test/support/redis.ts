import { Redis } from 'ioredis';

/** The Redis of the tests that share counters or the cluster bus (127.0.0.1:6379 here and on CI). */
export const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

/** Whether Redis answers PING within a second. */
export async function redisReachable(url: string = REDIS_URL): Promise<boolean> {
  const probe = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  probe.on('error', () => {});
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}
