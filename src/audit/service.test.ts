import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { Db } from '../db/connection.js';
import type { Log } from '../lib/log.js';
import { AuditLog } from './service.js';

const event = {
  organizationId: 'org',
  workspaceId: 'ws',
  actorKind: 'management_key' as const,
  actorId: 'hash',
  actorUserId: null,
  action: 'byok.create',
  resourceType: 'byok',
  resourceId: 'b1',
  before: null,
  after: { id: 'b1', api_key: 'sk-after' },
  request: { provider: 'openai', key: 'sk-request' },
  requestId: 'r1',
  remoteAddress: '127.0.0.1',
  status: 201,
};

describe('AuditLog.record', () => {
  it('masks before storing', async () => {
    const stored: any[] = [];
    const db = {
      insertInto: () => ({ values: (row: unknown) => ({ execute: async () => stored.push(row) }) }),
    } as unknown as Db;
    const log = { error() {}, warn() {} } as unknown as Log;
    await new AuditLog({ db, log, metrics: new Registry(), retentionMs: 0 }).record(event);
    expect(stored).toHaveLength(1);
    expect(JSON.parse(stored[0].request_json)).toEqual({ provider: 'openai', key: '[redacted]' });
    expect(JSON.parse(stored[0].after_json)).toEqual({ id: 'b1', api_key: '[redacted]' });
    expect(JSON.stringify(stored)).not.toContain('sk-');
  });

  it('does not throw when the insert fails: logs the event (no bodies) and counts the failure', async () => {
    const lines: unknown[] = [];
    const db = {
      insertInto: () => ({
        values: () => ({
          execute: async () => {
            throw new Error('database down');
          },
        }),
      }),
    } as unknown as Db;
    const log = { error: (o: unknown) => lines.push(o), warn() {} } as unknown as Log;
    const metrics = new Registry();
    await expect(new AuditLog({ db, log, metrics, retentionMs: 0 }).record(event)).resolves.toBeUndefined();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ action: 'byok.create', resource: 'b1', organization: 'org' });
    expect(JSON.stringify(lines)).not.toContain('sk-');
    expect(await metrics.getSingleMetricAsString('gatehouse_audit_write_failures_total')).toMatch(/ 1$/m);
  });
});
