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
