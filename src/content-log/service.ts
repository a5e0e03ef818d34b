import { Counter, type Registry } from 'prom-client';
import type { Db } from '../db/connection.js';
import type { Log } from '../lib/log.js';
import type { ContentError, ContentInput, ContentOutput } from './capture.js';
import {
  type ContentRow,
  type ContentScope,
  findContent,
  findContents,
  insertContents,
  purgeExpired,
  workspaceSettings,
} from './store.js';

/** A workspace's content-logging settings as the hot path reads them. */
export interface ContentSettings {
  enabled: boolean;
  retentionDays: number;
}

/** The content of one generation, offered after its answer went out. */
export interface Capture {
  generationId: string;
  organizationId: string;
  workspaceId: string;
  /** Built only when the workspace keeps content. */
  input: () => ContentInput;
  output: ContentOutput;
  error: ContentError | null;
}

export interface ContentLogDeps {
  db: Db;
  log: Pick<Log, 'warn' | 'error'>;
  metrics: Registry;
  /** Rows waiting to be written at most; content offered beyond it is dropped (and counted). */
  maxQueue?: number;
  intervalMs?: number;
  /** How long a workspace's settings are trusted before they are read again (other nodes' writes). */
  settingsTtlMs?: number;
  /** How often expired rows are purged (checked on each write), ms. */
  purgeEveryMs?: number;
  now?: () => number;
}

const DAY_MS = 86_400_000;
const PURGE_BATCH = 500;
const WRITE_BATCH = 200;
const OFF: ContentSettings = { enabled: false, retentionDays: 0 };

/** What GET /generation/content answers (OpenRouter's GenerationContentData). */
export function contentView(row: ContentRow) {
  return {
    input: JSON.parse(row.input_json) as ContentInput,
    output: JSON.parse(row.output_json) as ContentOutput,
    error:
      row.error_json === null
        ? null
        : {
            ...(JSON.parse(row.error_json) as ContentError),
            previous_errors: [],
            provider_name: null,
            raw: null,
          },
  };
}

/**
 * Content logging: keeps the request and response content of a workspace's generations when the
 * workspace turned it on. Never on a call's critical path: content is offered once the answer went
 * out, queued in memory (bounded) and written in batches by a timer. Under overload, or when the
 * database is away for long, content is dropped and counted — the generation row itself is the
 * accountant's, and is never held back by this.
 */
