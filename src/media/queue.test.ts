import { describe, expect, it } from 'vitest';
import { GenerationQueue, QueueFullError } from './queue.js';

describe('GenerationQueue', () => {
  it('runs up to the limit, queues first-come first-served, refuses beyond', async () => {
    const q = new GenerationQueue(1, 2, () => 3000);
    const order: string[] = [];
    const a = await q.acquire();
    const b = q.acquire().then((r) => {
      order.push('b');
      return r;
    });
    const c = q.acquire().then((r) => {
      order.push('c');
      return r;
    });
    expect(q.counts()).toEqual({ running: 1, queued: 2 });
    expect(q.isFull()).toBe(true);
    const refused = await q.acquire().catch((e) => e);
    expect(refused).toBeInstanceOf(QueueFullError);
    expect(refused.status).toBe(429);
    // 3 s each, 3 rounds ahead (2 waiting + itself) at concurrency 1.
    expect(refused.retryAfterS).toBe(9);
    a();
    a(); // a second release is a no-op
    const rb = await b;
    expect(q.counts()).toEqual({ running: 1, queued: 1 });
    rb();
    (await c)();
    expect(order).toEqual(['b', 'c']);
    expect(q.counts()).toEqual({ running: 0, queued: 0 });
  });

  it('an aborted waiter leaves the queue; an aborted signal never waits', async () => {
    const q = new GenerationQueue(1, 1);
    const a = await q.acquire();
    const ctl = new AbortController();
    const waiting = q.acquire(ctl.signal).catch((e) => e);
    expect(q.counts().queued).toBe(1);
    ctl.abort(new Error('gone'));
    expect(((await waiting) as Error).message).toBe('gone');
    expect(q.counts()).toEqual({ running: 1, queued: 0 });
    await expect(q.acquire(ctl.signal)).rejects.toThrow('gone');
    a();
    expect(q.counts()).toEqual({ running: 0, queued: 0 });
  });

  it('queue 0: no waiting at all', async () => {
    const q = new GenerationQueue(2, 0);
    await q.acquire();
    await q.acquire();
    await expect(q.acquire()).rejects.toBeInstanceOf(QueueFullError);
  });
});
