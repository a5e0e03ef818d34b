import { Counter, type Registry } from 'prom-client';
import { decodeCursor, encodeCursor } from '../activity/cursor.js';
import type { Db } from '../db/connection.js';
import { newId } from '../lib/ids.js';
import type { Log } from '../lib/log.js';
import { maskSecrets } from './mask.js';
import {
  type AuditFilter,
  type AuditRow,
  insertAuditEvent,
  listAuditEvents,
  organizationOfWorkspace,
  purgeAuditEvents,
} from './store.js';

/** One event as the recording hook hands it over: before, after and request not yet masked. */
export interface AuditEvent {
  organizationId: string | null;
  workspaceId: string | null;
  actorKind: AuditRow['actor_kind'];
  actorId: string | null;
  actorUserId: string | null;
  action: string;
  resourceType: string;
  resourceId: string | null;
  before: unknown;
  after: unknown;
  request: unknown;
  requestId: string | null;
  remoteAddress: string | null;
  status: number;
}

export interface AuditLogDeps {
  db: Db;
  log: Log;
  metrics: Registry;
  /** How long events are kept, ms; 0 keeps them forever. */
  retentionMs: number;
  /** How often old events are purged (checked on each write), ms. */
  purgeEveryMs?: number;
  now?: () => number;
}

const PURGE_BATCH = 500;
const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(maskSecrets(v)));
const parse = (text: string | null): unknown => (text === null ? null : JSON.parse(text));

/** An event as the API shows it. */
export function auditView(row: AuditRow) {
  return {
    id: row.id,
    at: row.at,
    organization_id: row.organization_id,
    workspace_id: row.workspace_id,
    actor: { kind: row.actor_kind, id: row.actor_id, user_id: row.actor_user_id },
    action: row.action,
    resource: { type: row.resource_type, id: row.resource_id },
    status: row.status,
    before: parse(row.before_json),
    after: parse(row.after_json),
    request: parse(row.request_json),
    request_id: row.request_id,
    remote_address: row.remote_address,
  };
}

/**
 * The audit log of management writes. `record` is awaited by the request that made the write,
 * before its answer goes out, so an answered write is already listed; a failed insert does not
 * fail that answer (the write itself is done, and a 500 would invite a retry that repeats it) —
 * it is logged at error level and counted in gatehouse_audit_write_failures_total, to alert on.
 */
export class AuditLog {
  private lastPurge = 0;
  private readonly written: Counter;
  private readonly failed: Counter;

  constructor(private readonly deps: AuditLogDeps) {
    this.written = new Counter({
      name: 'gatehouse_audit_events_total',
      help: 'Audit events recorded',
      registers: [deps.metrics],
    });
    this.failed = new Counter({
      name: 'gatehouse_audit_write_failures_total',
      help: 'Management writes whose audit event could not be stored (alert on any)',
      registers: [deps.metrics],
    });
  }

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  async record(event: AuditEvent): Promise<void> {
    // An operator's write names a workspace (a key created for a user) more often than its
    // organization: the event goes to the workspace's organization's log.
    const organizationId =
      event.organizationId ??
      (event.workspaceId ? await organizationOfWorkspace(this.deps.db, event.workspaceId) : null);
    const row: AuditRow = {
      id: newId(),
      organization_id: organizationId,
      workspace_id: event.workspaceId,
      at: new Date(this.now()).toISOString(),
      actor_kind: event.actorKind,
      actor_id: event.actorId,
      actor_user_id: event.actorUserId,
      action: event.action,
      resource_type: event.resourceType,
      resource_id: event.resourceId,
      before_json: json(event.before),
      after_json: json(event.after),
      request_json: json(event.request),
      request_id: event.requestId,
      remote_address: event.remoteAddress,
      status: event.status,
    };
    try {
      await insertAuditEvent(this.deps.db, row);
      this.written.inc();
    } catch (err) {
      this.failed.inc();
      // The event's who and what, never its bodies (masked, but an error line is not the place).
      this.deps.log.error(
        { err, action: row.action, resource: row.resource_id, organization: row.organization_id },
        'audit event not stored',
      );
    }
    this.purgeNowAndThen();
  }

  /** A page of events, newest first; `next_cursor` is null on the last page. */
  async list(filter: AuditFilter, limit: number, cursor?: string) {
    const rows = await listAuditEvents(this.deps.db, filter, limit + 1, cursor ? decodeAt(cursor) : null);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      data: page.map(auditView),
      next_cursor: rows.length > limit && last ? encodeCursor({ createdAt: last.at, id: last.id }) : null,
    };
  }

  /** Deletes the events past the retention period; returns how many. */
  async purgeExpired(now = this.now()): Promise<number> {
    if (this.deps.retentionMs <= 0) return 0;
    const before = new Date(now - this.deps.retentionMs).toISOString();
    let total = 0;
    for (;;) {
      const n = await purgeAuditEvents(this.deps.db, before, PURGE_BATCH);
      total += n;
      if (n < PURGE_BATCH) return total;
    }
  }

  /** Old events go on the first write after each `purgeEveryMs`, like stored responses and content. */
  private purgeNowAndThen(): void {
    const now = this.now();
    if (now - this.lastPurge < (this.deps.purgeEveryMs ?? 10 * 60_000)) return;
    this.lastPurge = now;
    this.purgeExpired(now).catch((err) => this.deps.log.warn({ err }, 'purging old audit events failed'));
  }
}

function decodeAt(raw: string) {
  const c = decodeCursor(raw);
  return { at: c.createdAt, id: c.id };
}
