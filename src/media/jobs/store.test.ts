/**
 * Video jobs over a real database (SQLite and PostgreSQL): scoping, the heartbeat that tells a live
 * job from an abandoned one, the end of a job once, purge; and the runner's shutdown.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openTestDatabase } from '../../../test/support/database.js';
import { databases } from '../../../test/support/gateway.js';
import { MediaError } from '../types.js';
import { VideoJobRunner } from './runner.js';
import { ABANDONED, STALE_MS, VideoJobStore } from './store.js';

const scope = { organizationId: 'org-a', workspaceId: 'ws-a' };
const DAY = 86_400_000;
const silent = { warn() {}, error() {} } as never;

describe.each(databases)('video jobs (%s)', (kind) => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let store: VideoJobStore;
  beforeAll(async () => {
    db = await openTestDatabase(kind);
    store = new VideoJobStore(db.handle.db);
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('a job is found in its workspace only, and ends once', async () => {
    const t = 1_000_000;
    await store.create({ id: 'j1', model: 'media/video-model', owner: 'p1', scope }, t, DAY);
    expect(await store.find('j1', scope, t)).toMatchObject({ id: 'j1', status: 'pending', outputs: [] });
    expect(await store.find('j1', { ...scope, workspaceId: 'ws-b' }, t)).toBeNull();
    expect(await store.find('j1', { ...scope, organizationId: 'org-b' }, t)).toBeNull();

    await store.start('j1', 'p1', t + 1);
    expect((await store.find('j1', scope, t + 1))?.status).toBe('in_progress');
    // Another process cannot end it; its owner can, once.
    const outputs = [{ key: 'video/a.webp', url: 'http://m/files/video/a.webp', contentType: 'image/webp' }];
    expect(await store.finish('j1', 'p2', { status: 'completed', outputs, costUsd: 1 }, t + 2)).toBe(false);
    expect(await store.finish('j1', 'p1', { status: 'completed', outputs, costUsd: 0.25 }, t + 2)).toBe(true);
    expect(await store.finish('j1', 'p1', { status: 'failed', error: 'late' }, t + 3)).toBe(false);
    expect(await store.find('j1', scope, t + 4)).toMatchObject({
      status: 'completed',
      outputs,
      costUsd: 0.25,
      error: null,
      completedAt: t + 2,
    });
  });

  it('a running job whose heartbeat stopped is failed by the next read; a beating one is not', async () => {
    const t = 2_000_000;
    await store.create({ id: 'live', model: 'm', owner: 'p1', scope }, t, DAY);
    await store.create({ id: 'dead', model: 'm', owner: 'p2', scope }, t, DAY);
    await store.start('live', 'p1', t);
    await store.start('dead', 'p2', t);
    const later = t + STALE_MS + 1;
    await store.beat('p1', ['live', 'dead'], later - 1_000); // p1 beats its own job only
    expect((await store.find('live', scope, later))?.status).toBe('in_progress');
    expect(await store.find('dead', scope, later)).toMatchObject({ status: 'failed', error: ABANDONED });
    // Its process, if it comes back and fails it, leaves it as the poll found it; another cannot end it.
    expect(await store.finish('dead', 'p2', { status: 'failed', error: 'late' }, later)).toBe(false);
    const outputs = [{ key: 'video/d.webp', url: 'http://m/files/video/d.webp', contentType: 'image/webp' }];
    expect(await store.finish('dead', 'p1', { status: 'completed', outputs, costUsd: 1 }, later)).toBe(false);
    expect(await store.find('dead', scope, later)).toMatchObject({ status: 'failed', error: ABANDONED });
    // If it completes after all, the record says so: the video exists and was charged.
    expect(await store.finish('dead', 'p2', { status: 'completed', outputs, costUsd: 0.5 }, later + 1)).toBe(
      true,
    );
    expect(await store.find('dead', scope, later + 2)).toMatchObject({
      status: 'completed',
      outputs,
      costUsd: 0.5,
      error: null,
      completedAt: later + 1,
    });
  });

  it('a sweep fails each stale job once (any process may run it), leaving beating ones; get reads any scope', async () => {
    const t = 2_500_000;
    for (const id of ['s-dead', 's-live'])
      await store.create(
        {
          id,
          model: 'm',
          owner: id,
          scope,
          callbackUrl: `https://h.example/${id}`,
          pollingUrl: `https://gw/v/${id}`,
        },
        t,
        DAY,
      );
    await store.start('s-dead', 's-dead', t);
    await store.start('s-live', 's-live', t);
    const later = t + STALE_MS + 1;
    await store.beat('s-live', ['s-live'], later - 1_000);
    const [first, second] = await Promise.all([store.abandonStale(later), store.abandonStale(later)]);
    expect([...(first ?? []), ...(second ?? [])].filter((id) => id.startsWith('s-'))).toEqual(['s-dead']);
    expect(await store.get('s-dead')).toMatchObject({
      status: 'failed',
      error: ABANDONED,
      callbackUrl: 'https://h.example/s-dead',
      pollingUrl: 'https://gw/v/s-dead',
    });
    expect((await store.get('s-live'))?.status).toBe('in_progress');
    // A poll of a job a sweep failed does not report it as failed by itself.
    expect(await store.find('s-dead', scope, later + 1)).toMatchObject({
      status: 'failed',
      abandonedNow: false,
    });
  });

  it('expired jobs are not found, and purged', async () => {
    const t = 3_000_000;
    await store.create({ id: 'old', model: 'm', owner: 'p1', scope }, t, 10);
    expect(await store.find('old', scope, t + 10)).toBeNull();
    expect(await store.purge(t + 10)).toBeGreaterThanOrEqual(1);
    expect(await store.purge(t + 10)).toBe(0);
  });

  it('the runner fails a job cancelled while it was still being marked running (no hang)', async () => {
    // `start` outlasts the grace: the cancel comes before the job's work could listen for it.
    const slowStart = Object.create(store, {
      start: {
        value: async (...a: Parameters<VideoJobStore['start']>) => {
          await new Promise((r) => setTimeout(r, 100));
          return store.start(...a);
        },
      },
    }) as VideoJobStore;
    const runner = new VideoJobRunner(slowStart, silent, { graceMs: 10 });
    await store.create({ id: 'early', model: 'm', owner: runner.owner, scope }, Date.now(), DAY);
    let worked = false;
    runner.run('early', async (signal) => {
      worked = true;
      return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    });
    await runner.close();
    expect(worked).toBe(false);
    expect((await store.find('early', scope, Date.now()))?.status).toBe('failed');
  });

  it('the runner records a job’s end; on close a job past the grace is cancelled and failed', async () => {
    const runner = new VideoJobRunner(store, silent, { graceMs: 50 });
    const now = Date.now();
    await store.create({ id: 'quick', model: 'm', owner: runner.owner, scope }, now, DAY);
    await store.create({ id: 'slow', model: 'm', owner: runner.owner, scope }, now, DAY);
    await store.create({ id: 'broken', model: 'm', owner: runner.owner, scope }, now, DAY);
    runner.run('quick', async () => ({ outputs: [], costUsd: 0 }));
    runner.run('broken', async () => {
      throw new MediaError(502, 'provider_error', 'The provider failed');
    });
    let cancelled: unknown = null;
    let working: () => void = () => {};
    const slowWorks = new Promise<void>((resolve) => {
      working = resolve;
    });
    runner.run('slow', (signal) => {
      working();
      return new Promise((_, reject) =>
        signal.addEventListener('abort', () => {
          cancelled = signal.reason;
          reject(signal.reason);
        }),
      );
    });
    const read = async (id: string) => store.find(id, scope, Date.now());
    // Closed once the two short jobs have ended and the slow one works (a loaded database may
    // take longer than the grace just to mark them running).
    await slowWorks;
    await vi.waitFor(async () => expect(runner.size).toBe(1));
    await runner.close();
    expect(runner.size).toBe(0);
    expect(cancelled).toBeInstanceOf(MediaError);
    expect((await read('quick'))?.status).toBe('completed');
    expect(await read('broken')).toMatchObject({ status: 'failed', error: 'The provider failed' });
    expect(await read('slow')).toMatchObject({
      status: 'failed',
      error: 'The media service stopped before this video was finished',
    });
  });
});
