import { createReadStream, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';
import { ITEM_USAGE, type MockBatches, startMockBatches } from './support/mock-batches.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

/*
 * OpenAI's Files + Batch flow with the official `openai` client, unchanged, against Gatehouse:
 * upload a JSONL file, create the batch from it, poll it to completed, download its output and
 * error files; list, retrieve and delete files; page batches with the client's auto-pagination.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const script = (s: object) => `gatehouse:${JSON.stringify(s)}`;
const FAST = {
  GATEHOUSE_BATCH_POLL_MS: '20',
  GATEHOUSE_BATCH_NATIVE_POLL_MS: '20',
  GATEHOUSE_RATE_LIMIT_REQUESTS: '0',
  GATEHOUSE_BATCH_RATE_LIMIT: '0',
  GATEHOUSE_CREDITS: 'enforce',
};

const line = (custom_id: string, url: string, body: object) =>
  JSON.stringify({ custom_id, method: 'POST', url, body });

const jsonl = (lines: string[]) => `${lines.join('\n')}\n`;

/** Writes `text` to a temp file and uploads it as the brief's users do (a read stream). */
async function upload(openai: OpenAI, text: string, name = 'in.jsonl') {
  const path = join(mkdtempSync(join(tmpdir(), 'gatehouse-files-')), name);
  writeFileSync(path, text);
  return openai.files.create({ file: createReadStream(path), purpose: 'batch' });
}

async function finalBatch(openai: OpenAI, id: string): Promise<OpenAI.Batch> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const b = await openai.batches.retrieve(id);
    if (['completed', 'failed', 'expired', 'cancelled'].includes(b.status)) return b;
    if (Date.now() > deadline) throw new Error(`batch ${id} stuck in ${b.status}`);
    await sleep(25);
  }
}

