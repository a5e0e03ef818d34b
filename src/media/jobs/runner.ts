/**
 * Runs accepted video jobs in the background of the process that accepted them: marks each
 * running, keeps its heartbeat fresh while it works (so a poll on any process can tell a live job
 * from one whose process died), and records how it ended. On close, running jobs get the grace to
 * finish; those that do not are cancelled and failed (a failed generation is not charged).
 */

import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { settledWithin } from '../../lib/time.js';
import { MediaError } from '../types.js';
import { HEARTBEAT_MS, type VideoJobOutput, type VideoJobStore } from './store.js';

/** How long a job's record is kept (its stored videos stay as the object store keeps them). */
export const JOB_RETENTION_MS = 7 * 86_400_000;
const PURGE_EVERY_MS = 3_600_000;

export interface JobResult {
  outputs: VideoJobOutput[];
  costUsd: number;
}

export class VideoJobRunner {
  /** This process, as the jobs it runs name their owner. */
  readonly owner = `media-${randomUUID()}`;
  private readonly running = new Map<string, { cancel: AbortController; done: Promise<void> }>();
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(
    readonly store: VideoJobStore,
    private readonly log: FastifyBaseLogger,
    private readonly opts: {
      heartbeatMs?: number;
      graceMs: number;
      /** Told of every job this process ended (completed, failed, or found abandoned): its callback. */
      onEnded?: (id: string) => void;
    },
  ) {
    const beat = setInterval(() => this.beat(), opts.heartbeatMs ?? HEARTBEAT_MS);
    const purge = setInterval(() => this.purge(), PURGE_EVERY_MS);
    beat.unref();
    purge.unref();
    this.timers.push(beat, purge);
  }

  /** Starts job `id` (already stored as pending by this owner); `work` makes and stores its videos. */
  run(id: string, work: (signal: AbortSignal) => Promise<JobResult>): void {
    const cancel = new AbortController();
    const done = (async () => {
      try {
        await this.store.start(id, this.owner, Date.now());
        // Cancelled (shutdown) while it was being marked: an abort before `work` listens never reaches it.
        cancel.signal.throwIfAborted();
        const result = await work(cancel.signal);
        const kept = await this.store.finish(id, this.owner, { status: 'completed', ...result }, Date.now());
        if (kept) this.ended(id);
        else this.log.warn({ job: id }, 'video job finished after its record had ended (purged?)');
      } catch (err) {
        const error = err instanceof MediaError ? err.message : 'The video could not be generated';
        if (!(err instanceof MediaError)) this.log.error({ err, job: id }, 'video job failed');
        const kept = await this.store
          .finish(id, this.owner, { status: 'failed', error }, Date.now())
          .catch((e) => this.log.error({ err: e, job: id }, 'could not record a failed video job'));
        if (kept) this.ended(id);
      } finally {
        this.running.delete(id);
      }
    })();
    this.running.set(id, { cancel, done });
  }

  /** Jobs running in this process now. */
  get size(): number {
    return this.running.size;
  }

  /** Gives running jobs the grace to end, then cancels the rest (they are recorded as failed). */
  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    const all = () => Promise.all([...this.running.values()].map((j) => j.done));
    await settledWithin(all(), this.opts.graceMs);
    for (const j of this.running.values())
      j.cancel.abort(
        new MediaError(503, 'shutting_down', 'The media service stopped before this video was finished'),
      );
    await all();
  }

  /** Job `id` ended here (by its work, or found abandoned by a poll or a sweep). */
  ended(id: string): void {
    this.opts.onEnded?.(id);
  }

  /** Beats this process's jobs, and fails other processes' jobs whose heartbeat stopped. */
  private beat(): void {
    const now = Date.now();
    this.store
      .beat(this.owner, [...this.running.keys()], now)
      .catch((err) =>
        this.log.warn({ err: { message: (err as Error).message } }, 'video job heartbeat failed'),
      );
    this.store
      .abandonStale(now)
      .then((ids) => {
        for (const id of ids) this.ended(id);
      })
      .catch((err) => this.log.warn({ err: { message: (err as Error).message } }, 'video job sweep failed'));
  }

  private purge(): void {
    this.store
      .purge(Date.now())
      .catch((err) =>
        this.log.warn({ err: { message: (err as Error).message } }, 'purging video jobs failed'),
      );
  }
}
