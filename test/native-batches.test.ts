import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';
import { ITEM_USAGE, type MockBatch, type MockBatches, startMockBatches } from './support/mock-batches.js';

/*
 * Provider-native batches end to end over real sockets: a batch for a model of an OpenAI or
 * Anthropic provider goes to the mock's Batch API / Message Batches, the test steps the provider's
 * lifecycle, and the results come back mapped to each custom_id, priced at the batch discount.
 * What the provider rejects, or a provider refusing the batch, runs on Gatehouse's own worker.
 */

type Call = ReturnType<typeof client>;

const PRICE = { prompt: 1, completion: 2 };
/** What one answered item costs at list price, and at the providers' 50% batch discount. */
const FULL = (ITEM_USAGE.prompt * PRICE.prompt + ITEM_USAGE.completion * PRICE.completion) / 1e6;
const HALF = FULL / 2;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(
  what: string,
  probe: () => Promise<T | null | undefined> | T | null | undefined,
  timeoutMs = 15_000,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

function writeConfig(mock: MockBatches): string {
  const file = join(mkdtempSync(join(tmpdir(), 'gatehouse-native-')), 'gatehouse.json');
  writeFileSync(
    file,
    JSON.stringify({
      development_provider: false,
      providers: [
        {
          slug: 'openai',
          kind: 'openai',
          base_url: `${mock.url}/openai/v1`,
          api_key: 'sk-operator-openai-0000',
        },
        {
          slug: 'anthropic',
          kind: 'anthropic',
          base_url: `${mock.url}/anthropic`,
          api_key: 'sk-operator-anth-0000',
          discover_models: false, // this mock has no Models API
        },
        {
          slug: 'openai-quarter',
          kind: 'openai',
          base_url: `${mock.url}/openai/v1`,
          api_key: 'sk-operator-quarter-0000',
          batch_discount: 0.25,
        },
        {
          slug: 'openai-direct',
          kind: 'openai',
          base_url: `${mock.url}/openai/v1`,
          api_key: 'sk-operator-direct-0000',
          native_batches: false,
        },
      ],
      models: [
        {
          id: 'test/gpt',
          endpoints: [{ provider: 'openai', upstream_model: 'gpt-upstream', pricing: PRICE }],
        },
        {
          id: 'test/claude',
          endpoints: [{ provider: 'anthropic', upstream_model: 'claude-upstream', pricing: PRICE }],
        },
        {
          id: 'test/quarter',
          endpoints: [{ provider: 'openai-quarter', upstream_model: 'gpt-quarter', pricing: PRICE }],
        },
        {
          id: 'test/embed',
          kind: 'embeddings',
          endpoints: [{ provider: 'openai', upstream_model: 'embed-upstream', pricing: PRICE }],
        },
        {
          id: 'test/direct',
          endpoints: [{ provider: 'openai-direct', upstream_model: 'gpt-direct', pricing: PRICE }],
        },
      ],
    }),
  );
  return file;
}

const chatBatch = (model: string, texts: string[]) => ({
  endpoint: '/v1/chat/completions',
  completion_window: '24h',
  requests: texts.map((t, i) => ({
    custom_id: `q-${i}`,
    // `provider` is Gatehouse's own field: it must not reach the provider's batch.
    body: {
      model,
      messages: [{ role: 'user', content: t }],
      max_tokens: 32,
      provider: { allow_fallbacks: true },
    },
  })),
});

async function waitStatus(call: Call, id: string, statuses: string[]): Promise<any> {
  return until(`batch ${id} in ${statuses.join('/')}`, async () => {
    const r = await call('GET', `/batches/${id}?results_limit=1000`);
    return r.status === 200 && statuses.includes(r.body.status) ? r.body : null;
  });
}

async function download(call: Call, id: string): Promise<Map<string, any>> {
  const res = await call('GET', `/batches/${id}/results`);
  expect(res.status).toBe(200);
  const rows = res.text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  return new Map(rows.map((r) => [r.custom_id, r]));
}

describe.each(databases)('provider-native batches (%s)', (db) => {
  let mock: MockBatches;
  let gw: TestGateway;
  let call: Call;
  let mgmt: Call;

  beforeAll(async () => {
    mock = await startMockBatches();
    gw = await startTestGateway(db, {
      env: {
        GATEHOUSE_CONFIG: writeConfig(mock),
        GATEHOUSE_BATCH_POLL_MS: '20',
        GATEHOUSE_BATCH_NATIVE_POLL_MS: '20',
        GATEHOUSE_RATE_LIMIT_REQUESTS: '0',
        GATEHOUSE_BATCH_RATE_LIMIT: '0',
        GATEHOUSE_CREDITS: 'enforce',
      },
    });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    call = client(gw.url, gw.apiKey);
    mgmt = client(gw.url, gw.managementKey);
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => {
    mock.sync.length = 0;
  });

  /** Creates a batch and waits for the provider batch it becomes (the nth the mock received). */
  async function submitNative(body: object): Promise<{ id: string; provider: MockBatch }> {
    const before = mock.batches.length;
    const created = await call('POST', '/batches', body);
    expect(created.status, created.text).toBe(202);
    const provider = await until('the provider batch', () => mock.batches[before]);
    return { id: created.body.id, provider };
  }

  const generations = (ids: string[]) =>
    gw.services.db
      .selectFrom('generations')
      .select(['id', 'cost_usd', 'provider'])
      .where('id', 'in', ids)
      .execute();

  it('submits an OpenAI batch through the Files and Batch APIs and maps the results back, at half price', async () => {
    const credits0 = (await mgmt('GET', '/credits')).body.data.total_usage as number;
    const { id, provider } = await submitNative(chatBatch('test/gpt', ['one', 'two', 'three']));

    // One provider batch with every request: upstream model ids, no Gatehouse fields.
    expect(provider.vendor).toBe('openai');
    expect(provider.endpoint).toBe('/v1/chat/completions');
    expect(provider.completion_window).toBe('24h');
    expect(provider.metadata).toEqual({ gatehouse_batch_id: id });
    expect(provider.headers.authorization).toBe('Bearer sk-operator-openai-0000');
    expect(provider.items).toHaveLength(3);
    for (const [i, item] of provider.items.entries()) {
      expect(item).toMatchObject({ method: 'POST', url: '/v1/chat/completions' });
      expect(item.body.model).toBe('gpt-upstream');
      expect(item.body.max_tokens).toBe(32);
      expect(item.body.messages).toEqual([{ role: 'user', content: ['one', 'two', 'three'][i] }]);
      expect(item.body).not.toHaveProperty('provider');
    }
    expect([...mock.files.values()].some((f) => f.purpose === 'batch')).toBe(true);

    // While the provider works, the batch is in progress with nothing finished.
    mock.advance(provider.id); // in_progress
    mock.advance(provider.id); // finalizing
    await sleep(100);
    const running = (await call('GET', `/batches/${id}`)).body;
    expect(running.status).toBe('in_progress');
    expect(running.request_counts).toEqual({ total: 3, completed: 0, failed: 0 });

    mock.finish(provider.id);
    const done = await waitStatus(call, id, ['completed']);
    expect(done.request_counts).toEqual({ total: 3, completed: 3, failed: 0 });
    const results = await download(call, id);
    for (const [i, text] of ['one', 'two', 'three'].entries()) {
      const r = results.get(`q-${i}`);
      expect(r.error).toBeNull();
      expect(r.response.status_code).toBe(200);
      expect(r.response.body.choices[0].message.content).toBe(`done ${text}`);
      expect(r.response.body.usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 5 });
      expect(r.response.body.usage.cost).toBeCloseTo(HALF, 12);
    }
    expect(done.usage.cost).toBeCloseTo(3 * HALF, 12);
    // Recorded and billed once each, at the discounted price; nothing ran synchronously.
    const rows = await generations([...results.values()].map((r) => r.response.request_id));
    expect(rows).toHaveLength(3);
    for (const g of rows) {
      expect(g.provider).toBe('openai');
      expect(Number(g.cost_usd)).toBeCloseTo(HALF, 12);
    }
    const credits1 = (await mgmt('GET', '/credits')).body.data.total_usage as number;
    expect(credits1 - credits0).toBeCloseTo(3 * HALF, 12);
    expect(mock.sync).toHaveLength(0);
  });

  it('collects a result file larger than one chunk: every custom_id once', async () => {
    const n = 450;
    const texts = Array.from({ length: n }, (_, i) => (i % 7 === 3 ? `ERRORED ${i}` : `item ${i}`));
    const { id, provider } = await submitNative(chatBatch('test/gpt', texts));
    expect(provider.items).toHaveLength(n);
    mock.finish(provider.id);
    const done = await waitStatus(call, id, ['completed']);
    const rejected = texts.filter((t) => t.startsWith('ERRORED')).length;
    expect(done.request_counts).toEqual({ total: n, completed: n, failed: 0 });
    const results = await download(call, id);
    expect(results.size).toBe(n);
    expect(new Set([...results.values()].map((r) => r.response.request_id)).size).toBe(n);
    expect(mock.sync).toHaveLength(rejected);
    expect(done.usage.cost).toBeCloseTo((n - rejected) * HALF + rejected * FULL, 10);
  });

  it('runs the items the provider rejected (errored, expired) on the worker, at full price', async () => {
    const { id, provider } = await submitNative(
      chatBatch('test/gpt', ['fine', 'ERRORED here', 'EXPIRED here']),
    );
    mock.finish(provider.id);
    const done = await waitStatus(call, id, ['completed']);
    expect(done.request_counts).toEqual({ total: 3, completed: 3, failed: 0 });
    const results = await download(call, id);
    expect(results.get('q-0').response.body.usage.cost).toBeCloseTo(HALF, 12);
    expect(results.get('q-1').response.body.choices[0].message.content).toBe('done ERRORED here');
    expect(results.get('q-1').response.body.usage.cost).toBeCloseTo(FULL, 12);
    expect(results.get('q-2').response.body.usage.cost).toBeCloseTo(FULL, 12);
    // Exactly the two rejected ones went out synchronously, each once.
    expect(mock.sync.map((s) => s.body.messages[0].content).sort()).toEqual(['ERRORED here', 'EXPIRED here']);
    expect(mock.sync.every((s) => s.body.model === 'gpt-upstream')).toBe(true);
    expect(done.usage.cost).toBeCloseTo(HALF + 2 * FULL, 12);
  });

  it('submits an Anthropic Message Batch for /v1/messages and maps its results', async () => {
    const { id, provider } = await submitNative({
      endpoint: '/v1/messages',
      completion_window: '24h',
      requests: ['alpha', 'ERRORED beta'].map((t, i) => ({
        custom_id: `m-${i}`,
        body: { model: 'test/claude', max_tokens: 64, messages: [{ role: 'user', content: t }] },
      })),
    });
    expect(provider.vendor).toBe('anthropic');
    expect(provider.headers['x-api-key']).toBe('sk-operator-anth-0000');
    expect(provider.headers['anthropic-version']).toBe('2023-06-01');
    expect(provider.items.map((i) => i.custom_id)).toEqual(['gh-0', 'gh-1']);
    expect(provider.items[0]?.body).toEqual({
      model: 'claude-upstream',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'alpha' }],
    });
    expect((await call('GET', `/batches/${id}`)).body.status).toBe('in_progress');
    mock.finish(provider.id);
    const done = await waitStatus(call, id, ['completed']);
    const results = await download(call, id);
    const alpha = results.get('m-0');
    expect(alpha.response.body).toMatchObject({
      type: 'message',
      content: [{ type: 'text', text: 'done alpha' }],
    });
    // The errored one ran on the worker, synchronously, at full price.
    expect(results.get('m-1').response.body.content[0].text).toBe('done ERRORED beta');
    expect(mock.sync.map((s) => s.path)).toEqual(['/anthropic/v1/messages']);
    expect(done.usage.cost).toBeCloseTo(HALF + FULL, 12);
  });

  it('runs the whole batch on the worker when the provider refuses it', async () => {
    const before = mock.batches.length;
    mock.refuseNext = { status: 400, message: 'mock: batch refused' };
    const created = await call('POST', '/batches', chatBatch('test/gpt', ['a', 'b']));
    const done = await waitStatus(call, created.body.id, ['completed']);
    expect(mock.batches.length).toBe(before);
    expect(mock.refuseNext).toBeNull();
    expect(done.request_counts).toEqual({ total: 2, completed: 2, failed: 0 });
    expect(mock.sync).toHaveLength(2);
    expect(done.usage.cost).toBeCloseTo(2 * FULL, 12);
  });

  it('runs the batch on the worker when the provider batch fails', async () => {
    const { id, provider } = await submitNative(chatBatch('test/gpt', ['x', 'y']));
    mock.end(provider.id, 'failed');
    const done = await waitStatus(call, id, ['completed']);
    expect(done.request_counts).toEqual({ total: 2, completed: 2, failed: 0 });
    expect(mock.sync).toHaveLength(2);
    expect(done.usage.cost).toBeCloseTo(2 * FULL, 12);
  });

  it('runs the batch on the worker when the provider no longer knows its batch (404)', async () => {
    const { id, provider } = await submitNative(chatBatch('test/gpt', ['gone']));
    mock.batches.splice(mock.batches.indexOf(provider), 1);
    const done = await waitStatus(call, id, ['completed']);
    expect(done.request_counts).toEqual({ total: 1, completed: 1, failed: 0 });
    expect(mock.sync).toHaveLength(1);
    expect(done.usage.cost).toBeCloseTo(FULL, 12);
  });

  it('keeps a provider with native_batches: false on the worker', async () => {
    const before = mock.batches.length;
    const created = await call('POST', '/batches', chatBatch('test/direct', ['p', 'q']));
    const done = await waitStatus(call, created.body.id, ['completed']);
    expect(mock.batches.length).toBe(before);
    expect(mock.sync.map((s) => s.body.model)).toEqual(['gpt-direct', 'gpt-direct']);
    expect(done.usage.cost).toBeCloseTo(2 * FULL, 12);
  });

  it('applies the key guardrail per request: a blocked one gets its error, a redacted one goes redacted', async () => {
    const key = await mgmt('POST', '/keys', { name: 'filtered' });
    const g = await mgmt('POST', '/guardrails', {
      name: 'filters',
      content_filters: [
        { pattern: 'FORBIDDEN', action: 'block' },
        { pattern: '[0-9]{3}-[0-9]{4}', action: 'redact' },
      ],
    });
    expect(g.status, g.text).toBe(201);
    await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
      key_hashes: [key.body.data.hash],
    });
    const filtered = client(gw.url, key.body.key);
    const before = mock.batches.length;
    const created = await filtered(
      'POST',
      '/batches',
      chatBatch('test/gpt', ['plain', 'a FORBIDDEN word', 'call 555-1234']),
    );
    expect(created.status, created.text).toBe(202);
    const provider = await until('the provider batch', () => mock.batches[before]);
    // The blocked request never reached the provider; the redacted one reached it redacted.
    expect(provider.items.map((i) => i.custom_id)).toEqual(['gh-0', 'gh-2']);
    expect(JSON.stringify(provider.items)).not.toContain('555-1234');
    mock.finish(provider.id);
    const done = await waitStatus(filtered, created.body.id, ['completed']);
    expect(done.request_counts).toEqual({ total: 3, completed: 2, failed: 1 });
    const results = await download(filtered, created.body.id);
    expect(results.get('q-1').response).toBeNull();
    expect(results.get('q-1').error.message).toMatch(/block|filter/i);
    expect(results.get('q-0').response.body.usage.cost).toBeCloseTo(HALF, 12);
    expect(JSON.stringify(mock.sync)).not.toContain('FORBIDDEN');
  });

  it('submits /v1/responses and /v1/embeddings batches to OpenAI with their own result shapes', async () => {
    const responses = await submitNative({
      endpoint: '/v1/responses',
      completion_window: '24h',
      requests: [{ custom_id: 'r-0', body: { model: 'test/gpt', input: 'hello responses' } }],
    });
    expect(responses.provider.endpoint).toBe('/v1/responses');
    expect(responses.provider.items[0]).toMatchObject({
      url: '/v1/responses',
      body: { model: 'gpt-upstream', input: 'hello responses' },
    });
    mock.finish(responses.provider.id);
    const r = await waitStatus(call, responses.id, ['completed']);
    const rr = (await download(call, responses.id)).get('r-0');
    expect(rr.response.body).toMatchObject({ object: 'response', status: 'completed' });
    expect(rr.response.body.output[0].content[0].text).toBe('done hello responses');
    expect(r.usage.cost).toBeCloseTo(HALF, 12);

    const embeddings = await submitNative({
      endpoint: '/v1/embeddings',
      completion_window: '24h',
      requests: [{ custom_id: 'e-0', body: { model: 'test/embed', input: 'vector me' } }],
    });
    expect(embeddings.provider.items[0]).toMatchObject({
      url: '/v1/embeddings',
      body: { model: 'embed-upstream' },
    });
    mock.finish(embeddings.provider.id);
    const e = await waitStatus(call, embeddings.id, ['completed']);
    const er = (await download(call, embeddings.id)).get('e-0');
    expect(er.response.body.data[0].embedding).toHaveLength(4);
    expect(e.usage.cost).toBeCloseTo((ITEM_USAGE.prompt * PRICE.prompt) / 1e6 / 2, 12);
    expect(mock.sync).toHaveLength(0);
  });

  it("prices at the provider's configured batch_discount", async () => {
    const { id, provider } = await submitNative(chatBatch('test/quarter', ['d']));
    expect(provider.headers.authorization).toBe('Bearer sk-operator-quarter-0000');
    mock.finish(provider.id);
    const done = await waitStatus(call, id, ['completed']);
    expect(done.usage.cost).toBeCloseTo(FULL * 0.75, 12);
    const r = (await download(call, id)).get('q-0');
    const [g] = await generations([r.response.request_id]);
    expect(Number(g?.cost_usd)).toBeCloseTo(FULL * 0.75, 12);
  });

  it('cancels the provider batch when the batch expires first', async () => {
    const { id, provider } = await submitNative(chatBatch('test/gpt', ['slow']));
    mock.advance(provider.id); // in_progress
    // As if the 24 hours had passed.
    await gw.services.db
      .updateTable('batches')
      .set({ expires_at: Math.floor(Date.now() / 1000) - 1 })
      .where('id', '=', id)
      .execute();
    const done = await waitStatus(call, id, ['expired']);
    await until('the provider cancel', () => provider.cancelRequested);
    expect(done.request_counts).toEqual({ total: 1, completed: 0, failed: 1 });
    expect((await download(call, id)).get('q-0').error.error_type).toBe('expired');
    expect(done.usage.cost).toBe(0);
    expect(mock.sync).toHaveLength(0);
  });

  /** As if the gateway had died between the provider accepting the batch and its id being stored. */
  async function forgetSubmission(id: string) {
    await until('the provider batch id stored', async () => {
      const row = await gw.services.db
        .selectFrom('batches')
        .select('native_state')
        .where('id', '=', id)
        .executeTakeFirst();
      return row?.native_state === 'submitted';
    });
    await gw.services.db
      .updateTable('batches')
      .set({ native_state: 'submitting', native_id: null, native_until_ms: 0 })
      .where('id', '=', id)
      .execute();
  }

  it('finds the OpenAI batch a submission that died left behind (by its metadata) instead of submitting again', async () => {
    const { id, provider } = await submitNative(chatBatch('test/gpt', ['r1', 'r2']));
    const submitted = mock.batches.length;
    await forgetSubmission(id);
    await until('the provider batch id recorded again', async () => {
      const row = await gw.services.db
        .selectFrom('batches')
        .select(['native_state', 'native_id'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      return row.native_state === 'submitted' && row.native_id === provider.id;
    });
    mock.finish(provider.id);
    const done = await waitStatus(call, id, ['completed']);
    expect(mock.batches.length).toBe(submitted);
    expect(done.request_counts).toEqual({ total: 2, completed: 2, failed: 0 });
    expect(done.usage.cost).toBeCloseTo(2 * HALF, 12);
    expect(mock.sync).toHaveLength(0);
  });

  it('submits an Anthropic batch again when a submission died before storing its id: results and charges once', async () => {
    const body = {
      endpoint: '/v1/messages',
      completion_window: '24h',
      requests: ['s1', 's2'].map((t, i) => ({
        custom_id: `s-${i}`,
        body: { model: 'test/claude', max_tokens: 8, messages: [{ role: 'user', content: t }] },
      })),
    };
    const { id, provider: orphan } = await submitNative(body);
    const before = mock.batches.length;
    await forgetSubmission(id);
    const again = await until('the second provider batch', () => mock.batches[before]);
    expect(again.items.map((i) => i.custom_id)).toEqual(['gh-0', 'gh-1']);
    // Both end; only the recorded one is collected.
    mock.finish(orphan.id);
    mock.finish(again.id);
    const done = await waitStatus(call, id, ['completed']);
    expect(done.request_counts).toEqual({ total: 2, completed: 2, failed: 0 });
    const results = await download(call, id);
    expect([...results.keys()].sort()).toEqual(['s-0', 's-1']);
    const rows = await generations([...results.values()].map((r) => r.response.request_id));
    expect(rows).toHaveLength(2);
    expect(done.usage.cost).toBeCloseTo(2 * HALF, 12);
  });

  it('cancels the provider batch when the batch is cancelled', async () => {
    const { id, provider } = await submitNative(chatBatch('test/gpt', ['c1', 'c2']));
    mock.advance(provider.id); // in_progress
    const cancelled = await call('POST', `/batches/${id}/cancel`);
    expect(cancelled.status).toBe(200);
    await until('the provider cancel', () => provider.cancelRequested);
    expect(provider.status).toBe('cancelling');
    expect((await call('GET', `/batches/${id}`)).body.status).toBe('cancelling');
    mock.advance(provider.id); // cancelled: nothing ran
    const done = await waitStatus(call, id, ['cancelled']);
    expect(done.request_counts).toEqual({ total: 2, completed: 0, failed: 2 });
    const results = await download(call, id);
    for (const r of results.values()) expect(r.error.error_type).toBe('cancelled');
    expect(mock.sync).toHaveLength(0);
    expect(done.usage.cost).toBe(0);
  });
});
