import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type SQLite from 'better-sqlite3';
import type { Caller } from '../accounts/caller.js';
import type { KeysService } from '../accounts/keys.service.js';
import type { BatchConfig } from '../config.js';
import type { Db, Dialect } from '../db/connection.js';
import { isDatabaseUnavailable } from '../lib/errors.js';
import type { Accountant, GenerationRow } from '../routing/accounting.js';
import { type Catalog, findModel } from '../routing/catalog.js';
import type { Engine } from '../routing/engine.js';
import { traceBatchRequest } from '../telemetry/work.js';
import { executeRequest } from './execute.js';
import { closingErrors, type ResultError, resultError } from './model.js';
import { NativeBatches } from './native/service.js';
import { BatchFileSweep } from './openai-files-sweep.js';
import { failedResult, OutcomeWriter, type WorkerLog } from './outcomes.js';
import { Semaphore } from './semaphore.js';
import * as store from './store.js';

export type { WorkerLog } from './outcomes.js';

export interface WorkerDeps {
  db: Db;
  dialect: Dialect;
  engine: Engine;
  keys: Pick<KeysService, 'callerOf'>;
  accountant: Pick<Accountant, 'announce'>;
  catalog: Catalog;
  config: BatchConfig;
  log: WorkerLog;
  /** The better-sqlite3 handle behind `db` on SQLite (outcomes are written through it). */
  sqlite?: SQLite.Database | null;
}

interface InFlight {
  ref: store.LeaseRef;
  controller: AbortController;
  /** Why it was aborted: the worker is stopping (release the lease) or the batch closed. */
  abortedFor: 'stop' | 'closed' | null;
}

const RETRYABLE = new Set([408, 429, 500, 502, 503, 504]);
const MAX_RETRY_DELAY_MS = 60_000;
/** A request that met the database away is run again this much later. */
const DATABASE_RETRY_MS = 1_000;
/** Ingestions whose body stopped arriving this long ago are swept (their process died). */
const ABANDONED_AFTER_MS = 10 * 60_000;

const nowSec = () => Math.floor(Date.now() / 1000);

/**
 * The batch worker. Every `pollMs` it moves batches along their states (validating → in_progress,
 * in_progress → finalizing → completed, cancelling → cancelled, past their window → expired),
 * then claims due requests with leases and runs them through the routing engine, at most
 * `concurrency` at once and `providerConcurrency` per provider.
 *
 * Exactly once: a request's result, its generation rows and its usage events are written in one
 * transaction, and only while the writer still holds the request's lease (its token). A worker
 * that dies mid-request never writes, so the request is claimed again when the lease runs out
 * and billed once, by whoever records it; one whose lease was taken over writes nothing.
 * Leases are extended by a heartbeat while requests run.
 */
export class BatchWorker {
  readonly id = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private readonly inflight = new Map<string, InFlight>();
  private readonly gates = new Map<string, Semaphore>();
  /** in_progress batches as of the last housekeeping, with their callers. */
  private active: { batch: store.BatchRow; caller: Caller }[] = [];
  private rotation = 0;
  private pollTimer: NodeJS.Timeout | null = null;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private filling: Promise<void> | null = null;
  private refill = false;
  private stopping = false;
  private ticking: Promise<void> | null = null;
  private started = false;
  private woken = false;

  private readonly writer: OutcomeWriter;
  /** Batches sent to a provider's own batch API (native/service.ts). */
  private readonly native: NativeBatches;
  /** Purges expired and abandoned uploaded files (OpenAI's Files API) now and then. */
  readonly fileSweep: BatchFileSweep;

  constructor(private readonly deps: WorkerDeps) {
    this.writer = new OutcomeWriter(deps.db, deps.accountant, this.id, deps.log, deps.sqlite ?? null);
    this.native = new NativeBatches({ ...deps, writer: this.writer, workerId: this.id });
    this.fileSweep = new BatchFileSweep({ db: deps.db, log: deps.log, everyMs: deps.config.fileSweepMs });
  }

  start(): void {
    const { leaseMs } = this.deps.config;
    this.started = true;
    this.loop();
    this.heartbeatTimer = setInterval(() => void this.heartbeat(), Math.max(100, Math.floor(leaseMs / 3)));
  }

  /** One round now, then the next after the poll interval (or at once if woken meanwhile). */
  private loop(): void {
    this.woken = false;
    this.ticking = this.tick().finally(() => {
      this.ticking = null;
      if (this.stopping) return;
      if (this.woken) this.loop();
      else this.pollTimer = setTimeout(() => this.loop(), this.deps.config.pollMs);
    });
  }

  /**
   * Runs a round now instead of at the next poll: a batch was accepted in this process, so its
   * requests start without waiting up to a poll interval.
   */
  wake(): void {
    if (!this.started || this.stopping) return;
    if (this.ticking) {
      this.woken = true;
      return;
    }
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.pollTimer = null;
    this.loop();
  }