async function contentLines(openai: OpenAI, fileId: string): Promise<any[]> {
  const res = await openai.files.content(fileId);
  const text = await res.text();
  expect(text.endsWith('\n')).toBe(true);
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

const endpointCases = [
  {
    url: '/v1/chat/completions',
    body: (i: number) => ({ model: 'gatehouse/echo', messages: [{ role: 'user', content: `chat ${i}` }] }),
    check: (body: any, i: number) => expect(body.choices[0].message.content).toBe(`chat ${i}`),
  },
  {
    url: '/v1/responses',
    body: (i: number) => ({ model: 'gatehouse/echo', input: `response ${i}` }),
    check: (body: any) => expect(body).toMatchObject({ object: 'response', status: 'completed' }),
  },
  {
    url: '/v1/messages',
    body: (i: number) => ({
      model: 'test/gpt',
      max_tokens: 50,
      messages: [{ role: 'user', content: `message ${i}` }],
    }),
    check: (body: any) => expect(body.content[0]).toMatchObject({ type: 'text', text: 'Hello from gpt-x!' }),
  },
  {
    url: '/v1/embeddings',
    body: (i: number) => ({ model: 'test/embed', input: [`embed ${i}`] }),
    check: (body: any) =>
      expect(body).toMatchObject({ object: 'list', data: [{ embedding: expect.any(Array) }] }),
  },
];

describe.each(databases)('OpenAI Files + Batch API with the openai client (%s)', (db) => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let openai: OpenAI;
  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway(db, { env: { ...FAST, ...up.env } });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    openai = new OpenAI({ apiKey: gw.apiKey, baseURL: `${gw.url}/api/v1`, maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });

  it('uploads a file, runs the batch from it, and serves its output and error files in request order', async () => {
    const lines = [
      line('first', '/v1/chat/completions', {
        model: 'gatehouse/echo',
        messages: [{ role: 'user', content: 'one' }],
      }),
      line('refused', '/v1/chat/completions', {
        model: 'gatehouse/echo',
        messages: [{ role: 'user', content: script({ error: { status: 400, message: 'no thanks' } }) }],
      }),
      line('third', '/v1/chat/completions', {
        model: 'gatehouse/echo',
        messages: [{ role: 'user', content: 'three' }],
      }),
      line('fourth', '/v1/chat/completions', {
        model: 'gatehouse/echo',
        messages: [{ role: 'user', content: 'four' }],
      }),
    ];
    const text = jsonl(lines);
    const file = await upload(openai, text);
    expect(file).toMatchObject({
      id: expect.stringMatching(/^file-/),
      object: 'file',
      bytes: Buffer.byteLength(text),
      filename: 'in.jsonl',
      purpose: 'batch',
      status: 'processed',
      created_at: expect.any(Number),
    });
    expect(await openai.files.retrieve(file.id)).toEqual(file);
    expect(await (await openai.files.content(file.id)).text()).toBe(text);

    const created = await openai.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      metadata: { job: 'nightly' },
    });
    expect(created).toMatchObject({
      object: 'batch',
      status: 'validating',
      input_file_id: file.id,
      output_file_id: null,
      error_file_id: null,
      metadata: { job: 'nightly' },
      request_counts: { total: 4, completed: 0, failed: 0 },
    });
    // Deleting the input file does not stop the batch: it holds its own copy of the requests.
    expect(await openai.files.delete(file.id)).toEqual({
      _shape: 'openai',
      id: file.id,
      object: 'file',
      deleted: true,
    });
    await expect(openai.files.retrieve(file.id)).rejects.toMatchObject({ status: 404 });

    const done = await finalBatch(openai, created.id);
    expect(done).toMatchObject({
      status: 'completed',
      input_file_id: file.id,
      request_counts: { total: 4, completed: 3, failed: 1 },
      completed_at: expect.any(Number),
      failed_at: null,
      errors: null,
      metadata: { job: 'nightly' },
    });
    expect(done.output_file_id).toMatch(/^file-/);
    expect(done.error_file_id).toMatch(/^file-/);

    const out = await contentLines(openai, done.output_file_id as string);
    expect(out.map((r) => r.custom_id)).toEqual(['first', 'third', 'fourth']);
    for (const [i, r] of out.entries()) {
      expect(r).toMatchObject({
        id: expect.any(String),
        error: null,
        response: { status_code: 200, request_id: expect.any(String) },
      });
      expect(r.response.body.choices[0].message.content).toBe(['one', 'three', 'four'][i]);
    }
    const errs = await contentLines(openai, done.error_file_id as string);
    expect(errs).toEqual([
      {
        id: expect.any(String),
        custom_id: 'refused',
        response: null,
        error: expect.objectContaining({
          code: 'invalid_request',
          message: expect.stringMatching(/no thanks/),
        }),
      },
    ]);

    // The output files are files of purpose batch_output: retrieved and listed.
    const output = await openai.files.retrieve(done.output_file_id as string);
    expect(output).toMatchObject({ object: 'file', purpose: 'batch_output', status: 'processed' });
    const outText = await (await openai.files.content(output.id)).text();
    expect(output.bytes).toBe(Buffer.byteLength(outText));
    const listed = [];
    for await (const f of openai.files.list({ purpose: 'batch_output' })) listed.push(f.id);
    expect(listed).toEqual(expect.arrayContaining([done.output_file_id, done.error_file_id]));
    await expect(openai.files.delete(output.id)).rejects.toMatchObject({ status: 400 });
  });

  it.each(endpointCases)('runs a $url batch from a file', async (c) => {
    const file = await upload(openai, jsonl([0, 1].map((i) => line(`c-${i}`, c.url, c.body(i)))));
    const batch = await openai.batches.create({
      input_file_id: file.id,
      endpoint: c.url as OpenAI.BatchCreateParams['endpoint'],
      completion_window: '24h',
    });
    const done = await finalBatch(openai, batch.id);
    expect(done.status).toBe('completed');
    expect(done.error_file_id).toBeNull();
    const out = await contentLines(openai, done.output_file_id as string);
    expect(out.map((r) => r.custom_id)).toEqual(['c-0', 'c-1']);
    for (const [i, r] of out.entries()) c.check(r.response.body, i);
  });

  it('runs a file whose requests use different models, each on its own', async () => {
    mock.reset();
    const file = await upload(
      openai,
      jsonl([
        line('gpt', '/v1/chat/completions', {
          model: 'test/gpt',
          messages: [{ role: 'user', content: 'to gpt' }],
        }),
        line('echo', '/v1/chat/completions', {
          model: 'gatehouse/echo',
          messages: [{ role: 'user', content: 'to echo' }],
        }),
      ]),
    );
    const created = await openai.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const done = await finalBatch(openai, created.id);
    expect(done).toMatchObject({
      status: 'completed',
      request_counts: { total: 2, completed: 2, failed: 0 },
    });
    expect((done as { model?: string | null }).model).toBeNull();
    const out = await contentLines(openai, done.output_file_id as string);
    expect(out.map((r) => [r.custom_id, r.response.body.choices[0].message.content])).toEqual([
      ['gpt', 'Hello from gpt-x!'],
      ['echo', 'to echo'],
    ]);
    expect(mock.requests.map((r) => [r.path, r.body.model])).toEqual([
      ['/openai/v1/chat/completions', 'gpt-x'],
    ]);
  });

  it('lists files with cursors, newest first or oldest first', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push(
        (
          await upload(
            openai,
            jsonl([line(`l-${i}`, '/v1/chat/completions', endpointCases[0]!.body(i))]),
            `list-${i}.jsonl`,
          )
        ).id,
      );
    const page = await openai.files.list({ purpose: 'batch', limit: 2 });
    expect(page.data.map((f) => f.id)).toEqual([ids[2], ids[1]]);
    expect(page.has_more).toBe(true);
    const all: string[] = [];
    for await (const f of openai.files.list({ purpose: 'batch', limit: 1 })) all.push(f.id);
    expect(all.slice(0, 3)).toEqual([ids[2], ids[1], ids[0]]);
    const asc: string[] = [];
    for await (const f of openai.files.list({ purpose: 'batch', order: 'asc', limit: 2 })) asc.push(f.id);
    expect(asc.filter((id) => ids.includes(id))).toEqual(ids);
    expect(new Set(asc).size).toBe(asc.length);
  });

  it('pages batches with the client: every batch once, newest first', async () => {
    const body = endpointCases[0]!.body(0);
    const file = await upload(openai, jsonl([line('p', '/v1/chat/completions', body)]));
    for (let i = 0; i < 3; i++)
      await openai.batches.create({
        input_file_id: file.id,
        endpoint: '/v1/chat/completions',
        completion_window: '24h',
      });
    const seen: string[] = [];
    for await (const b of openai.batches.list({ limit: 2 })) seen.push(b.id);
    const raw = await client(gw.url, gw.apiKey)('GET', '/batches?limit=100');
    expect(raw.body).toMatchObject({ object: 'list', has_more: false, total_count: seen.length });
    expect(seen).toEqual(raw.body.data.map((b: { id: string }) => b.id));
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.length).toBeGreaterThanOrEqual(3);
  });

  it('refuses a malformed line at upload with a 400 naming it, and keeps nothing', async () => {
    const good = line('ok', '/v1/chat/completions', endpointCases[0]!.body(0));
    const before = (await openai.files.list({ purpose: 'batch' })).data.length;
    const err = await upload(openai, jsonl([good, good.replace('ok', 'ok2'), '{"custom_id": "x", ']))
      .then(() => null)
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.error).toMatchObject({
      type: 'invalid_request_error',
      message: expect.stringMatching(/^Line 3 /),
    });
    const wrongUrl = await upload(openai, jsonl([good, line('b', '/v1/completions', {})])).catch((e) => e);
    expect(wrongUrl.status).toBe(400);
    expect(wrongUrl.message).toMatch(/Line 2 .*url/);
    expect((await openai.files.list({ purpose: 'batch' })).data.length).toBe(before);
  });

  it('refuses a request the batch cannot run at creation, naming its line', async () => {
    const good = line('ok', '/v1/chat/completions', endpointCases[0]!.body(0));
    const file = await upload(
      openai,
      jsonl([good, '', line('nope', '/v1/chat/completions', { model: 'no/such-model', messages: [] })]),
    );
    const err = await openai.batches
      .create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' })
      .catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.message).toMatch(new RegExp(`Line 3 of ${file.id} \\(custom_id "nope"\\).*not found`));
    const wrongEndpoint = await openai.batches
      .create({ input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h' })
      .catch((e) => e);
    expect(wrongEndpoint.status).toBe(400);
    expect(wrongEndpoint.message).toMatch(/Line 1 .*url/);
    const missing = await openai.batches
      .create({ input_file_id: 'file-nope', endpoint: '/v1/chat/completions', completion_window: '24h' })
      .catch((e) => e);
    // The file's 404, as GET /files/{id} answers it.
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect(missing.message).toMatch(/input_file_id: no batch file file-nope/);
  });

  it('takes batch files and files models read: another purpose is a 400 in OpenAI format', async () => {
    const err = await openai.files
      .create({ file: await toFile(Buffer.from('{}\n'), 'x.jsonl'), purpose: 'fine-tune' })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.error).toEqual({
      message: expect.stringMatching(
        /purpose must be batch, user_data, assistants, vision \(got "fine-tune"\)/,
      ),
      type: 'invalid_request_error',
      param: null,
      code: expect.any(String),
    });
  });

  it('takes a file past the 1 MiB JSON body limit whole', async () => {
    const text = jsonl(
      Array.from({ length: 3 }, (_, i) =>
        line(`long-${i}`, '/v1/chat/completions', {
          model: 'gatehouse/echo',
          messages: [{ role: 'user', content: `${i} ${'y'.repeat(500_000)}` }],
        }),
      ),
    );
    expect(Buffer.byteLength(text)).toBeGreaterThan(1_048_576);
    const file = await upload(openai, text);
    expect(file.bytes).toBe(Buffer.byteLength(text));
    expect(await (await openai.files.content(file.id)).text()).toBe(text);
  });

  describe('DELETE /files/{id} while a batch is being created from it', () => {
    const files = () => gw.services.batchFiles;
    const batchRows = async () =>
      Number(
        (
          await gw.services.db
            .selectFrom('batches')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    /**
     * Makes the next creation's file read delete the file (through the API) once it has handed
     * over its first request, deterministically mid-read; returns the restore.
     */
    function deleteAfterFirstLine(): () => void {
      const original = files().linesOf;
      files().linesOf = async (owner, id) => {
        const file = await original.call(files(), owner, id);
        if (!file) return file;
        return {
          bytes: file.bytes,
          lines: (async function* () {
            let first = true;
            for await (const l of file.lines) {
              yield l;
              if (first) {
                first = false;
                expect(await openai.files.delete(id)).toMatchObject({ id, deleted: true });
              }
            }
          })(),
        };
      };
      return () => {
        files().linesOf = original;
      };
    }

    it("refuses the batch with the file's 404 and keeps nothing when the rest of the file was gone", async () => {
      // Lines of ~600 KB: two to a stored chunk, ten lines in five chunks — more than one read
      // (four chunks) takes, so the last chunk is read after the deletion.
      const big = 'x'.repeat(600_000);
      const text = jsonl(
        Array.from({ length: 10 }, (_, i) =>
          line(`big-${i}`, '/v1/chat/completions', {
            model: 'gatehouse/echo',
            messages: [{ role: 'user', content: `${i} ${big}` }],
          }),
        ),
      );
      const file = await upload(openai, text);
      // Taken whole (past the 1 MiB JSON body limit): every byte of the 6 MB upload.
      expect(file.bytes).toBe(Buffer.byteLength(text));
      const before = await batchRows();
      const restore = deleteAfterFirstLine();
      try {
        const err = await openai.batches
          .create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' })
          .catch((e) => e);
        expect(err).toBeInstanceOf(OpenAI.NotFoundError);
        expect(err.message).toContain(`no batch file ${file.id}`);
      } finally {
        restore();
      }
      expect(await batchRows()).toBe(before);
      expect(
        Number(
          (
            await gw.services.db
              .selectFrom('batch_requests')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .where('custom_id', 'like', 'big-%')
              .executeTakeFirstOrThrow()
          ).n,
        ),
      ).toBe(0);
      // And once deleted, a creation from it is the same 404.
      await expect(
        openai.batches.create({
          input_file_id: file.id,
          endpoint: '/v1/chat/completions',
          completion_window: '24h',
        }),
      ).rejects.toMatchObject({ status: 404 });
    });

    it('creates the batch with its whole input when the file had been read before the deletion', async () => {
      // One chunk: read whole before its first request is handed over.
      const file = await upload(
        openai,
        jsonl([0, 1, 2].map((i) => line(`small-${i}`, '/v1/chat/completions', endpointCases[0]!.body(i)))),
      );
      const restore = deleteAfterFirstLine();
      let created: OpenAI.Batch;
      try {
        created = await openai.batches.create({
          input_file_id: file.id,
          endpoint: '/v1/chat/completions',
          completion_window: '24h',
        });
      } finally {
        restore();
      }
      await expect(openai.files.retrieve(file.id)).rejects.toMatchObject({ status: 404 });
      const done = await finalBatch(openai, created.id);
      expect(done).toMatchObject({
        status: 'completed',
        request_counts: { completed: 3, failed: 0, total: 3 },
      });
      const out = await contentLines(openai, done.output_file_id as string);
      expect(out.map((l) => l.custom_id)).toEqual(['small-0', 'small-1', 'small-2']);
    });
  });

  it('answers 404 to another workspace and 403 to a management key', async () => {
    const file = await upload(openai, jsonl([line('w', '/v1/chat/completions', endpointCases[0]!.body(0))]));
    const mgmt = client(gw.url, gw.managementKey);
    const ws = await mgmt('POST', '/workspaces', { name: 'Elsewhere', slug: `elsewhere-${db}` });
    const key = await mgmt('POST', '/keys', { name: 'other-ws', workspace_id: ws.body.data.id });
    const other = new OpenAI({ apiKey: key.body.key, baseURL: `${gw.url}/api/v1`, maxRetries: 0 });
    await expect(other.files.retrieve(file.id)).rejects.toMatchObject({ status: 404 });
    await expect(other.files.content(file.id)).rejects.toMatchObject({ status: 404 });
    await expect(other.files.delete(file.id)).rejects.toMatchObject({ status: 404 });
    expect((await other.files.list()).data.map((f) => f.id)).not.toContain(file.id);
    const theirs = await other.batches
      .create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' })
      .catch((e) => e);
    expect(theirs.status).toBe(404);
    expect(theirs.message).toContain(`no batch file ${file.id}`);
    expect((await openai.files.retrieve(file.id)).id).toBe(file.id);

    const management = new OpenAI({ apiKey: gw.managementKey, baseURL: `${gw.url}/api/v1`, maxRetries: 0 });
    await expect(management.files.list()).rejects.toMatchObject({ status: 403 });
    await expect(
      management.files.create({ file: await toFile(Buffer.from('{}\n'), 'x.jsonl'), purpose: 'batch' }),
    ).rejects.toMatchObject({ status: 403 });
  });
});

