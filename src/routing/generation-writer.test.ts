import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type DbHandle, openDatabase } from '../db/connection.js';
import { migrateToLatest } from '../db/migrate.js';
import type { GenerationsTable } from '../db/schema.js';
import { silentLog } from '../lib/log.js';
import { Accountant, type GenerationWriter, groupCommitValues, usageEventsOf } from './accounting.js';
import { startGenerationWriter } from './generation-writer.js';

/** The SQLite writer thread: what it commits is the database's, a failed commit leaves nothing. */
describe('generation writer thread (SQLite)', () => {
  let dir: string;
  let handle: DbHandle;
  let writer: GenerationWriter;
  let n = 0;
  const row = (over: Partial<GenerationsTable> = {}): GenerationsTable => ({
    id: `gen-w-${n++}`,
    organization_id: 'org-1',
    workspace_id: 'ws-1',
    key_hash: 'k1',
    user_id: 'u1',
    endpoint: 'chat',
    requested_model: 'm/a',
    model: 'm/a',
    provider: 'p1',
    upstream_model: 'a',
    status: 'success',
    http_status: 200,
    streamed: 0,
    finish_reason: 'stop',
    prompt_tokens: 10,
    completion_tokens: 5,
    reasoning_tokens: 0,
    cached_tokens: 0,
    cache_write_tokens: 0,
    usage_estimated: 0,
    pricing_unknown: 0,
    cost_usd: 0.001,
    prompt_cost_usd: 0.0006,
    completion_cost_usd: 0.0004,
    is_byok: 0,
    attempts: 1,
    latency_ms: 12,
    generation_time_ms: 10,
    error_message: null,
    created_at: new Date().toISOString(),
    passthrough: 1,
    upstream_id: null,
    web_search_requests: 0,
    provider_responses: null,
    ...over,
  });
  const count = (table: 'generations' | 'usage_events') =>
    (handle.sqlite?.prepare(`select count(*) as n from ${table}`).get() as { n: number }).n;
  const requests = () =>
    (
      handle.sqlite?.prepare('select coalesce(sum(requests), 0) as n from generation_hours').get() as {
        n: number;
      }
    ).n;

  /** A group commit of `rows` as the accountant hands it over (their journal lines). */
  const commitOf = (rows: GenerationsTable[], usage = usageEventsOf(rows)) =>
    groupCommitValues(
      rows.map((r) => JSON.stringify(r)),
      rows,
      usage,
    );

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-writer-'));
    handle = openDatabase(join(dir, 'db.sqlite'));
    await migrateToLatest(handle);
    writer = startGenerationWriter(handle.sqlite?.name as string, () => {});
  });
  afterEach(async () => {
    await writer.stop();
    await handle.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('commits generations, usage events and the rollup, visible to the event loop’s connection', async () => {
    const rows = [
      row({ error_message: 'a "quoted"\nline', safeguards: '[{"name":"pii"}]', cost_usd: 0.1 + 0.2 }),
      row({ user_id: undefined, provider_responses: '[]' }),
      row({ cost_usd: 0 }),
    ];
    await writer.write(commitOf(rows));
    expect(count('generations')).toBe(3);
    // Every column as the row had it (from its JSON line): strings, exact floats, absent as null.
    const stored = handle.sqlite?.prepare('select * from generations where id = ?');
    expect(stored?.get(rows[0]?.id)).toMatchObject({ ...rows[0], gateway_metadata: null });
    expect(stored?.get(rows[1]?.id)).toMatchObject({ user_id: null, provider_responses: '[]' });
    // Only billed generations have a usage event.
    expect(count('usage_events')).toBe(2);
    expect(requests()).toBe(3);
  });

  it('a failing commit rejects with the database’s error and writes none of its rows', async () => {
    const first = row();
    await writer.write(commitOf([first]));
    const batch = [row(), { ...first }];
    await expect(writer.write(commitOf(batch))).rejects.toMatchObject({
      code: 'SQLITE_CONSTRAINT_PRIMARYKEY',
    });
    expect(count('generations')).toBe(1);
    expect(count('usage_events')).toBe(1);
    expect(requests()).toBe(1);
    // The thread goes on after a failed commit.
    const next = [row()];
    await writer.write(commitOf(next));
    expect(count('generations')).toBe(2);
  });

  it('once the thread is gone the accountant writes on the event loop, never twice', async () => {
    const accountant = new Accountant(
      handle.db,
      silentLog,
      { intervalMs: 5, maxBatch: 50 },
      handle.sqlite ?? null,
      null,
      writer,
    );
    const before = Array.from({ length: 20 }, () => row());
    for (const r of before) void accountant.record(r);
    await accountant.flush();
    expect(count('generations')).toBe(20);
    await writer.stop();
    expect(writer.alive).toBe(false);
    await expect(writer.write(commitOf([row()], []))).rejects.toThrow(/stopped/);
    // Rows the thread may already have committed are skipped (a reply lost with the thread).
    const after = Array.from({ length: 10 }, () => row());
    for (const r of [...before.slice(0, 5), ...after]) void accountant.record(r);
    await accountant.close();
    expect(count('generations')).toBe(30);
    expect(count('usage_events')).toBe(30);
  });
});
