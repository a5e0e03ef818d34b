import { createReadStream, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';

/*
 * How long batch files live, with the official `openai` client: expired uploads and uploads cut
 * off mid-body leave the database (the worker's sweep), files of running batches stay until the
 * batch ends, `output_expires_after` dates the output files, and the file list pages exactly.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const script = (s: object) => `gatehouse:${JSON.stringify(s)}`;
const ENV = {
  GATEHOUSE_BATCH_POLL_MS: '20',
  GATEHOUSE_RATE_LIMIT_REQUESTS: '0',
  GATEHOUSE_BATCH_RATE_LIMIT: '0',
  GATEHOUSE_BATCH_FILE_SWEEP_MS: '100',
  GATEHOUSE_WORKER_DRAIN_MS: '100',
};
const nowS = () => Math.floor(Date.now() / 1000);

const chat = (custom_id: string, content: string) =>
  JSON.stringify({
    custom_id,
    method: 'POST',
    url: '/v1/chat/completions',
    body: { model: 'gatehouse/echo', messages: [{ role: 'user', content }] },
  });

async function upload(openai: OpenAI, lines: string[], expiresAfter?: number) {
  const path = join(mkdtempSync(join(tmpdir(), 'gatehouse-keep-')), 'in.jsonl');
  writeFileSync(path, `${lines.join('\n')}\n`);
  return openai.files.create({
    file: createReadStream(path),
    purpose: 'batch',
    ...(expiresAfter ? { expires_after: { anchor: 'created_at', seconds: expiresAfter } } : {}),
  });
}

async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, ms = 10_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await sleep(25);
  }
}

describe.each(databases)('batch file retention (%s)', (db) => {
  let gw: TestGateway;
  let openai: OpenAI;
  beforeAll(async () => {
    gw = await startTestGateway(db, { env: ENV });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    openai = new OpenAI({ apiKey: gw.apiKey, baseURL: `${gw.url}/api/v1`, maxRetries: 0 });
  });
  afterAll(() => gw?.stop());

  /** A file's rows in the database: [its batch_files row, its chunks]. */
  const stored = async (id: string) => {
    const d = gw.services.db;
    const file = await d.selectFrom('batch_files').select('id').where('id', '=', id).execute();
    const chunks = await d
      .selectFrom('batch_file_chunks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('file_id', '=', id)
      .executeTakeFirstOrThrow();
    return [file.length, Number(chunks.n)];
  };
  const expire = (...ids: string[]) =>
    gw.services.db
      .updateTable('batch_files')
      .set({ expires_at: nowS() - 1 })
      .where('id', 'in', ids)
      .execute();
  const finalBatch = (id: string, as = openai) =>
    until(
      `batch ${id} to end`,
      () => as.batches.retrieve(id),
      (b) => ['completed', 'failed', 'expired', 'cancelled'].includes(b.status),
    );

  it("deletes an expired file's row and chunks from the database, and keeps a file without expiry", async () => {
    const file = await upload(openai, [chat('a', 'one')], 3600);
    expect(file.expires_at).toBe(file.created_at + 3600);
    const kept = await upload(openai, [chat('b', 'two')]);
    expect(await stored(file.id)).toEqual([1, 1]);
    await expire(file.id);
    await expect(openai.files.retrieve(file.id)).rejects.toMatchObject({ status: 404 });
    await until(
      'the sweep',
      () => stored(file.id),
      ([rows, chunks]) => rows === 0 && chunks === 0,
    );
    expect(await stored(kept.id)).toEqual([1, 1]);
    expect((await openai.files.retrieve(kept.id)).id).toBe(kept.id);
  });

  it('keeps an expired file while a batch created from it runs, and purges it once the batch ends', async () => {
    const used = await upload(openai, [chat('slow', script({ delay_ms: 2500 }))]);
    const other = await upload(openai, [chat('c', 'three')]);
    const batch = await openai.batches.create({
      input_file_id: used.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    await until(
      'the batch to run',
      () => openai.batches.retrieve(batch.id),
      (b) => b.status === 'in_progress',
    );
    await expire(used.id, other.id);
    // A sweep ran after both expired: the unused one is gone, the running batch's is not.
    await until(
      'the sweep',
      () => stored(other.id),
      ([rows]) => rows === 0,
    );
    expect(await stored(used.id)).toEqual([1, 1]);
    expect((await openai.batches.retrieve(batch.id)).status).toBe('in_progress');
    const done = await finalBatch(batch.id);
    expect(done).toMatchObject({ status: 'completed', request_counts: { completed: 1, failed: 0 } });
    await until(
      'the sweep',
      () => stored(used.id),
      ([rows, chunks]) => rows === 0 && chunks === 0,
    );
  });

  it('removes an upload cut off with its process without another upload, but not one still arriving', async () => {
    const d = gw.services.db;
    const row = (id: string, created_at: number) => ({
      id,
      organization_id: gw.organizationId,
      workspace_id: 'irrelevant',
      filename: 'cut.jsonl',
      purpose: 'batch',
      created_at,
      expires_at: null,
    });
    await d
      .insertInto('batch_files')
      .values([
        row('file-cut000000000000000000000', nowS() - 7200),
        row('file-arriving00000000000000', nowS()),
      ])
      .execute();
    await d
      .insertInto('batch_file_chunks')
      .values(
        [0, 1, 2].map((seq) => ({
          file_id: 'file-cut000000000000000000000',
          seq,
          data: `${chat('x', 'x')}\n`,
        })),
      )
      .execute();
    await until(
      'the sweep',
      () => stored('file-cut000000000000000000000'),
      ([rows, chunks]) => rows === 0 && chunks === 0,
    );
    expect(await stored('file-arriving00000000000000')).toEqual([1, 0]);
  });

  it('dates the output and error files by output_expires_after, and answers 404 once they expire', async () => {
    const file = await upload(openai, [
      chat('ok', 'fine'),
      chat('no', script({ error: { status: 400, message: 'refused' } })),
    ]);
    const batch = await openai.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      output_expires_after: { anchor: 'created_at', seconds: 7200 },
    });
    const done = await finalBatch(batch.id);
    const output = await openai.files.retrieve(done.output_file_id as string);
    const error = await openai.files.retrieve(done.error_file_id as string);
    for (const f of [output, error]) {
      expect(f.created_at).toBe(done.completed_at);
      expect(f.expires_at).toBe(f.created_at + 7200);
    }
    const listed = (await openai.files.list({ purpose: 'batch_output' })).data.find(
      (f) => f.id === output.id,
    );
    expect(listed?.expires_at).toBe(output.expires_at);
    // Without the setting, output files do not expire.
    const plain = await finalBatch(
      (
        await openai.batches.create({
          input_file_id: file.id,
          endpoint: '/v1/chat/completions',
          completion_window: '24h',
        })
      ).id,
    );
    expect((await openai.files.retrieve(plain.output_file_id as string)).expires_at).toBeNull();

    // Two hours and a second later (the batch ended that long ago).
    await gw.services.db
      .updateTable('batches')
      .set({ finalized_at: (done.completed_at as number) - 7201 })
      .where('id', '=', done.id)
      .execute();
    for (const id of [output.id, error.id]) {
      await expect(openai.files.retrieve(id)).rejects.toMatchObject({ status: 404 });
      await expect(openai.files.content(id)).rejects.toMatchObject({ status: 404 });
    }
    const ids = [];
    for await (const f of openai.files.list({ purpose: 'batch_output' })) ids.push(f.id);
    expect(ids).not.toContain(output.id);
    expect(ids).toContain(plain.output_file_id);
    // The batch still names its files, as OpenAI's does once they have expired.
    expect((await openai.batches.retrieve(done.id)).output_file_id).toBe(output.id);
    // Its results went with them on every route: the batch and its counts stay readable, its
    // results are not served (410 for the download, with when they expired).
    const expiredAt = (done.completed_at as number) - 1;
    const call = client(gw.url, gw.apiKey);
    const polled = await call('GET', `/batches/${done.id}?results_limit=10`);
    expect(polled.status).toBe(200);
    expect(polled.body).toMatchObject({
      status: 'completed',
      request_counts: { completed: 1, failed: 1, total: 2 },
      results: [],
      results_page: { offset: 0, limit: 10, total: 0, has_more: false },
      results_expired_at: expiredAt,
    });
    const gone = await call('GET', `/batches/${done.id}/results`);
    expect(gone.status).toBe(410);
    expect(gone.body.error.message).toContain(`expired at ${new Date(expiredAt * 1000).toISOString()}`);
    expect(gone.text).not.toContain('fine');
    // A batch without the setting keeps serving its results.
    const kept = await call('GET', `/batches/${plain.id}?results_limit=10`);
    expect(kept.body.results).toHaveLength(2);
    expect(kept.body.results_expired_at).toBeUndefined();
    expect((await call('GET', `/batches/${plain.id}/results`)).status).toBe(200);
    // And the worker's sweep clears the expired batch's stored answers; the other keeps its own.
    const answers = async (batchId: string) =>
      (
        await gw.services.db
          .selectFrom('batch_requests')
          .select('response_body')
          .where('batch_id', '=', batchId)
          .where('response_body', 'is not', null)
          .execute()
      ).length;
    await until(
      'the expired answers cleared',
      () => answers(done.id),
      (n) => n === 0,
    );
    expect(await answers(plain.id)).toBe(1);
    // The batch is marked cleared, so later sweeps skip it instead of reading its requests again.
    const cleared = async (batchId: string) =>
      (
        await gw.services.db
          .selectFrom('batches')
          .select('results_cleared_at')
          .where('id', '=', batchId)
          .executeTakeFirstOrThrow()
      ).results_cleared_at;
    await until(
      'the batch marked cleared',
      () => cleared(done.id),
      (at) => at !== null,
    );
    expect(await cleared(plain.id)).toBeNull();
    expect((await call('GET', `/batches/${done.id}`)).body.request_counts).toEqual({
      completed: 1,
      failed: 1,
      total: 2,
    });
  });

  it('refuses a malformed output_expires_after with a 400', async () => {
    const file = await upload(openai, [chat('z', 'z')]);
    const err = await openai.batches
      .create({
        input_file_id: file.id,
        endpoint: '/v1/chat/completions',
        completion_window: '24h',
        output_expires_after: { anchor: 'created_at', seconds: 60 },
      })
      .catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/output_expires_after/);
  });

  it('pages files created in the same second exactly: every file once, in (created_at, id) order', async () => {
    // A workspace of its own: every file and output file of it is made to share one second.
    const mgmt = client(gw.url, gw.managementKey);
    const ws = await mgmt('POST', '/workspaces', { name: 'Paging', slug: `paging-${db}` });
    const key = await mgmt('POST', '/keys', { name: 'paging', workspace_id: ws.body.data.id });
    const own = new OpenAI({ apiKey: key.body.key, baseURL: `${gw.url}/api/v1`, maxRetries: 0 });
    const uploads = [];
    for (let i = 0; i < 14; i++) uploads.push((await upload(own, [chat(`p${i}`, `page ${i}`)])).id);
    const mixed = await upload(own, [
      chat('ok', 'fine'),
      chat('no', script({ error: { status: 400, message: 'x' } })),
    ]);
    for (let i = 0; i < 2; i++)
      await finalBatch(
        (
          await own.batches.create({
            input_file_id: mixed.id,
            endpoint: '/v1/chat/completions',
            completion_window: '24h',
          })
        ).id,
        own,
      );
    const second = nowS() - 5;
    await gw.services.db
      .updateTable('batch_files')
      .set({ created_at: second })
      .where('workspace_id', '=', ws.body.data.id)
      .execute();
    await gw.services.db
      .updateTable('batches')
      .set({ finalized_at: second })
      .where('workspace_id', '=', ws.body.data.id)
      .execute();

    const all = (await own.files.list({ limit: 10000 })).data;
    expect(all).toHaveLength(15 + 4);
    expect(new Set(all.map((f) => f.created_at))).toEqual(new Set([second]));
    const newestFirst = all.map((f) => f.id);
    // Ids compare by their characters (derived `file-batch_…` ids sort after uploaded ones).
    expect(newestFirst).toEqual([...newestFirst].sort().reverse());
    for (const order of ['desc', 'asc'] as const)
      for (const limit of [1, 2, 3, 7]) {
        const seen: string[] = [];
        for await (const f of own.files.list({ order, limit })) seen.push(f.id);
        expect(seen).toEqual(order === 'desc' ? newestFirst : [...newestFirst].reverse());
      }
    for (const purpose of ['batch', 'batch_output'] as const) {
      const seen: string[] = [];
      for await (const f of own.files.list({ purpose, limit: 2 })) seen.push(f.id);
      expect(seen).toEqual(
        newestFirst.filter((id) => id.startsWith('file-batch_') === (purpose === 'batch_output')),
      );
    }
    // The cursor may be a file of the other kind: the page starts right after it either way.
    const pivot = newestFirst.findIndex((id) => id.startsWith('file-batch_'));
    for (const at of [pivot, newestFirst.length - 1, 0]) {
      const page = await own.files.list({ after: newestFirst[at], limit: 3, purpose: 'batch' });
      expect(page.data.map((f) => f.id)).toEqual(
        newestFirst
          .slice(at + 1)
          .filter((id) => !id.startsWith('file-batch_'))
          .slice(0, 3),
      );
    }
    expect(uploads.every((id) => newestFirst.includes(id))).toBe(true);
  });
});