describe.each(databases)('a file batch on a provider batch API (%s)', (db) => {
  let mock: MockBatches;
  let gw: TestGateway;
  beforeAll(async () => {
    mock = await startMockBatches();
    const config = join(mkdtempSync(join(tmpdir(), 'gatehouse-native-files-')), 'gatehouse.json');
    writeFileSync(
      config,
      JSON.stringify({
        development_provider: false,
        providers: [
          {
            slug: 'openai',
            kind: 'openai',
            base_url: `${mock.url}/openai/v1`,
            api_key: 'sk-operator-openai-0000',
          },
        ],
        models: [
          {
            id: 'test/gpt',
            endpoints: [
              { provider: 'openai', upstream_model: 'gpt-upstream', pricing: { prompt: 1, completion: 2 } },
            ],
          },
        ],
      }),
    );
    gw = await startTestGateway(db, { env: { ...FAST, GATEHOUSE_CONFIG: config } });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });

  it('sends the requests to the provider batch and serves its results as the output file', async () => {
    const openai = new OpenAI({ apiKey: gw.apiKey, baseURL: `${gw.url}/api/v1`, maxRetries: 0 });
    const texts = ['one', 'two'];
    const file = await upload(
      openai,
      jsonl(
        texts.map((t, i) =>
          line(`n-${i}`, '/v1/chat/completions', {
            model: 'test/gpt',
            max_tokens: 16,
            messages: [{ role: 'user', content: t }],
          }),
        ),
      ),
    );
    const batch = await openai.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const deadline = Date.now() + 15_000;
    while (!mock.batches[0] && Date.now() < deadline) await sleep(20);
    const provider = mock.batches[0];
    expect(provider?.items.map((i) => i.body.model)).toEqual(['gpt-upstream', 'gpt-upstream']);
    mock.finish(provider!.id);
    const done = await finalBatch(openai, batch.id);
    expect(done).toMatchObject({
      status: 'completed',
      request_counts: { total: 2, completed: 2, failed: 0 },
    });
    const out = await contentLines(openai, done.output_file_id as string);
    expect(out.map((r) => [r.custom_id, r.response.body.choices[0].message.content])).toEqual([
      ['n-0', 'done one'],
      ['n-1', 'done two'],
    ]);
    expect(out[0].response.body.usage.prompt_tokens).toBe(ITEM_USAGE.prompt);
    expect(mock.sync).toHaveLength(0);
  });
});

