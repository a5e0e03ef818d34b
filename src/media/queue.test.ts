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

describe('GenerationQueue: fair sharing between organizations', () => {
  it('keeps one organization to its share: another one is still accepted when it filled the queue', async () => {
    // Capacity 2 running + 16 waiting = 18, as in a deployment's defaults.
    const q = new GenerationQueue(2, 16);
    const a: Promise<() => void>[] = [];
    for (let i = 0; i < 18; i++) a.push(q.acquire(undefined, 'org:a'));
    expect(q.counts()).toEqual({ running: 2, queued: 16 });
    expect(q.isFull('org:a')).toBe(true);
    await expect(q.acquire(undefined, 'org:a')).rejects.toBeInstanceOf(QueueFullError);
    // B is under its share (18 / 2 tenants = 9): accepted although A filled every slot.
    expect(q.isFull('org:b')).toBe(false);
    const b = q.acquire(undefined, 'org:b');
    expect(q.counts('org:b')).toEqual({ running: 0, queued: 1 });
    // B is served at the next free slot, before A's 16 waiting requests.
    (await (a[0] as Promise<() => void>))();
    const rb = await b;
    expect(q.counts('org:b')).toEqual({ running: 1, queued: 0 });
    rb();
  });

  it('dispatches freed slots round-robin between organizations', async () => {
    const q = new GenerationQueue(1, 10);
    const order: string[] = [];
    const releases: (() => void)[] = [];
    const take = (org: string, name: string) =>
      q.acquire(undefined, org).then((release) => {
        order.push(name);
        releases.push(release);
      });
    await take('org:a', 'a1');
    const waiting = [take('org:a', 'a2'), take('org:a', 'a3'), take('org:b', 'b1'), take('org:b', 'b2')];
    // Each generation ends once it started: the next one starts.
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setImmediate(r));
      releases[i]?.();
    }
    await Promise.all(waiting);
    expect(order).toEqual(['a1', 'b1', 'a2', 'b2', 'a3']);
  });

  it('a configured per-organization cap applies even to a lone organization', async () => {
    const q = new GenerationQueue(2, 16, () => null, { perTenant: 3 });
    for (let i = 0; i < 3; i++) void q.acquire(undefined, 'org:a');
    await expect(q.acquire(undefined, 'org:a')).rejects.toBeInstanceOf(QueueFullError);
    expect(q.isFull('org:b')).toBe(false);
  });

  it('never holds more than twice its capacity, however many organizations ask', () => {
    const q = new GenerationQueue(1, 1);
    for (let i = 0; i < 20; i++) q.acquire(undefined, `org:${i}`).catch(() => {});
    expect(q.counts().running + q.counts().queued).toBe(4);
  });
});
