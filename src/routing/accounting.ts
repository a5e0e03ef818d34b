import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/connection.js';
import type { GenerationsTable } from '../db/schema.js';
import { newId } from '../lib/ids.js';

export type GenerationRow = GenerationsTable;

type Listener = (row: GenerationRow) => void;

/**
 * Records generations off the response's critical path: `record()` only queues (and tells the
 * in-memory spend counters at once); a timer writes the queue in group commits — one transaction
 * per batch, the generation rows and their usage events together. A failed write keeps the rows
 * queued for the next attempt. `close()` writes everything before shutdown completes.
 */
export class Accountant {
  private queue: GenerationRow[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private readonly listeners: Listener[] = [];
  private closed = false;

  constructor(
    private readonly db: Db,
    private readonly log: Pick<FastifyBaseLogger, 'error' | 'warn'> | null = null,
    private readonly opts: { intervalMs: number; maxBatch: number } = { intervalMs: 25, maxBatch: 500 },
  ) {}

  /** Called synchronously for every recorded generation (spend counters, metrics). */
  onRecord(listener: Listener): void {
    this.listeners.push(listener);
  }

  record(row: GenerationRow): void {
    this.queue.push(row);
    for (const l of this.listeners) {
      try {
        l(row);
      } catch (err) {
        this.log?.error({ err }, 'generation listener failed');
      }
    }
    if (this.queue.length >= this.opts.maxBatch) void this.flush();
    else if (!this.timer && !this.closed) {
      this.timer = setTimeout(() => {
        this.timer = null;
        void this.flush();
      }, this.opts.intervalMs);
    }
  }

  /** A generation still waiting to be written (so GET /generation sees it at once). */
  pending(id: string): GenerationRow | undefined {
    return this.queue.find((r) => r.id === id);
  }

  /** Writes everything queued so far; resolves when it is durable. */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.queue.length === 0) return;
    const batch = this.queue.slice(0, this.opts.maxBatch);
    this.flushing = this.write(batch)
      .then(() => {
        this.queue = this.queue.slice(batch.length);
      })
      .catch((err) => {
        this.log?.error({ err, queued: this.queue.length }, 'writing generations failed; will retry');
        if (!this.closed && !this.timer) {
          this.timer = setTimeout(() => {
            this.timer = null;
            void this.flush();
          }, 1000);
        }
        throw err;
      })
      .finally(() => {
        this.flushing = null;
      });
    await this.flushing;
    if (this.queue.length > 0) await this.flush();
  }

  private async write(rows: GenerationRow[]): Promise<void> {
    const usage = rows
      .filter((r) => r.cost_usd > 0)
      .map((r) => ({
        id: newId(),
        organization_id: r.organization_id,
        workspace_id: r.workspace_id,
        key_hash: r.key_hash,
        user_id: r.user_id,
        model: r.model,
        provider: r.provider,
        cost_usd: r.cost_usd,
        is_byok: r.is_byok,
        created_at: r.created_at,
      }));
    await this.db.transaction().execute(async (tx) => {
      await tx.insertInto('generations').values(rows).execute();
      if (usage.length > 0) await tx.insertInto('usage_events').values(usage).execute();
    });
  }

  /** Stops the timer and writes what is queued, retrying a few times before giving up loudly. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (let attempt = 1; this.queue.length > 0; attempt++) {
      try {
        await this.flush();
      } catch (err) {
        if (attempt >= 5) {
          this.log?.error({ err, lost: this.queue.length }, 'could not write generations before shutdown');
          return;
        }
        await new Promise((r) => setTimeout(r, 200 * attempt));
      }
    }
  }
}