describe.each(databases)('batch file size limit (%s)', (db) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(db, { env: { ...FAST, GATEHOUSE_BATCH_MAX_BYTES: '4096' } });
  });
  afterAll(() => gw?.stop());

  it('413 for a file over GATEHOUSE_BATCH_MAX_BYTES, keeping nothing; a file under it is taken', async () => {
    const openai = new OpenAI({ apiKey: gw.apiKey, baseURL: `${gw.url}/api/v1`, maxRetries: 0 });
    const lineOf = (i: number) =>
      line(`s-${i}`, '/v1/chat/completions', {
        model: 'gatehouse/echo',
        messages: [{ role: 'user', content: `${'x'.repeat(200)} ${i}` }],
      });
    const big = jsonl(Array.from({ length: 40 }, (_, i) => lineOf(i)));
    expect(Buffer.byteLength(big)).toBeGreaterThan(4096);
    const err = await upload(openai, big).catch((e) => e);
    expect(err.status).toBe(413);
    expect(err.error).toMatchObject({ message: expect.stringMatching(/4096 bytes/) });
    expect((await openai.files.list()).data).toEqual([]);
    const rows = await gw.services.db
      .selectFrom('batch_file_chunks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(rows.n)).toBe(0);
    const small = await upload(openai, jsonl([lineOf(1)]));
    expect(small.bytes).toBeLessThan(4096);
  });
});