  /**
   * Stops claiming, lets running requests finish for up to `graceMs`, then aborts the rest and
   * hands their leases back (they run again at once elsewhere, or on the next start).
   */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    if (this.pollTimer) clearTimeout(this.pollTimer);
    await this.ticking;
    const deadline = Date.now() + graceMs;
    while (this.inflight.size > 0 && Date.now() < deadline) await sleep(20);
    for (const f of this.inflight.values()) {
      f.abortedFor = 'stop';
      f.controller.abort(new Error('worker stopping'));
    }
    while (this.inflight.size > 0) await sleep(10);
    await this.native.idle();
    await this.fileSweep.idle();
    await this.writer.close();
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
  }

  /** Requests running now (metrics, tests). */
  get running(): number {
    return this.inflight.size;
  }

  /** One round: housekeeping of batch states, then claims. Errors are logged, never thrown. */
  async tick(): Promise<void> {
    try {
      await this.housekeeping();
      await this.fill(true);
    } catch (err) {
      this.deps.log.error({ err }, 'batch worker tick failed');
    }
  }

  private async housekeeping(): Promise<void> {
    const { db } = this.deps;
    const now = Date.now();
    const batches = await store.batchesIn(db, ['validating', 'in_progress', 'finalizing', 'cancelling']);
    const active: typeof this.active = [];
    for (const b of batches) {
      if (
        b.expires_at <= Math.floor(now / 1000) &&
        (b.status === 'validating' || b.status === 'in_progress')
      ) {
        await this.close(b, 'expired', closingErrors.expired());
        continue;
      }
      switch (b.status) {
        case 'validating':
        case 'in_progress': {
          const caller = await this.deps.keys.callerOf(b.key_hash);
          // A batch of one model fails whole once its model left the catalog. One of several
          // models (no `model`) is checked per request as it runs: a request whose model is gone
          // fails alone (404, model not found) and the others go on.
          const problem = !caller
            ? 'the API key that created it is disabled, expired or deleted'
            : b.model && !findModel(this.deps.catalog, b.model)
              ? `model ${b.model} is no longer served by this gateway`
              : null;
          if (problem || !caller) {
            await this.close(b, 'failed', closingErrors.failed(problem ?? 'no caller'), problem ?? undefined);
            continue;
          }
          if (b.status === 'validating') {
            if (
              await store.transition(db, b.id, ['validating'], 'in_progress', { in_progress_at: nowSec() })
            ) {
              await this.native.step({ ...b, status: 'in_progress' }, caller);
              active.push({ batch: { ...b, status: 'in_progress' }, caller });
            }
          } else if (b.completed_count + b.failed_count >= b.request_count) {
            await this.finalize(b.id);
          } else {
            await this.native.step(b, caller);
            active.push({ batch: b, caller });
          }
          break;
        }
        case 'finalizing':
          await this.finalize(b.id);
          break;
        case 'cancelling': {
          if (
            b.native_state === 'submitted' ||
            b.native_state === 'cancelling' ||
            b.native_state === 'submitting'
          )
            await this.native.step(b, await this.deps.keys.callerOf(b.key_hash));
          await store.closeUnfinished(db, b.id, JSON.stringify(closingErrors.cancelled()), 'idle', now);
          if ((await store.unfinishedCount(db, b.id)) === 0)
            await store.transition(db, b.id, ['cancelling'], 'cancelled', { finalized_at: nowSec() });
          break;
        }
      }
    }
    this.active = active;
    // Requests of batches that closed under them (expired, failed) are aborted: their results
    // were written already. Those of cancelling batches finish.
    const open = new Set([
      ...active.map((a) => a.batch.id),
      ...batches.filter((b) => b.status === 'cancelling').map((b) => b.id),
    ]);
    for (const f of this.inflight.values()) {
      if (!open.has(f.ref.batchId) && !f.abortedFor) {
        f.abortedFor = 'closed';
        f.controller.abort(new Error('batch closed'));
      }
    }
    for (const id of await store.abandonedIngestions(db, now - ABANDONED_AFTER_MS)) {
      this.deps.log.warn({ batch_id: id }, 'removing a batch whose upload never completed');
      await store.deleteBatch(db, id);
    }
    this.fileSweep.nowAndThen();
  }

  /** in_progress → finalizing → completed (the usage is summed from the requests when read). */
  private async finalize(id: string): Promise<void> {
    const { db } = this.deps;
    await store.transition(db, id, ['in_progress'], 'finalizing', { finalizing_at: nowSec() });
    await store.transition(db, id, ['finalizing'], 'completed', { finalized_at: nowSec() });
  }

  /** Ends a batch early: every unfinished request gets `error`, then the batch takes `status`. */
  private async close(b: store.BatchRow, status: 'expired' | 'failed', error: ResultError, message?: string) {
    const { db } = this.deps;
    await db.transaction().execute(async (tx) => {
      await store.closeUnfinished(tx, b.id, JSON.stringify(error), 'all', Date.now());
      await store.transition(tx, b.id, ['validating', 'in_progress'], status, {
        finalized_at: nowSec(),
        ...(message ? { error_message: message } : {}),
      });
    });
    await this.native.abandon(b);
    this.deps.log.info({ batch_id: b.id, status }, `batch ${status}`);
  }

  /**
   * Claims as many due requests as there are free slots, sharing them across active batches.
   * `expired`: also take over requests whose lease ran out (the periodic round does).
   */
  private fill(expired = false): Promise<void> {
    if (this.filling) {
      this.refill = true;
      return this.filling;
    }
    this.filling = (async () => {
      let first = true;
      do {
        this.refill = false;
        await this.claimRound(expired && first);
        first = false;
      } while (this.refill && !this.stopping);
    })()
      .catch((err) => this.deps.log.error({ err }, 'claiming batch requests failed'))
      .finally(() => {
        this.filling = null;
      });
    return this.filling;
  }

  private async claimRound(expired: boolean): Promise<void> {
    const { db, dialect, config } = this.deps;
    const active = this.active;
    if (this.stopping || active.length === 0) return;
    this.rotation = (this.rotation + 1) % active.length;
    for (let i = 0; i < active.length; i++) {
      const free = config.concurrency - this.inflight.size;
      if (free <= 0) return;
      const { batch, caller } = active[(this.rotation + i) % active.length] as (typeof active)[number];
      const share = Math.max(1, Math.ceil(free / (active.length - i)));
      const now = Date.now();
      const token = randomBytes(8).toString('hex');
      const claimed = await store.claim(
        db,
        dialect,
        batch.id,
        { owner: this.id, token, until: now + config.leaseMs },
        now,
        share,
        expired,
      );
      for (const c of claimed) void this.run(batch, caller, c, token);
    }
  }

  private gate(provider: string): Promise<() => void> {
    let g = this.gates.get(provider);
    if (!g) {
      const configured = this.deps.catalog.providers.get(provider)?.batchConcurrency;
      g = new Semaphore(configured ?? this.deps.config.providerConcurrency);
      this.gates.set(provider, g);
    }
    return g.acquire();
  }

  /** Runs one claimed request and records its outcome (a result, or a retry later). */
  private async run(batch: store.BatchRow, caller: Caller, c: store.Claimed, token: string): Promise<void> {
    const ref: store.LeaseRef = { batchId: batch.id, idx: c.idx, token };
    const key = `${batch.id}:${c.idx}`;
    const flight: InFlight = { ref, controller: new AbortController(), abortedFor: null };
    this.inflight.set(key, flight);
    const rows: GenerationRow[] = [];
    try {
      const out = await traceBatchRequest(batch, c, caller.keyHash, (trace) =>
        executeRequest(
          this.deps.engine,
          batch,
          caller,
          c.item,
          flight.controller.signal,
          {
            record: (row) => rows.push(row),
            acquire: (provider) => this.gate(provider),
            rateLimit: false,
          },
          undefined,
          trace,
        ),
      );
      if (out.kind === 'served') {
        this.writer.add({ ref, kind: 'done', result: out.result }, rows);
      } else if (RETRYABLE.has(out.status) && c.attempts < this.deps.config.maxAttempts) {
        const backoff = Math.min(MAX_RETRY_DELAY_MS, this.deps.config.retryBaseMs * 2 ** (c.attempts - 1));
        const delay = Math.max(out.retryAfterMs ?? 0, backoff * (0.8 + Math.random() * 0.4));
        this.writer.add({ ref, kind: 'retry', due: Date.now() + Math.round(delay) }, rows);
      } else {
        this.writer.add(
          { ref, kind: 'done', result: failedResult(resultError(out.status, out.message)) },
          rows,
        );
      }
    } catch (err) {
      if (flight.abortedFor === 'stop') this.writer.add({ ref, kind: 'retry', due: Date.now() }, []);
      else if (isDatabaseUnavailable(err)) {
        // The database is away (restarting): the request is fine, run it again once it is back.
        this.writer.add({ ref, kind: 'retry', due: Date.now() + DATABASE_RETRY_MS }, rows);
      } else if (flight.abortedFor !== 'closed') {
        // A bug or a corrupt row, not the upstream: recorded as this request's error, not retried forever.
        this.deps.log.error({ err, batch_id: batch.id, index: c.idx }, 'batch request failed unexpectedly');
        const internal = resultError(500, 'Internal error while running this request');
        this.writer.add({ ref, kind: 'done', result: failedResult(internal) }, rows);
      }
    } finally {
      this.inflight.delete(key);
      // Refill once a quarter of the slots are free (a claim per finished request would cost two
      // statements each); the periodic round takes whatever is left.
      const { concurrency } = this.deps.config;
      const free = concurrency - this.inflight.size;
      if (!this.stopping && (free >= Math.max(1, concurrency >> 2) || this.inflight.size === 0))
        void this.fill();
    }
  }

  /** Extends the leases of running requests. */
  private async heartbeat(): Promise<void> {
    const batchIds = [
      ...new Set([...[...this.inflight.values()].map((f) => f.ref.batchId), ...this.writer.batchIds()]),
    ];
    try {
      await store.heartbeat(
        this.deps.db,
        this.deps.dialect,
        this.id,
        batchIds,
        Date.now() + this.deps.config.leaseMs,
      );
    } catch (err) {
      this.deps.log.warn({ err }, 'batch lease heartbeat failed');
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
