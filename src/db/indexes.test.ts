import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DbHandle, openDatabase } from './connection.js';
import { migrateToLatest } from './migrate.js';

/** The indexes every billed call maintains, and the reads they exist for (SQLite's query plans). */
describe('usage_events indexes', () => {
  let dir: string;
  let handle: DbHandle;
  const plan = (query: string) =>
    (handle.sqlite?.prepare(`explain query plan ${query}`).all() as { detail: string }[])
      .map((r) => r.detail)
      .join('; ');

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-indexes-'));
    handle = openDatabase(join(dir, 'db.sqlite'));
    await migrateToLatest(handle);
  });
  afterAll(async () => {
    await handle.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps no index that another one already serves (each costs an insertion per call)', () => {
    const names = (
      handle.sqlite
        ?.prepare(
          "select name from sqlite_master where type = 'index' and tbl_name = 'usage_events' and sql is not null",
        )
        .all() as { name: string }[]
    ).map((r) => r.name);
    expect(names.sort()).toEqual(['usage_events_key', 'usage_events_user']);
  });

  it('reads by organization (balance, total usage), by member and by key through an index', () => {
    expect(
      plan("select sum(cost_usd), max(created_at) from usage_events where organization_id = 'o'"),
    ).toMatch(/USING INDEX usage_events_user/);
    expect(
      plan("select sum(cost_usd) from usage_events where organization_id = 'o' and user_id = 'u'"),
    ).toMatch(/USING INDEX usage_events_user/);
    expect(plan("select sum(cost_usd) from usage_events where key_hash in ('k')")).toMatch(
      /USING INDEX usage_events_key/,
    );
  });
});

/** Batch files: the list's keyset pages and the sweep's reads (SQLite's query plans). */
describe('batch file indexes', () => {
  let dir: string;
  let handle: DbHandle;
  const plan = (query: string) =>
    (handle.sqlite?.prepare(`explain query plan ${query}`).all() as { detail: string }[])
      .map((r) => r.detail)
      .join('; ');

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-indexes-'));
    handle = openDatabase(join(dir, 'db.sqlite'));
    await migrateToLatest(handle);
  });
  afterAll(async () => {
    await handle.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads a page of files past a (created_at, id) cursor as one index range, with no sort', () => {
    const files = plan(
      "select * from batch_files where organization_id = 'o' and workspace_id = 'w' and (created_at, id) < (1, 'f') order by created_at desc, id desc limit 11",
    );
    expect(files).toMatch(
      /SEARCH batch_files USING INDEX batch_files_list \(.*\(created_at,id\)<\(\?,\?\)\)/,
    );
    expect(files).not.toMatch(/TEMP B-TREE/);
    const outputs = plan(
      "select * from batches where organization_id = 'o' and workspace_id = 'w' and accepted = 1 and (finalized_at, id) <= (1, 'b') order by finalized_at desc, id desc limit 12",
    );
    expect(outputs).toMatch(/USING INDEX batches_workspace_final/);
    expect(outputs).not.toMatch(/TEMP B-TREE/);
  });

  it('finds expired files and the batches of a file through an index', () => {
    expect(plan('select id from batch_files where expires_at <= 1')).toMatch(
      /USING INDEX batch_files_expiry/,
    );
    expect(plan("select id from batches where input_file_id = 'f'")).toMatch(
      /USING INDEX batches_input_file/,
    );
  });

  it('finds batches whose expired answers are still to clear through the partial index, not a scan', () => {
    const toClear = plan(
      'select id from batches where output_expires_after_s is not null and results_cleared_at is null and finalized_at + output_expires_after_s <= 1 limit 100',
    );
    expect(toClear).toMatch(/USING INDEX batches_results_to_clear/);
    expect(toClear).not.toMatch(/batch_requests/);
  });
});

/** Generation feedback: GET /generation's newest entries and the cap's next number (SQLite's query plans). */
describe('generation feedback index', () => {
  let dir: string;
  let handle: DbHandle;
  const plan = (query: string) =>
    (handle.sqlite?.prepare(`explain query plan ${query}`).all() as { detail: string }[])
      .map((r) => r.detail)
      .join('; ');

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-indexes-'));
    handle = openDatabase(join(dir, 'db.sqlite'));
    await migrateToLatest(handle);
  });
  afterAll(async () => {
    await handle.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads a generation’s newest entries and its highest number through the index, without a sort', () => {
    const newest = plan(
      "select category from generation_feedback where generation_id = 'g' order by seq desc limit 20",
    );
    expect(newest).toMatch(/USING INDEX generation_feedback_seq/);
    expect(newest).not.toMatch(/TEMP B-TREE/);
    expect(plan("select max(seq) from generation_feedback where generation_id = 'g'")).toMatch(
      /generation_feedback_seq/,
    );
  });
});
