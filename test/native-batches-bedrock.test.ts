import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { client } from './support/http.js';
import { ITEM_USAGE } from './support/mock-batches.js';
import { BEDROCK_TEST_KEYS, type MockBedrock, startMockBedrock } from './support/mock-bedrock.js';
import { type MockBedrockBatch, type MockJob, startMockBedrockBatch } from './support/mock-bedrock-batch.js';
import { registerSecret } from './support/secrets-audit.js';

/*
 * Bedrock batch inference as a provider-native batch, end to end over real sockets: the batch's
 * records go to S3 (s3rver) as InvokeModel bodies, a model invocation job is created on the mock
 * control plane (SigV4 checked), the test steps the job, its output object is read back and each
 * record's answer is mapped to its custom_id at the batch discount. What Bedrock rejects, or a job
 * that fails, runs on Gatehouse's worker through the (mock) Bedrock Runtime.
 */

type Call = ReturnType<typeof client>;

interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
const require = createRequire(import.meta.url);
const S3rver = require('s3rver') as new (opts: Record<string, unknown>) => S3rverInstance;
// s3rver knows only its own access key: the operator's test key joins its account (it does not
// check SigV4 signatures, only the key).
(
  require('s3rver/lib/models/account.js') as {
    DUMMY_ACCOUNT: { createKeyPair(id: string, secret: string): void };
  }
).DUMMY_ACCOUNT.createKeyPair(BEDROCK_TEST_KEYS.accessKeyId, BEDROCK_TEST_KEYS.secretAccessKey);

// The audit checks that the AWS secret reaches no response and no log line (S3 and job calls included).
registerSecret('provider-key', BEDROCK_TEST_KEYS.secretAccessKey);

const BUCKET = 'gatehouse-batches';
const ROLE = 'arn:aws:iam::123456789012:role/BedrockBatchRole';
const MODEL = 'anthropic.claude-test-v1:0';
const PRICE = { prompt: 1, completion: 2 };
const FULL = (ITEM_USAGE.prompt * PRICE.prompt + ITEM_USAGE.completion * PRICE.completion) / 1e6;
const HALF = FULL / 2;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, probe: () => Promise<T | null | undefined> | T | null | undefined) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

const keys = {
  access_key_id: BEDROCK_TEST_KEYS.accessKeyId,
  secret_access_key: BEDROCK_TEST_KEYS.secretAccessKey,
};

function writeConfig(runtime: string, control: string, s3: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bedrock-batch-'));
  const file = join(dir, 'gatehouse.json');
  writeFileSync(
    file,
    JSON.stringify({
      development_provider: false,
      providers: [
        {
          slug: 'bedrock',
          kind: 'bedrock',
          region: 'us-east-1',
          endpoint: runtime,
          ...keys,
          batch_s3_uri: `s3://${BUCKET}/gatehouse/jobs`,
          batch_role_arn: ROLE,
          batch_s3_endpoint: s3,
          batch_endpoint: control,
        },
        // No batch inference configured: its batches stay on the worker.
        { slug: 'bedrock-plain', kind: 'bedrock', region: 'us-east-1', endpoint: runtime, ...keys },
      ],
      models: [
        { id: 'test/claude', endpoints: [{ provider: 'bedrock', upstream_model: MODEL, pricing: PRICE }] },
        {
          id: 'test/plain',
          endpoints: [{ provider: 'bedrock-plain', upstream_model: MODEL, pricing: PRICE }],
        },
        // Not an Anthropic model: Gatehouse builds no InvokeModel body for it.
        {
          id: 'test/titan',
          endpoints: [{ provider: 'bedrock', upstream_model: 'amazon.titan-text-test', pricing: PRICE }],
        },
      ],
    }),
  );
  return file;
}

const messagesBatch = (model: string, texts: string[]) => ({
  endpoint: '/v1/messages',
  completion_window: '24h',
  requests: texts.map((t, i) => ({
    custom_id: `r-${i}`,
    body: { model, max_tokens: 32, messages: [{ role: 'user', content: t }] },
  })),
});

