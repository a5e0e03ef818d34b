/**
 * Sends generation records to their workspace's destinations, off the response path: a record is
 * matched and queued when the call is accounted, and each destination's queue is sent in batches
 * (every `flushMs`, or at once when `batchSize` are waiting), one delivery at a time, retried with
 * exponential backoff. Memory is bounded: a destination whose queue is full (its receiver down for
 * long) drops new records and counts them in `gatehouse_export_records_total{result="dropped"}`.
 */
import { randomUUID } from 'node:crypto';
import { Counter, type Registry } from 'prom-client';
import type { GenerationsTable } from '../db/schema.js';
import type { Log } from '../lib/log.js';
import { redactUrl } from '../lib/redact-url.js';
import { settledWithin } from '../lib/time.js';
import { CONTENT_MAX_BYTES, capContent } from './content-cap.js';
import type { Sender } from './delivery.js';
import { deliverOtlp } from './otlp.js';
import { type ExportContent, type ExportRecord, exportRecord } from './records.js';
import { passesRules } from './rules.js';
import type { DestinationsService, LiveDestination } from './service.js';
import { deliverWebhook } from './webhook.js';

const SENDERS: Record<LiveDestination['type'], Sender> = {
  webhook: deliverWebhook,
  otlp: deliverOtlp,
  'otel-collector': deliverOtlp,
  langfuse: deliverOtlp,
};

/**
 * The kept content of a workspace's generations, by id (none when the workspace does not log
 * content, or kept none for a generation). Read once per batch when it is sent, a second after the
 * calls: by then content logging has it.
 */
export type ContentSource = (
  scope: { organizationId: string; workspaceId: string },
  generationIds: string[],
) => Promise<Map<string, ExportContent>>;

export interface DispatchOptions {
  /** Records a destination may hold waiting (default 10,000). */
  queueMax: number;
  batchSize: number;
  flushMs: number;
  timeoutMs: number;
  /** Attempts per batch before its records are dropped. */
  maxAttempts: number;
  /** The first retry's wait; doubled per attempt, capped at a minute. */
  backoffMs: number;
  /** Whether destinations may resolve to loopback, private or link-local addresses. */
  allowPrivate: boolean;
  /** The size cap of a record's content, per field (input, output), bytes; 0: none. */
  contentMaxBytes: number;
}

export const DEFAULT_DISPATCH: DispatchOptions = {
  queueMax: 10_000,
  batchSize: 100,
  flushMs: 1_000,
  timeoutMs: 10_000,
  maxAttempts: 6,
  backoffMs: 1_000,
  allowPrivate: false,
  contentMaxBytes: CONTENT_MAX_BYTES,
};

interface Item {
  record: ExportRecord;
  organizationId: string;
}

interface Queue {
  dest: LiveDestination;
  records: Item[];
  timer: NodeJS.Timeout | null;
  sending: Promise<void> | null;
}

export class ExportDispatcher {
  private readonly queues = new Map<string, Queue>();
  private readonly counted: Counter<'result' | 'reason'>;
  private closed = false;
  /** Wakes the deliveries waiting to retry (on close: they give up instead of waiting). */
  private readonly waiting = new Set<() => void>();

  constructor(
    private readonly destinations: Pick<DestinationsService, 'forWorkspace'>,
    private readonly log: Log,
    metrics: Registry,
    private readonly opts: DispatchOptions = DEFAULT_DISPATCH,
    private readonly content: ContentSource = async () => new Map(),
  ) {
    this.counted = new Counter({
      name: 'gatehouse_export_records_total',
      help: 'Generation records for export destinations, by result (sent, dropped) and the reason of a drop',
      labelNames: ['result', 'reason'],
      registers: [metrics],
    });
  }

  /** The accountant's listener: never throws, never waits. */
  onRecord = (row: GenerationsTable): void => {
    if (this.closed) return;
    this.destinations.forWorkspace(row.organization_id, row.workspace_id).then(
      (list) => {
        for (const d of list)
          if (this.wants(d, row))
            this.enqueue(d, { record: exportRecord(row, d), organizationId: row.organization_id });
      },
      (err) => this.log.warn({ err }, 'could not read export destinations; record not exported'),
    );
  };

  private wants(d: LiveDestination, row: GenerationsTable): boolean {
    if (d.apiKeyHashes && (row.key_hash === null || !d.apiKeyHashes.includes(row.key_hash))) return false;
    if (d.samplingRate < 1 && Math.random() >= d.samplingRate) return false;
    return passesRules(row, d.filterRules);
  }