export class ContentLog {
  private queue: ContentRow[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private closed = false;
  private lastPurge = 0;
  private readonly settingsCache = new Map<
    string,
    { at: number; value: Promise<ContentSettings>; known?: ContentSettings }
  >();
  private readonly now: () => number;
  private readonly dropped: Counter<'reason'>;
  private readonly stored: Counter;

  constructor(private readonly deps: ContentLogDeps) {
    this.now = deps.now ?? Date.now;
    this.dropped = new Counter({
      name: 'gatehouse_content_log_dropped_total',
      help: 'Generation content not kept although its workspace logs content, by reason (queue_full, write_failed)',
      labelNames: ['reason'],
      registers: [deps.metrics],
    });
    this.stored = new Counter({
      name: 'gatehouse_content_log_stored_total',
      help: 'Generation content written to the database',
      registers: [deps.metrics],
    });
  }

  /** A workspace's settings, read at most once per `settingsTtlMs` (a missing workspace: off). */
  settings(workspaceId: string): Promise<ContentSettings> {
    const hit = this.settingsCache.get(workspaceId);
    if (hit && this.now() - hit.at < (this.deps.settingsTtlMs ?? 10_000)) return hit.value;
    const entry: { at: number; value: Promise<ContentSettings>; known?: ContentSettings } = {
      at: this.now(),
      value: Promise.resolve(OFF),
    };
    entry.value = workspaceSettings(this.deps.db, workspaceId).then(
      (row) => {
        const s = row
          ? { enabled: row.content_logging === 1, retentionDays: row.content_retention_days }
          : OFF;
        entry.known = s;
        return s;
      },
      (err) => {
        this.settingsCache.delete(workspaceId);
        this.deps.log.warn({ err }, 'reading content-logging settings failed');
        return OFF;
      },
    );
    this.settingsCache.set(workspaceId, entry);
    return entry.value;
  }

  /** Whether the workspace is known not to keep content (a stream then assembles nothing). */
  knownOff(workspaceId: string): boolean {
    void this.settings(workspaceId);
    const known = this.settingsCache.get(workspaceId)?.known;
    return known !== undefined && !known.enabled;
  }

  /** Drops cached settings (a workspace's were changed on this node). */
  forget(workspaceId?: string): void {
    if (workspaceId === undefined) this.settingsCache.clear();
    else this.settingsCache.delete(workspaceId);
  }

  /** Queues a generation's content if its workspace keeps content; never rejects (nobody awaits it but tests). */
  offer(c: Capture): Promise<void> {
    return this.settings(c.workspaceId)
      .then((s) => {
        if (!s.enabled || this.closed) return;
        if (this.queue.length >= (this.deps.maxQueue ?? 1000)) {
          this.dropped.inc({ reason: 'queue_full' });
          return;
        }
        const now = this.now();
        this.queue.push({
          generation_id: c.generationId,
          organization_id: c.organizationId,
          workspace_id: c.workspaceId,
          input_json: JSON.stringify(c.input()),
          output_json: JSON.stringify(c.output),
          error_json: c.error ? JSON.stringify(c.error) : null,
          created_at: now,
          expires_at: now + s.retentionDays * DAY_MS,
        });
        this.schedule();
      })
      .catch((err) => this.deps.log.error({ err }, 'queuing generation content failed'));
  }

  private schedule(): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.flush().catch(() => {});
    }, this.deps.intervalMs ?? 50);
  }

  /** Writes what is queued (a failed batch stays queued for the next attempt). */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.queue.length === 0) return;
    const batch = this.queue.slice(0, WRITE_BATCH);
    this.flushing = insertContents(this.deps.db, batch)
      .then(() => {
        this.queue = this.queue.slice(batch.length);
        this.stored.inc(batch.length);
        this.purgeNowAndThen();
      })
      .catch((err) => {
        this.deps.log.warn(
          { err, queued: this.queue.length },
          'writing generation content failed; will retry',
        );
        if (!this.closed) {
          this.timer ??= setTimeout(() => {
            this.timer = null;
            this.flush().catch(() => {});
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

  /** A generation's kept content in the caller's scope (still queued, or written and unexpired). */
  async get(scope: ContentScope, generationId: string) {
    const inScope = (r: ContentRow) =>
      r.organization_id === scope.organizationId &&
      (scope.workspaceId === null || r.workspace_id === scope.workspaceId);
    const queued = this.queue.find((r) => r.generation_id === generationId && inScope(r));
    const row = queued ?? (await findContent(this.deps.db, scope, generationId, this.now()));
    return row ? contentView(row) : null;
  }

  /** Several generations' kept content in the caller's scope, by id: the queued ones, the rest in one query. */
  async getMany(scope: ContentScope, generationIds: string[]) {
    const wanted = new Set(generationIds);
    const found = new Map<string, ReturnType<typeof contentView>>();
    for (const r of this.queue)
      if (
        wanted.has(r.generation_id) &&
        r.organization_id === scope.organizationId &&
        (scope.workspaceId === null || r.workspace_id === scope.workspaceId)
      )
        found.set(r.generation_id, contentView(r));
    const rest = generationIds.filter((id) => !found.has(id));
    for (const row of await findContents(this.deps.db, scope, rest, this.now()))
      found.set(row.generation_id, contentView(row));
    return found;
  }

  /** Deletes every row expired at `now` (in batches); returns how many. */
  async purgeExpired(now = this.now()): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await purgeExpired(this.deps.db, now, PURGE_BATCH);
      total += n;
      if (n < PURGE_BATCH) return total;
    }
  }

  /** Expired rows go on the first write after each `purgeEveryMs` (no timer of its own). */
  private purgeNowAndThen(): void {
    const now = this.now();
    if (now - this.lastPurge < (this.deps.purgeEveryMs ?? 10 * 60_000)) return;
    this.lastPurge = now;
    this.purgeExpired(now).catch((err) =>
      this.deps.log.warn({ err }, 'purging expired generation content failed'),
    );
  }

  /** Writes what is queued before shutdown; what cannot be written is dropped and counted. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    try {
      await this.flush();
    } catch {
      this.dropped.inc({ reason: 'write_failed' }, this.queue.length);
      this.queue = [];
    }
  }
}