const texts = (n: number, tag = 'item') => Array.from({ length: n }, (_, i) => `${tag} ${i}`);

describe.each(databases)('Bedrock batch inference as a native batch (%s)', (db) => {
  let s3: S3rverInstance;
  let s3Url: string;
  let runtime: MockBedrock;
  let control: MockBedrockBatch;
  let gw: TestGateway;
  let call: Call;
  let s3c: S3Client;

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-s3rver-'));
    mkdirSync(join(dir, 's3'));
    s3 = new S3rver({
      port: 0,
      address: '127.0.0.1',
      silent: true,
      directory: join(dir, 's3'),
      configureBuckets: [{ name: BUCKET }],
    });
    s3Url = `http://127.0.0.1:${(await s3.run()).port}`;
    s3c = new S3Client({
      endpoint: s3Url,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
    runtime = await startMockBedrock();
    control = await startMockBedrockBatch({ s3Endpoint: s3Url });
    gw = await startTestGateway(db, {
      env: {
        GATEHOUSE_CONFIG: writeConfig(runtime.url, control.url, s3Url),
        GATEHOUSE_BATCH_POLL_MS: '20',
        GATEHOUSE_BATCH_NATIVE_POLL_MS: '20',
        GATEHOUSE_RATE_LIMIT_REQUESTS: '0',
        GATEHOUSE_BATCH_RATE_LIMIT: '0',
      },
    });
    call = client(gw.url, gw.apiKey);
  });
  afterAll(async () => {
    await gw?.stop();
    await control?.close();
    await runtime?.close();
    s3c?.destroy();
    await s3?.close();
  });
  beforeEach(() => runtime.reset());

  /** Creates a batch and waits for the job it becomes. */
  async function submitNative(body: object): Promise<{ id: string; job: MockJob }> {
    const before = control.jobs.length;
    const created = await call('POST', '/batches', body);
    expect(created.status, created.text).toBe(202);
    const job = await until('the invocation job', () => control.jobs[before]);
    return { id: created.body.id, job };
  }

  async function waitStatus(id: string, statuses: string[]): Promise<any> {
    return until(`batch ${id} in ${statuses.join('/')}`, async () => {
      const r = await call('GET', `/batches/${id}`);
      return r.status === 200 && statuses.includes(r.body.status) ? r.body : null;
    });
  }

  async function download(id: string): Promise<Map<string, any>> {
    const res = await call('GET', `/batches/${id}/results`);
    expect(res.status).toBe(200);
    const rows = res.text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    return new Map(rows.map((r) => [r.custom_id, r]));
  }

  const generations = (ids: string[]) =>
    gw.services.db
      .selectFrom('generations')
      .select(['id', 'cost_usd', 'provider', 'prompt_tokens', 'completion_tokens'])
      .where('id', 'in', ids)
      .execute();

  /** Synchronous InvokeModel calls the worker made, by their text. */
  const workerTexts = () =>
    runtime.requests
      .filter((r) => r.operation === 'invoke')
      .map((r) => r.body.messages[0].content as string)
      .sort();

  it('writes the input to S3, creates a signed job, maps the output to custom_ids at the discount; errored records go to the worker', async () => {
    const n = 110;
    const sent = texts(n).map((t, i) => (i === 7 || i === 42 ? `ERRORED ${t}` : t));
    const { id, job } = await submitNative(messagesBatch('test/claude', sent));

    // The job: the model, the role, the S3 locations, the batch's own idempotency token.
    const name = `gatehouse-${id.replace(/_/g, '-')}`;
    expect(job).toMatchObject({
      modelId: MODEL,
      roleArn: ROLE,
      jobName: name,
      clientRequestToken: name,
      timeoutDurationInHours: 24,
    });
    expect(job.inputUri).toBe(`s3://${BUCKET}/gatehouse/jobs/${id}/input.jsonl`);
    expect(job.outputUri).toBe(`s3://${BUCKET}/gatehouse/jobs/${id}/output/`);
    // The input object in S3 has every record with the InvokeModel body: no model, Bedrock's version.
    const obj = await s3c.send(
      new GetObjectCommand({ Bucket: BUCKET, Key: `gatehouse/jobs/${id}/input.jsonl` }),
    );
    const lines = (await obj.Body!.transformToString())
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(n);
    for (const [i, l] of lines.entries())
      expect(l).toEqual({
        recordId: `gh-${i}`,
        modelInput: {
          anthropic_version: 'bedrock-2023-05-31',
          max_tokens: 32,
          messages: [{ role: 'user', content: sent[i] }],
        },
      });
    // Every control-plane call was SigV4-signed for service bedrock with the operator's key.
    expect(control.requests.length).toBeGreaterThan(0);
    expect(control.requests.every((r) => r.signatureValid && r.service === 'bedrock')).toBe(true);

    control.advance(job.jobId, 'InProgress');
    await sleep(100);
    const running = (await call('GET', `/batches/${id}`)).body;
    expect(running.status).toBe('in_progress');
    expect(running.request_counts).toEqual({ total: n, completed: 0, failed: 0 });
    expect(workerTexts()).toEqual([]);

    await control.finish(job.jobId, 'PartiallyCompleted');
    const done = await waitStatus(id, ['completed']);
    expect(done.request_counts).toEqual({ total: n, completed: n, failed: 0 });
    const results = await download(id);
    expect(results.size).toBe(n);
    for (const [i, t] of sent.entries()) {
      const r = results.get(`r-${i}`);
      expect(r.error).toBeNull();
      expect(r.response.status_code).toBe(200);
      if (!t.startsWith('ERRORED'))
        expect(r.response.body).toMatchObject({
          type: 'message',
          content: [{ type: 'text', text: `done ${t}` }],
        });
    }
    // The two errored records ran on the worker, synchronously; nothing else did.
    expect(workerTexts()).toEqual(['ERRORED item 42', 'ERRORED item 7']);
    const rows = await generations([...results.values()].map((r) => r.response.request_id));
    expect(rows).toHaveLength(n);
    const byId = new Map(rows.map((g) => [g.id, g]));
    for (const [i, t] of sent.entries()) {
      const g = byId.get(results.get(`r-${i}`).response.request_id)!;
      expect(g.provider).toBe('bedrock');
      const full =
        (Number(g.prompt_tokens) * PRICE.prompt + Number(g.completion_tokens) * PRICE.completion) / 1e6;
      // Native answers at half price; the worker's at full price.
      if (t.startsWith('ERRORED')) expect(Number(g.cost_usd)).toBeCloseTo(full, 12);
      else expect(Number(g.cost_usd)).toBeCloseTo(HALF, 12);
    }
  });

  it.each([
    'Failed',
    'Expired',
  ] as const)('runs the batch on the worker when the job ends %s', async (status) => {
    const { id, job } = await submitNative(messagesBatch('test/claude', texts(100, status)));
    control.end(job.jobId, status, 'mock: the role cannot read the bucket');
    const done = await waitStatus(id, ['completed']);
    expect(done.request_counts).toEqual({ total: 100, completed: 100, failed: 0 });
    expect(workerTexts()).toHaveLength(100);
  });

  it('runs the batch on the worker when Bedrock refuses the job', async () => {
    const before = control.jobs.length;
    control.refuseNext = { status: 400, type: 'ValidationException', message: 'mock: model not enabled' };
    const created = await call('POST', '/batches', messagesBatch('test/claude', texts(100, 'n')));
    const done = await waitStatus(created.body.id, ['completed']);
    expect(control.refuseNext).toBeNull();
    expect(control.jobs.length).toBe(before);
    expect(done.request_counts).toEqual({ total: 100, completed: 100, failed: 0 });
    expect(workerTexts()).toHaveLength(100);
  });

  it('stops the job when the batch is cancelled; what it finished is kept, the rest cancelled', async () => {
    const { id, job } = await submitNative(messagesBatch('test/claude', texts(100, 'c')));
    control.advance(job.jobId, 'InProgress');
    const cancelled = await call('POST', `/batches/${id}/cancel`);
    expect(cancelled.status).toBe(200);
    await until('the job stop', () => job.stopRequested);
    expect(job.status).toBe('Stopping');
    await control.finish(job.jobId, 'Stopped'); // answered the first half
    const done = await waitStatus(id, ['cancelled']);
    expect(done.request_counts).toEqual({ total: 100, completed: 50, failed: 50 });
    const results = await download(id);
    expect(results.get('r-0').response.body.content[0].text).toBe('done c 0');
    expect(results.get('r-99').error.error_type).toBe('cancelled');
    expect(workerTexts()).toEqual([]);
  });

  it('finds the job a submission that died left behind (by its name) instead of creating another', async () => {
    const { id, job } = await submitNative(messagesBatch('test/claude', texts(100, 'd')));
    await until('the job id stored', async () => {
      const row = await gw.services.db
        .selectFrom('batches')
        .select('native_state')
        .where('id', '=', id)
        .executeTakeFirst();
      return row?.native_state === 'submitted';
    });
    const jobs = control.jobs.length;
    await gw.services.db
      .updateTable('batches')
      .set({ native_state: 'submitting', native_id: null, native_until_ms: 0 })
      .where('id', '=', id)
      .execute();
    await until('the job id recorded again', async () => {
      const row = await gw.services.db
        .selectFrom('batches')
        .select(['native_state', 'native_id'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      return row.native_state === 'submitted' && row.native_id === job.jobArn;
    });
    await control.finish(job.jobId);
    const done = await waitStatus(id, ['completed']);
    expect(control.jobs.length).toBe(jobs);
    expect(done.request_counts).toEqual({ total: 100, completed: 100, failed: 0 });
    expect(done.usage.cost).toBeCloseTo(100 * HALF, 10);
    expect(workerTexts()).toEqual([]);
  });

  it('submits again with the same clientRequestToken when the job is not listed yet: Bedrock answers the same job', async () => {
    const { id, job } = await submitNative(messagesBatch('test/claude', texts(100, 'i')));
    await until('the job id stored', async () => {
      const row = await gw.services.db
        .selectFrom('batches')
        .select('native_state')
        .where('id', '=', id)
        .executeTakeFirst();
      return row?.native_state === 'submitted';
    });
    const jobs = control.jobs.length;
    control.listsNothing = true;
    try {
      await gw.services.db
        .updateTable('batches')
        .set({ native_state: 'submitting', native_id: null, native_until_ms: 0 })
        .where('id', '=', id)
        .execute();
      await until('the resubmission', () => job.creates === 2);
    } finally {
      control.listsNothing = false;
    }
    await until('the same job recorded', async () => {
      const row = await gw.services.db
        .selectFrom('batches')
        .select(['native_state', 'native_id'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      return row.native_state === 'submitted' && row.native_id === job.jobArn;
    });
    expect(control.jobs.length).toBe(jobs);
    await control.finish(job.jobId);
    const done = await waitStatus(id, ['completed']);
    expect(done.request_counts).toEqual({ total: 100, completed: 100, failed: 0 });
    expect(done.usage.cost).toBeCloseTo(100 * HALF, 10);
    expect(workerTexts()).toEqual([]);
  });

  it('keeps on the worker: below the job minimum, without batch settings, and for non-Anthropic models', async () => {
    const before = control.jobs.length;
    const small = await call('POST', '/batches', messagesBatch('test/claude', texts(5, 's')));
    const plain = await call('POST', '/batches', messagesBatch('test/plain', texts(100, 'p')));
    const titan = await call('POST', '/batches', messagesBatch('test/titan', texts(100, 't')));
    for (const b of [small, plain, titan]) {
      expect(b.status, b.text).toBe(202);
      const done = await waitStatus(b.body.id, ['completed']);
      expect(done.request_counts.completed).toBe(done.request_counts.total);
    }
    expect(control.jobs.length).toBe(before);
    // Anthropic models through InvokeModel, the other through Converse.
    expect(workerTexts()).toHaveLength(105);
    expect(runtime.requests.filter((r) => r.operation === 'converse')).toHaveLength(100);
  });
});
