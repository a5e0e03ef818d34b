/**
 * A provider-native batch across real processes (`gatehouse serve` as a child process, as in
 * batches-crash.test.ts): the gateway is SIGKILLed while the provider's batch is in progress, the
 * provider finishes it, and a new gateway resumes polling the same provider batch (never
 * submitting it again) and records every request exactly once, billed once at the discounted
 * price. Read straight from the database, too.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, databases } from './support/gateway.js';
import { strictClient } from './support/http.js';
import { ITEM_USAGE, type MockBatches, startMockBatches } from './support/mock-batches.js';
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

function writeCatalog(db: SharedDatabase, mock: MockBatches): string {
  const file = join(db.dataDir, 'gatehouse.json');
  writeFileSync(
    file,
    JSON.stringify({
      development_provider: false,
      providers: [
        { slug: 'openai', kind: 'openai', base_url: `${mock.url}/openai/v1`, api_key: 'sk-operator-0000' },
      ],
      models: [
        { id: 'test/gpt', endpoints: [{ provider: 'openai', upstream_model: 'gpt-x', pricing: PRICE }] },
      ],
    }),
  );
  return file;
}

describe.each(databases)('a native batch across a SIGKILL (%s)', (kind) => {
  it('SIGKILL while the provider batch runs: a new gateway resumes polling it; one result and one charge per custom_id', async () => {
    const N = 30;
    const db = await sharedDatabase(kind);
    cleanups.push(() => db.drop());
    const mock = await startMockBatches();
    cleanups.push(() => mock.close());
    const keys = newKeys();
    const env = {
      GATEHOUSE_CONFIG: writeCatalog(db, mock),
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
        endpoint: '/v1/chat/completions',
        completion_window: '24h',
        requests: Array.from({ length: N }, (_, i) => ({
          custom_id: customId(i),
          body: {
            model: 'test/gpt',
            max_tokens: 16,
            messages: [{ role: 'user', content: `hi ${customId(i)}` }],
          },
        })),
      });
      const id = batch.id as string;

      // Submitted, recorded, and being polled: then the gateway dies.
      const provider = await waitFor('the provider batch', () => mock.batches[0], { timeoutMs: 20_000 });
      await waitFor(
        'the provider batch id recorded',
        async () =>
          (await count(db, "select count(*) as n from batches where id = ? and native_state = 'submitted'", [
            id,
          ])) === 1,
        { timeoutMs: 20_000 },
      );
      mock.advance(provider.id); // in_progress
      await killHard(first);
      expect(
        await count(db, "select count(*) as n from batch_requests where batch_id = ? and state = 'native'", [
          id,
        ]),
      ).toBe(N);

      mock.finish(provider.id);
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

      // One provider batch, never resubmitted; nothing ran synchronously.
      expect(mock.batches).toHaveLength(1);
      expect(mock.sync).toHaveLength(0);

      const jsonl = (await strictClient(second.url, keys.apiKey)('GET', `/batches/${id}/results`)).text;
      const results = jsonl
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      expect(results.map((r) => r.custom_id).sort()).toEqual(
        Array.from({ length: N }, (_, i) => customId(i)),
      );
      for (const r of results) {
        expect(r.response.body.choices[0].message.content).toBe(`done hi ${r.custom_id}`);
        expect(r.response.body.usage.cost).toBeCloseTo(HALF, 12);
      }
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
      expect(done.usage.cost).toBeCloseTo(N * HALF, 9);
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