  private enqueue(dest: LiveDestination, record: Item): void {
    let q = this.queues.get(dest.id);
    if (!q) {
      q = { dest, records: [], timer: null, sending: null };
      this.queues.set(dest.id, q);
    }
    q.dest = dest; // the latest settings (a rotated header, a new URL)
    if (q.records.length >= this.opts.queueMax) {
      this.counted.inc({ result: 'dropped', reason: 'queue_full' });
      return;
    }
    q.records.push(record);
    if (q.records.length >= this.opts.batchSize) this.flush(q);
    else if (!q.timer) {
      q.timer = setTimeout(() => this.flush(q), this.opts.flushMs);
      q.timer.unref();
    }
  }

  private flush(q: Queue): void {
    if (q.timer) clearTimeout(q.timer);
    q.timer = null;
    if (q.sending || q.records.length === 0) return;
    const batch = q.records.splice(0, this.opts.batchSize);
    q.sending = this.send(q.dest, batch).finally(() => {
      q.sending = null;
      if (q.records.length === 0) return;
      if (q.records.length >= this.opts.batchSize || this.closed) this.flush(q);
      else if (!q.timer) {
        q.timer = setTimeout(() => this.flush(q), this.opts.flushMs);
        q.timer.unref();
      }
    });
  }

  /**
   * The batch's records with their content (capped), unless the destination is in privacy mode:
   * one read per workspace in the batch (a destination has one), not one per record.
   */
  private async withContent(d: LiveDestination, items: Item[]): Promise<ExportRecord[]> {
    if (d.privacyMode) return items.map((i) => i.record);
    const groups = new Map<string, { organizationId: string; workspaceId: string; ids: string[] }>();
    for (const { record, organizationId } of items) {
      const at = `${organizationId}/${record.workspace_id}`;
      const g = groups.get(at) ?? { organizationId, workspaceId: record.workspace_id, ids: [] };
      g.ids.push(record.id);
      groups.set(at, g);
    }
    const found = new Map<string, ExportContent>();
    for (const { organizationId, workspaceId, ids } of groups.values()) {
      try {
        for (const [id, c] of await this.content({ organizationId, workspaceId }, ids)) found.set(id, c);
      } catch (err) {
        this.log.warn({ err, destination: d.id }, 'could not read generation content; sent without');
      }
    }
    return items.map(({ record }) => {
      const content = found.get(record.id);
      return content ? { ...record, content: capContent(content, this.opts.contentMaxBytes) } : record;
    });
  }

  private async send(d: LiveDestination, items: Item[]): Promise<void> {
    const batch = await this.withContent(d, items);
    const deliveryId = randomUUID(); // the same on every retry: receivers can drop duplicates
    const deliver = SENDERS[d.type];
    for (let attempt = 1; ; attempt++) {
      const out = await deliver(d, deliveryId, batch, this.opts);
      if (out.ok) {
        this.counted.inc({ result: 'sent', reason: '' }, batch.length);
        return;
      }
      const last = !out.retry || attempt >= this.opts.maxAttempts || this.closed;
      const reason = !out.retry ? 'rejected' : this.closed ? 'shutdown' : 'retries_exhausted';
      this.log.warn(
        { destination: d.id, url: redactUrl(d.url), attempt, records: batch.length, reason: out.reason },
        last ? 'export delivery failed; records dropped' : 'export delivery failed; will retry',
      );
      if (last) {
        this.counted.inc({ result: 'dropped', reason }, batch.length);
        return;
      }
      await this.backoff(Math.min(60_000, this.opts.backoffMs * 2 ** (attempt - 1)));
      if (this.closed) {
        this.counted.inc({ result: 'dropped', reason: 'shutdown' }, batch.length);
        return;
      }
    }
  }

  private backoff(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.waiting.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      timer.unref();
      this.waiting.add(wake);
    });
  }

  /**
   * On shutdown: stop taking records, give up retries, make one attempt for what is queued —
   * waiting `graceMs` at most (what is still unsent then is lost, as in a crash; counted when it ends).
   */
  async close(graceMs = 5_000): Promise<void> {
    this.closed = true;
    for (const wake of [...this.waiting]) wake();
    for (const q of this.queues.values()) this.flush(q);
    await settledWithin(Promise.all([...this.queues.values()].map((q) => q.sending)), graceMs);
  }
}
