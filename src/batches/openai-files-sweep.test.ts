import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type DbHandle, openDatabase } from '../db/connection.js';
import { migrateToLatest } from '../db/migrate.js';
import { ABANDONED_AFTER_S, BatchFileSweep } from './openai-files-sweep.js';
import * as store from './store.js';

/** The sweep's rules against a real (SQLite) database; test/batches-openai-files-retention.test.ts runs it in the worker on both databases. */
describe('BatchFileSweep', () => {
  let dir: string;
  let handle: DbHandle;
  const NOW_S = 2_000_000_000;
  const logged: object[] = [];
  const log = { info: (o: object) => logged.push(o), warn: () => {}, error: () => {} };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-sweep-'));
    handle = openDatabase(join(dir, 'db.sqlite'));
    await migrateToLatest(handle);
  });
  afterAll(async () => {
    await handle.close();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(async () => {
    logged.length = 0;
    await handle.db.deleteFrom('batch_file_chunks').execute();
    await handle.db.deleteFrom('batch_files').execute();
    await handle.db.deleteFrom('batches').execute();
  });

  const file = async (
    id: string,
    f: { expiresAt?: number | null; complete?: 0 | 1; createdAt?: number; chunks?: number },
  ) => {
    await handle.db
      .insertInto('batch_files')
      .values({
        id,
        organization_id: 'o',
        workspace_id: 'w',
        filename: 'f.jsonl',
        purpose: 'batch',
        complete: f.complete ?? 1,
        created_at: f.createdAt ?? NOW_S - 10,
        expires_at: f.expiresAt ?? null,
      })
      .execute();
    for (let seq = 0; seq < (f.chunks ?? 1); seq++)
      await handle.db.insertInto('batch_file_chunks').values({ file_id: id, seq, data: '{}\n' }).execute();
  };
  const batchFrom = async (id: string, fileId: string, status: string) => {
    await store.createBatch(handle.db, {
      id,
      organization_id: 'o',
      workspace_id: 'w',
      key_hash: 'k',
      user_id: null,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      status,
      created_at: NOW_S - 100,
      expires_at: NOW_S + 86_400,
      updated_at_ms: NOW_S * 1000,
    });
    await store.noteInputFile(handle.db, id, fileId);
  };
  const ids = async (table: 'batch_files' | 'batch_file_chunks') =>
    table === 'batch_files'
      ? (await handle.db.selectFrom('batch_files').select('id').orderBy('id').execute()).map((r) => r.id)
      : (await handle.db.selectFrom('batch_file_chunks').select('file_id').execute()).map((r) => r.file_id);
  const sweep = (everyMs = 60_000, now = () => NOW_S * 1000) =>
    new BatchFileSweep({ db: handle.db, log, everyMs, now });

  it('deletes expired files and their chunks page by page, keeping the rest', async () => {
    for (let i = 0; i < 130; i++)
      await file(`file-exp${String(i).padStart(3, '0')}`, { expiresAt: NOW_S - 1 });
    await file('file-big', { expiresAt: NOW_S, chunks: 40 });
    await file('file-later', { expiresAt: NOW_S + 1, chunks: 2 });
    await file('file-never', { chunks: 2 });
    expect(await sweep().sweep()).toEqual({ expired: 131, abandoned: 0, chunks: 170, results: 0 });
    expect(await ids('batch_files')).toEqual(['file-later', 'file-never']);
    expect((await ids('batch_file_chunks')).sort()).toEqual([
      'file-later',
      'file-later',
      'file-never',
      'file-never',
    ]);
    expect(logged).toEqual([{ expired_files: 131, abandoned_uploads: 0, chunks: 170 }]);
  });

  it('keeps an expired file while a batch created from it is unfinished', async () => {
    for (const [i, status] of [
      'validating',
      'in_progress',
      'finalizing',
      'cancelling',
      'completed',
      'cancelled',
    ].entries()) {
      await file(`file-${status}`, { expiresAt: NOW_S - 1 });
      await batchFrom(`batch_${i}`, `file-${status}`, status);
    }
    expect(await sweep().sweep()).toMatchObject({ expired: 2 });
    expect(await ids('batch_files')).toEqual([
      'file-cancelling',
      'file-finalizing',
      'file-in_progress',
      'file-validating',
    ]);
  });

  it('deletes uploads never completed once they are older than the threshold', async () => {
    await file('file-cut', { complete: 0, createdAt: NOW_S - ABANDONED_AFTER_S - 1, chunks: 3 });
    await file('file-arriving', { complete: 0, createdAt: NOW_S - 60 });
    expect(await sweep().sweep()).toEqual({ expired: 0, abandoned: 1, chunks: 3, results: 0 });
    expect(await ids('batch_files')).toEqual(['file-arriving']);
    expect(logged).toEqual([{ expired_files: 0, abandoned_uploads: 1, chunks: 3 }]);
  });

  it('logs nothing when there is nothing to purge', async () => {
    await file('file-kept', {});
    expect(await sweep().sweep()).toEqual({ expired: 0, abandoned: 0, chunks: 0, results: 0 });
    expect(logged).toEqual([]);
  });

  it('runs from the worker round at most every everyMs, one sweep at a time; 0 never', async () => {
    let now = NOW_S * 1000;
    const s = sweep(1000, () => now);
    await file('file-a', { expiresAt: NOW_S - 1 });
    s.nowAndThen();
    await s.idle();
    expect(await ids('batch_files')).toEqual([]);
    await file('file-b', { expiresAt: NOW_S - 1 });
    now += 999;
    s.nowAndThen();
    await s.idle();
    expect(await ids('batch_files')).toEqual(['file-b']);
    now += 1;
    s.nowAndThen();
    await s.idle();
    expect(await ids('batch_files')).toEqual([]);
    const off = sweep(0);
    await file('file-c', { expiresAt: NOW_S - 1 });
    off.nowAndThen();
    await off.idle();
    expect(await ids('batch_files')).toEqual(['file-c']);
  });
});
