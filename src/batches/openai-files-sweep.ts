import type { Db } from '../db/connection.js';
import * as files from './openai-files-store.js';
import type { WorkerLog } from './outcomes.js';

/**
 * The batch worker's purge of uploaded batch files: expired files (their rows and content; not
 * those of unfinished batches, kept until the batch ends), the answers of batches whose output
 * files expired (`output_expires_after`), and uploads cut off with their process,
 * whether or not anyone uploads again. Every statement is small: files a page at a time, content a
 * few chunks at a time, so a 200 MiB file never makes one long transaction or holds a lock long.
 */

/** An upload not completed after this long was cut off with its process. */
export const ABANDONED_AFTER_S = 3600;
/** Files looked up per query. */
const FILES_PER_PAGE = 100;
/** Chunks deleted per statement (each up to ~1 MiB of text). */
const CHUNKS_PER_DELETE = 16;
/** Stored answers cleared per statement. */
const ANSWERS_PER_UPDATE = 500;

export interface SweepCounts {
  expired: number;
  abandoned: number;
  chunks: number;
  /** Batches whose results expired (`output_expires_after`) and whose stored answers were cleared. */
  results: number;
}

export class BatchFileSweep {
  private last = 0;
  private running: Promise<void> | null = null;

  constructor(
    private readonly deps: {
      db: Db;
      log: WorkerLog;
      /** How often a sweep runs, ms (GATEHOUSE_BATCH_FILE_SWEEP_MS; 0: never). */
      everyMs: number;
      now?: () => number;
    },
  ) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /**
   * Starts a sweep when `everyMs` has passed since the last one (called on every worker round;
   * no timer of its own). It runs beside the round, not in it: a long purge delays no request.
   */
  nowAndThen(): void {
    const now = this.now();
    if (this.deps.everyMs <= 0 || this.running || now - this.last < this.deps.everyMs) return;
    this.last = now;
    this.running = this.sweep()
      .then(() => {})
      .catch((err) => this.deps.log.warn({ err }, 'purging batch files failed'))
      .finally(() => {
        this.running = null;
      });
  }

  /** Waits for a sweep under way (the worker stops before the database closes). */
  async idle(): Promise<void> {
    await this.running;
  }

  /** Purges now; logs and returns the counts. */
  async sweep(): Promise<SweepCounts> {
    const { db } = this.deps;
    const now = Math.floor(this.now() / 1000);
    const counts: SweepCounts = { expired: 0, abandoned: 0, chunks: 0, results: 0 };
    const purge = async (page: () => Promise<string[]>, kind: 'expired' | 'abandoned') => {
      for (;;) {
        const ids = await page();
        for (const id of ids) {
          for (let n = CHUNKS_PER_DELETE; n === CHUNKS_PER_DELETE; ) {
            n = await files.deleteChunks(db, id, CHUNKS_PER_DELETE);
            counts.chunks += n;
          }
          await files.deleteFileRow(db, id);
          counts[kind]++;
        }
        if (ids.length < FILES_PER_PAGE) return;
      }
    };
    await purge(() => files.expiredFiles(db, now, FILES_PER_PAGE), 'expired');
    await purge(() => files.abandonedFiles(db, now - ABANDONED_AFTER_S, FILES_PER_PAGE), 'abandoned');
    // Results expired with their output files: their answers leave the database as the files did.
    for (;;) {
      const ids = await files.expiredResultBatches(db, now, FILES_PER_PAGE);
      for (const id of ids) {
        while ((await files.clearAnswers(db, id, ANSWERS_PER_UPDATE)) === ANSWERS_PER_UPDATE);
        await files.markResultsCleared(db, id, now);
        counts.results++;
      }
      if (ids.length < FILES_PER_PAGE) break;
    }
    if (counts.results > 0)
      this.deps.log.info({ expired_results: counts.results }, 'purged expired batch results');
    if (counts.expired + counts.abandoned > 0)
      this.deps.log.info(
        { expired_files: counts.expired, abandoned_uploads: counts.abandoned, chunks: counts.chunks },
        'purged batch files',
      );
    return counts;
  }
}
