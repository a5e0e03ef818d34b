/**
 * Bedrock batch inference across a SIGKILL (`gatehouse serve` as a child process, as in
 * native-batches-crash.test.ts): the gateway dies while the model invocation job is in progress,
 * the job finishes (its output written to S3), and a new gateway resumes polling the same job
 * (never creating another) and records every request exactly once, billed once at the discount.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, databases } from './support/gateway.js';
import { strictClient } from './support/http.js';
import { ITEM_USAGE } from './support/mock-batches.js';
import { BEDROCK_TEST_KEYS, startMockBedrock } from './support/mock-bedrock.js';
import { startMockBedrockBatch } from './support/mock-bedrock-batch.js';
import {
  type GatehouseProcess,
  killAll,
  killHard,
  newKeys,
  type SharedDatabase,
  sharedDatabase,
  startProcess,
  waitFor,
} from './support/processes.js';
import { registerSecret } from './support/secrets-audit.js';

interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
const require = createRequire(import.meta.url);
const S3rver = require('s3rver') as new (opts: Record<string, unknown>) => S3rverInstance;
// s3rver checks only that it knows the access key (see native-batches-bedrock.test.ts).
(
  require('s3rver/lib/models/account.js') as {
    DUMMY_ACCOUNT: { createKeyPair(id: string, secret: string): void };
  }
).DUMMY_ACCOUNT.createKeyPair(BEDROCK_TEST_KEYS.accessKeyId, BEDROCK_TEST_KEYS.secretAccessKey);

// The audit checks that the AWS secret reaches no response and no log line (S3 and job calls included).
registerSecret('provider-key', BEDROCK_TEST_KEYS.secretAccessKey);

const BUCKET = 'gatehouse-batches';
const MODEL = 'anthropic.claude-test-v1:0';
const PRICE = { prompt: 1, completion: 2 };
const HALF = (ITEM_USAGE.prompt * PRICE.prompt + ITEM_USAGE.completion * PRICE.completion) / 1e6 / 2;
const customId = (i: number) => `req-${String(i).padStart(3, '0')}`;

const api = async <T = any>(base: string, key: string, method: string, path: string, body?: unknown) =>
  (await strictClient(base, key)<T>(method, path, body)).body;

const count = async (db: SharedDatabase, text: string, params: unknown[] = []) =>
  Number((await db.query<{ n: unknown }>(text, params))[0]?.n ?? 0);

const cleanups: (() => Promise<void>)[] = [];
const cleanUp = async () => {
  await killAll();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
};
afterEach(cleanUp);
afterAll(cleanUp);

describe.each(databases)('a Bedrock batch inference job across a SIGKILL (%s)', (kind) => {
  it('SIGKILL while the job runs: a new gateway resumes polling it; one result and one charge per custom_id', async () => {
    const N = 100; // a job's minimum
    const db = await sharedDatabase(kind);
    cleanups.push(() => db.drop());
    mkdirSync(join(db.dataDir, 's3'), { recursive: true });
    const s3 = new S3rver({
      port: 0,
      address: '127.0.0.1',
      silent: true,
      directory: join(db.dataDir, 's3'),
      configureBuckets: [{ name: BUCKET }],
    });
    const s3Url = `http://127.0.0.1:${(await s3.run()).port}`;
    cleanups.push(() => s3.close());
    const runtime = await startMockBedrock();
    cleanups.push(() => runtime.close());
    const control = await startMockBedrockBatch({ s3Endpoint: s3Url });
    cleanups.push(() => control.close());
    const file = join(db.dataDir, 'gatehouse.json');
    writeFileSync(
      file,
      JSON.stringify({
        development_provider: false,
        providers: [
          {
            slug: 'bedrock',
            kind: 'bedrock',
            region: 'us-east-1',
            endpoint: runtime.url,
            access_key_id: BEDROCK_TEST_KEYS.accessKeyId,
            secret_access_key: BEDROCK_TEST_KEYS.secretAccessKey,
            batch_s3_uri: `s3://${BUCKET}/jobs`,
            batch_role_arn: 'arn:aws:iam::123456789012:role/BedrockBatchRole',
            batch_s3_endpoint: s3Url,
            batch_endpoint: control.url,
          },
        ],
        models: [
          { id: 'test/claude', endpoints: [{ provider: 'bedrock', upstream_model: MODEL, pricing: PRICE }] },
        ],
      }),
    );
    const keys = newKeys();
    const env = {
      GATEHOUSE_CONFIG: file,
      GATEHOUSE_CREDITS: 'enforce',
      GATEHOUSE_BATCH_POLL_MS: '50',
      GATEHOUSE_BATCH_NATIVE_POLL_MS: '50',
      GATEHOUSE_BATCH_LEASE_MS: '1500',
    };
    let first: GatehouseProcess | undefined;
    let second: GatehouseProcess | undefined;
    try {
      first = await startProcess('serve', { name: 'serve#1', db, keys, env });
      const orgs = await api(first.url, ADMIN_TOKEN, 'GET', '/admin/organizations');
      const orgId = orgs.data[0].id as string;
      await api(first.url, ADMIN_TOKEN, 'POST', '/admin/credits', {
        organization_id: orgId,
        amount_usd: 100,
      });
      const batch = await api(first.url, keys.apiKey, 'POST', '/batches', {
        endpoint: '/v1/messages',
        completion_window: '24h',
        requests: Array.from({ length: N }, (_, i) => ({
          custom_id: customId(i),
          body: {
            model: 'test/claude',
            max_tokens: 16,
            messages: [{ role: 'user', content: `hi ${customId(i)}` }],
          },
        })),
      });
      const id = batch.id as string;

      const job = await waitFor('the invocation job', () => control.jobs[0], { timeoutMs: 20_000 });
      await waitFor(
        'the job recorded',
        async () =>
          (await count(db, "select count(*) as n from batches where id = ? and native_state = 'submitted'", [
            id,
          ])) === 1,
        { timeoutMs: 20_000 },
      );
      control.advance(job.jobId, 'InProgress');
      await killHard(first);

      await control.finish(job.jobId);
      second = await startProcess('serve', { name: 'serve#2', db, keys, env });
      const done = await waitFor(
        'the batch to complete',
        async () => {
          const b = await api(second!.url, keys.apiKey, 'GET', `/batches/${id}?results_limit=0`);
          return ['completed', 'failed', 'expired', 'cancelled'].includes(b.status) ? b : null;
        },
        { timeoutMs: 30_000, everyMs: 100 },
      );
      expect(done.status).toBe('completed');
      expect(done.request_counts).toEqual({ total: N, completed: N, failed: 0 });
      // One job, never created again; nothing ran synchronously.
      expect(control.jobs).toHaveLength(1);
      expect(runtime.requests).toHaveLength(0);

      const jsonl = (await strictClient(second.url, keys.apiKey)('GET', `/batches/${id}/results`)).text;
      const results = jsonl
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      expect(results.map((r) => r.custom_id).sort()).toEqual(
        Array.from({ length: N }, (_, i) => customId(i)),
      );
      for (const r of results) expect(r.response.body.content[0].text).toBe(`done hi ${r.custom_id}`);
      const generationIds = results.map((r) => r.response.request_id as string);
      expect(new Set(generationIds).size).toBe(N);

      // Straight from the database: one generation and one usage event per request, at half price.
      const generations = await db.query<{ id: string; cost_usd: unknown }>(
        'select id, cost_usd from generations where organization_id = ?',
        [orgId],
      );
      expect(generations.map((g) => g.id).sort()).toEqual([...generationIds].sort());
      for (const g of generations) expect(Number(g.cost_usd)).toBeCloseTo(HALF, 12);
      const usage = await db.query<{ n: unknown; total: unknown }>(
        'select count(*) as n, coalesce(sum(cost_usd), 0) as total from usage_events where organization_id = ?',
        [orgId],
      );
      expect(Number(usage[0]?.n)).toBe(N);
      expect(Number(usage[0]?.total)).toBeCloseTo(N * HALF, 9);
      const credits = await api(second.url, keys.managementKey, 'GET', '/credits');
      expect(credits.data.total_usage).toBeCloseTo(N * HALF, 9);
    } catch (err) {
      const logs = [first, second]
        .filter((p): p is GatehouseProcess => !!p)
        .map((p) => `--- ${p.name} ---\n${p.output().slice(-4000)}`)
        .join('\n');
      if (err instanceof Error) err.message += `\n${logs}`;
      throw err;
    }
  }, 90_000);
});
