import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompiledQuery, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases, postgresUrl } from '../../test/support/gateway.js';
import { type DbHandle, openDatabase } from '../db/connection.js';
import { migrateToLatest } from '../db/migrate.js';
import type { GenerationsTable } from '../db/schema.js';
import type { GenerationFilter } from './filter.js';
import { listQuery } from './list.store.js';

/**
 * The generations list's common filters each walk an index that leads with organization_id (the
 * 0015 migration), on SQLite and PostgreSQL — never a scan of the table or a sort of a whole
 * organization. Planners choose by statistics, so the table holds many organizations' rows.
 */
describe.each(databases)('generations list query plans (%s)', (kind) => {
  let handle: DbHandle;
  let cleanup: () => Promise<void>;
  const ORGS = 40;
  const PER_ORG = 500;

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-plans-'));
    let schema: string | undefined;
    if (kind === 'postgres') {
      schema = `t_${randomBytes(6).toString('hex')}`;
      const c = new pg.Client({ connectionString: postgresUrl as string });
      await c.connect();
      await c.query(`create schema ${schema}`);
      await c.end();
    }
    handle = openDatabase(kind === 'sqlite' ? join(dir, 'db.sqlite') : (postgresUrl as string), { schema });
    cleanup = async () => {
      await handle.close();
      if (schema) {
        const c = new pg.Client({ connectionString: postgresUrl as string });
        await c.connect();
        await c.query(`drop schema if exists ${schema} cascade`);
        await c.end();
      }
      rmSync(dir, { recursive: true, force: true });
    };
    await migrateToLatest(handle);
    const rows: GenerationsTable[] = [];
    for (let o = 0; o < ORGS; o++)
      for (let i = 0; i < PER_ORG; i++)
        rows.push({
          id: `gen-${o}-${i}`,
          organization_id: `org-${o}`,
          workspace_id: `ws-${o}-${i % 4}`,
          key_hash: `key-${o}-${i % 10}`,
          user_id: `user-${o}-${i % 5}`,
          endpoint: 'chat',
          requested_model: `m/model-${i % 30}`,
          model: i % 50 === 0 ? null : `m/model-${i % 30}`,
          provider: `p${i % 8}`,
          upstream_model: null,
          status: i % 40 === 0 ? 'error' : 'success',
          http_status: 200,
          streamed: i % 2,
          finish_reason: null,
          prompt_tokens: 1,
          completion_tokens: 1,
          reasoning_tokens: 0,
          cached_tokens: 0,
          cache_write_tokens: 0,
          usage_estimated: 0,
          pricing_unknown: 0,
          cost_usd: i / 1000,
          prompt_cost_usd: 0,
          completion_cost_usd: 0,
          is_byok: 0,
          attempts: 1,
          latency_ms: 1,
          generation_time_ms: 1,
          error_message: null,
          created_at: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
          passthrough: i % 3 === 0 ? 1 : 0,
          upstream_id: null,
          web_search_requests: 0,
          provider_responses: null,
        });
    for (let i = 0; i < rows.length; i += 500)
      await handle.db
        .insertInto('generations')
        .values(rows.slice(i, i + 500))
        .execute();
    await sql`analyze`.execute(handle.db);
  });
  afterAll(() => cleanup?.());

  async function plan(filter: Omit<GenerationFilter, 'organizationId'>, after = false): Promise<string> {
    const q = listQuery(
      handle.db,
      handle.dialect,
      { organizationId: 'org-7', ...filter },
      51,
      after ? { createdAt: '2026-01-01T03:00:00.000Z', id: 'gen-7-180' } : null,
    );
    const c = q.compile();
    const explain = kind === 'sqlite' ? 'explain query plan ' : 'explain ';
    const res = await handle.db.executeQuery<Record<string, string>>(
      CompiledQuery.raw(explain + c.sql, [...c.parameters]),
    );
    return res.rows.map((r) => (kind === 'sqlite' ? r.detail : r['QUERY PLAN'])).join('\n');
  }

  const cases: [string, Omit<GenerationFilter, 'organizationId'>, string][] = [
    ['no filter', {}, 'generations_org_time'],
    [
      'a time range',
      { from: '2026-01-01T02:00:00.000Z', to: '2026-01-01T05:00:00.000Z' },
      'generations_org_time',
    ],
    ['a key', { keyHash: 'key-7-3' }, 'generations_org_key'],
    ['a user', { userId: 'user-7-2' }, 'generations_org_user'],
    ['a workspace', { workspaceId: 'ws-7-1' }, 'generations_org_workspace'],
    ['a model', { model: 'm/model-4' }, 'generations_org_model'],
    ['a provider', { provider: 'p3' }, 'generations_org_provider'],
    ['errors', { status: 'error' }, 'generations_org_status'],
    [
      'a key and a time range',
      { keyHash: 'key-7-3', from: '2026-01-01T02:00:00.000Z' },
      'generations_org_key',
    ],
    [
      'streamed, translated, a cost range',
      { streamed: true, lane: 'translated', minCost: 0.1 },
      'generations_org_time',
    ],
  ];
  it.each(cases)('%s: an index leading with the organization', async (_name, filter, index) => {
    for (const after of [false, true]) {
      const p = await plan(filter, after);
      expect(p).toContain(index);
      expect(p).not.toMatch(/SCAN generations$|SCAN generations\n|Seq Scan/);
      // SQLite walks the index in order; PostgreSQL may sort a bitmap scan's few matching rows.
      if (kind === 'sqlite') expect(p).not.toMatch(/TEMP B-TREE/);
    }
  });
});
