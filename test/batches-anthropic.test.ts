import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { client, makeOrganization } from './support/http.js';
import { type MockBatches, startMockBatches } from './support/mock-batches.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

/*
 * Anthropic's Message Batches API through the real `@anthropic-ai/sdk` client, unchanged, against
 * a gateway on a real socket: create, poll, results() (which fetches results_url), list with the
 * SDK's auto-paging, cancel, delete, refusals in Anthropic's error format — and one batch handed to
 * Anthropic's own batch API (the mock of test/support/mock-batches.ts).
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A directive for the dev provider (gatehouse/echo): reply text, delay, errors. */
const script = (s: object) => `gatehouse:${JSON.stringify(s)}`;

const params = (model: string, content: string, extra: object = {}) => ({
  model,
  max_tokens: 64,
  messages: [{ role: 'user' as const, content }],
  ...extra,
});

async function until<T>(what: string, probe: () => Promise<T | null | undefined>, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

const ended = (anthropic: Anthropic, id: string) =>
  until(`message batch ${id} ended`, async () => {
    const b = await anthropic.messages.batches.retrieve(id);
    return b.processing_status === 'ended' ? b : null;
  });

async function resultsOf(anthropic: Anthropic, id: string) {
  const out: Anthropic.Messages.MessageBatchIndividualResponse[] = [];
  for await (const r of await anthropic.messages.batches.results(id)) out.push(r);
  return out;
}

const textOf = (r: Anthropic.Messages.MessageBatchIndividualResponse) =>
  r.result.type === 'succeeded' ? (r.result.message.content[0] as { text: string }).text : null;

/** The error a call rejects with (the SDK's typed error). */
async function refusal(p: Promise<unknown>): Promise<InstanceType<typeof Anthropic.APIError>> {
  try {
    await p;
  } catch (err) {
    if (err instanceof Anthropic.APIError) return err;
    throw err;
  }
  throw new Error('the call was not refused');
}

const FAST = {
  GATEHOUSE_BATCH_POLL_MS: '20',
  GATEHOUSE_RATE_LIMIT_REQUESTS: '0',
  GATEHOUSE_BATCH_RATE_LIMIT: '0',
  // Few requests run at once: a cancelled batch has requests never started.
  GATEHOUSE_BATCH_CONCURRENCY: '4',
};

describe.each(databases)('Message Batches with the Anthropic SDK (%s)', (db) => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let anthropic: Anthropic;

  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway(db, { env: { ...up.env, ...FAST } });
    anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });

  const batchRows = async () =>
    Number(
      (
        await gw.services.db
          .selectFrom('batches')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('creates a batch, polls it to its end and reads its results in request order', async () => {
    const texts = ['first', 'second', 'third', 'fourth'];
    const created = await anthropic.messages.batches.create({
      requests: texts.map((t, i) => ({ custom_id: `req-${i}`, params: params('gatehouse/echo', t) })),
    });
    expect(created).toMatchObject({
      id: expect.stringMatching(/^msgbatch_[0-9a-f]+$/),
      type: 'message_batch',
      processing_status: 'in_progress',
      results_url: null,
      ended_at: null,
      cancel_initiated_at: null,
      archived_at: null,
    });
    expect(created.request_counts.processing + created.request_counts.succeeded).toBe(4);
    expect(new Date(created.created_at).toISOString()).toBe(created.created_at);
    expect(Date.parse(created.expires_at) - Date.parse(created.created_at)).toBe(24 * 3600 * 1000);

    const done = await ended(anthropic, created.id);
    expect(done.request_counts).toEqual({ processing: 0, succeeded: 4, errored: 0, canceled: 0, expired: 0 });
    expect(done.results_url).toBe(`${gw.url}/api/v1/messages/batches/${created.id}/results`);
    expect(Date.parse(done.ended_at as string)).toBeGreaterThanOrEqual(Date.parse(done.created_at));

    const results = await resultsOf(anthropic, created.id);
    expect(results.map((r) => r.custom_id)).toEqual(['req-0', 'req-1', 'req-2', 'req-3']);
    expect(results.map(textOf)).toEqual(texts);
    expect(results[0]?.result).toMatchObject({
      type: 'succeeded',
      message: { type: 'message', role: 'assistant', stop_reason: 'end_turn' },
    });

    // The same batch, under Gatehouse's own id, on the Gatehouse batch routes.
    const own = await client(gw.url, gw.apiKey)(
      'GET',
      `/batches/${created.id.replace('msgbatch_', 'batch_')}`,
    );
    expect(own.body).toMatchObject({ endpoint: '/v1/messages', status: 'completed' });
  });

  it('passes params through to an Anthropic provider; a request the upstream refuses is errored', async () => {
    mock.reset();
    mock.enqueue({
      match: { model: 'claude-x' },
      status: 400,
      error: { type: 'invalid_request_error', message: 'prompt is too long' },
    });
    const created = await anthropic.messages.batches.create({
      requests: ['one', 'two', 'three'].map((t, i) => ({
        custom_id: `c-${i}`,
        params: params('test/claude', t, { top_k: 7, system: 'Be brief.' }),
      })),
    });
    const done = await ended(anthropic, created.id);
    expect(done.request_counts).toMatchObject({ succeeded: 2, errored: 1, processing: 0 });

    const sent = mock.requests.filter((r) => r.path.endsWith('/messages'));
    expect(sent).toHaveLength(3);
    for (const r of sent) expect(r.body).toMatchObject({ model: 'claude-x', top_k: 7, system: 'Be brief.' });
    // The first request to arrive took the refusal.
    const refused = `c-${['one', 'two', 'three'].indexOf(sent[0]?.body.messages[0].content)}`;

    const results = await resultsOf(anthropic, created.id);
    expect(results.map((r) => r.custom_id)).toEqual(['c-0', 'c-1', 'c-2']);
    for (const r of results) {
      if (r.custom_id === refused)
        expect(r.result).toEqual({
          type: 'errored',
          error: {
            type: 'error',
            error: { type: 'invalid_request_error', message: expect.stringContaining('prompt is too long') },
            request_id: null,
          },
        });
      else expect(textOf(r)).toBe('Hello from claude-x!');
    }
  });

  it('answers a model served in OpenAI format as Anthropic Messages (translated)', async () => {
    mock.reset();
    const created = await anthropic.messages.batches.create({
      requests: [{ custom_id: 'g-0', params: params('test/gpt', 'translate me') }],
    });
    await ended(anthropic, created.id);
    const chat = mock.requests.filter((r) => r.path.endsWith('/chat/completions'));
    expect(chat).toHaveLength(1);
    expect(chat[0]?.body).toMatchObject({
      model: 'gpt-x',
      messages: [{ role: 'user', content: 'translate me' }],
    });
    const [r] = await resultsOf(anthropic, created.id);
    expect(r?.result).toMatchObject({
      type: 'succeeded',
      message: {
        type: 'message',
        role: 'assistant',
        content: [{ type: 'text', text: 'Hello from gpt-x!' }],
        usage: { input_tokens: expect.any(Number), output_tokens: expect.any(Number) },
      },
    });
  });

  it('runs a batch mixing models, each request on its own model, with the betas of the create call', async () => {
    mock.reset();
    const betas = ['interleaved-thinking-2025-05-14', 'context-1m-2025-08-07'];
    const created = await anthropic.beta.messages.batches.create({
      requests: [
        { custom_id: 'to-claude', params: params('test/claude', 'for claude', { top_k: 3 }) },
        { custom_id: 'to-gpt', params: params('test/gpt', 'for gpt') },
        { custom_id: 'to-echo', params: params('gatehouse/echo', 'for echo') },
        { custom_id: 'to-claude-2', params: params('test/claude', 'for claude again') },
      ],
      betas,
    });
    const done = await ended(anthropic, created.id);
    expect(done.request_counts).toMatchObject({ succeeded: 4, errored: 0 });
    const results = await resultsOf(anthropic, created.id);
    expect(results.map((r) => [r.custom_id, textOf(r)])).toEqual([
      ['to-claude', 'Hello from claude-x!'],
      ['to-gpt', 'Hello from gpt-x!'],
      ['to-echo', 'for echo'],
      ['to-claude-2', 'Hello from claude-x!'],
    ]);
    // Each request reached its own model's provider; the betas went to Anthropic as the synchronous
    // /messages would send them, and not to the OpenAI provider (a translated call drops them).
    const toClaude = mock.requests.filter((r) => r.path === '/anthropic/v1/messages');
    expect(toClaude.map((r) => r.body.messages[0].content).sort()).toEqual([
      'for claude',
      'for claude again',
    ]);
    for (const r of toClaude) {
      expect(r.body.model).toBe('claude-x');
      expect(r.headers['anthropic-beta']).toBe(betas.join(','));
      expect(r.headers['x-api-key']).toBe('sk-operator-anthropic-00');
    }
    expect(toClaude.find((r) => r.body.messages[0].content === 'for claude')?.body.top_k).toBe(3);
    const toGpt = mock.requests.filter((r) => r.path === '/openai/v1/chat/completions');
    expect(toGpt.map((r) => [r.body.model, r.body.messages[0].content])).toEqual([['gpt-x', 'for gpt']]);
    expect(toGpt[0]?.headers['anthropic-beta']).toBeUndefined();
    expect(mock.requests).toHaveLength(3);

    // On the Gatehouse routes: a batch of several models names none.
    const own = await client(gw.url, gw.apiKey)(
      'GET',
      `/batches/${created.id.replace('msgbatch_', 'batch_')}`,
    );
    expect(own.body).toMatchObject({ endpoint: '/v1/messages', model: null, status: 'completed' });

    // A batch created without betas sends none.
    mock.reset();
    const plain = await anthropic.messages.batches.create({
      requests: [{ custom_id: 'plain', params: params('test/claude', 'no betas') }],
    });
    await ended(anthropic, plain.id);
    expect(mock.requests.map((r) => [r.path, r.headers['anthropic-beta']])).toEqual([
      ['/anthropic/v1/messages', undefined],
    ]);
  });

  it('403 for a batch mixing models when the key may not use one of them', async () => {
    const mgmt = client(gw.url, gw.managementKey);
    const key = await mgmt('POST', '/keys', { name: `mix ${db}` });
    const g = await mgmt('POST', '/guardrails', { name: 'claude only', allowed_models: ['test/claude'] });
    await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
      key_hashes: [key.body.data.hash],
    });
    const limited = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: key.body.key, maxRetries: 0 });
    const rows = await batchRows();
    const err = await refusal(
      limited.messages.batches.create({
        requests: [
          { custom_id: 'ok', params: params('test/claude', 'x') },
          { custom_id: 'forbidden', params: params('test/gpt', 'y') },
        ],
      }),
    );
    expect(err.status).toBe(403);
    expect(err.error).toMatchObject({
      type: 'error',
      error: { type: 'permission_error', message: expect.stringContaining('test/gpt') },
    });
    expect(await batchRows()).toBe(rows);
  });

  it("lists a key's message batches newest first, page by page with the SDK's auto-paging", async () => {
    const other = await makeOrganization(gw.url, `Lister ${db}`);
    const sdk = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: other.apiKey, maxRetries: 0 });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(
        (
          await sdk.messages.batches.create({
            requests: [{ custom_id: `l-${i}`, params: params('gatehouse/echo', `list ${i}`) }],
          })
        ).id,
      );
    // A chat-completions batch of the same key is no message batch.
    await client(gw.url, other.apiKey)('POST', '/batches', {
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      requests: [
        { custom_id: 'x', body: { model: 'gatehouse/echo', messages: [{ role: 'user', content: 'x' }] } },
      ],
    });
    const newestFirst = [...ids].reverse();

    const page = await sdk.messages.batches.list({ limit: 2 });
    expect(page.data.map((b) => b.id)).toEqual(newestFirst.slice(0, 2));
    expect(page).toMatchObject({ has_more: true, first_id: newestFirst[0], last_id: newestFirst[1] });

    const all: string[] = [];
    for await (const b of sdk.messages.batches.list({ limit: 2 })) all.push(b.id);
    expect(all).toEqual(newestFirst);

    // Backwards: the batches newer than the oldest, nearest first, in list order.
    const before = await sdk.messages.batches.list({ limit: 2, before_id: ids[0] });
    expect(before.data.map((b) => b.id)).toEqual([ids[2], ids[1]]);
    expect(before.has_more).toBe(true);
    const last = await sdk.messages.batches.list({ limit: 10, after_id: ids[1] });
    expect(last.data.map((b) => b.id)).toEqual([ids[0]]);
    expect(last.has_more).toBe(false);

    // Another key's batches are not in this list.
    const mine: string[] = [];
    for await (const b of anthropic.messages.batches.list({ limit: 100 })) mine.push(b.id);
    expect(mine.filter((id) => ids.includes(id))).toEqual([]);
  });

  it('cancels a batch, refuses to delete it before it has ended, then deletes it', async () => {
    const n = 24;
    const created = await anthropic.messages.batches.create({
      requests: Array.from({ length: n }, (_, i) => ({
        custom_id: `slow-${i}`,
        params: params('gatehouse/echo', script({ text: `slow ${i}`, delay_ms: 1500 })),
      })),
    });
    const early = await refusal(anthropic.messages.batches.delete(created.id));
    expect(early.status).toBe(409);
    expect(early.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });

    const canceling = await anthropic.messages.batches.cancel(created.id);
    expect(['canceling', 'ended']).toContain(canceling.processing_status);
    expect(canceling.cancel_initiated_at).toEqual(expect.any(String));

    const done = await ended(anthropic, created.id);
    const counts = done.request_counts;
    expect(counts.canceled).toBeGreaterThan(0);
    expect(counts.succeeded + counts.canceled).toBe(n);
    const results = await resultsOf(anthropic, created.id);
    expect(results.map((r) => r.custom_id)).toEqual(Array.from({ length: n }, (_, i) => `slow-${i}`));
    expect(results.filter((r) => r.result.type === 'canceled')).toHaveLength(counts.canceled);

    expect(await anthropic.messages.batches.delete(created.id)).toEqual({
      id: created.id,
      type: 'message_batch_deleted',
    });
    expect((await refusal(anthropic.messages.batches.retrieve(created.id))).status).toBe(404);
    const own = await client(gw.url, gw.apiKey)(
      'GET',
      `/batches/${created.id.replace('msgbatch_', 'batch_')}`,
    );
    expect(own.status).toBe(404);
  });

  it("refuses bad input in Anthropic's error format and keeps nothing of it", async () => {
    const rows = await batchRows();
    const cases: [unknown, RegExp][] = [
      [
        { requests: [{ custom_id: 's', params: { ...params('gatehouse/echo', 'x'), stream: true } }] },
        /requests\[0\] \(custom_id "s"\)\.params\.stream/,
      ],
      [
        { requests: [{ custom_id: 'has space', params: params('gatehouse/echo', 'x') }] },
        /custom_id must be 1 to 64/,
      ],
      [
        { requests: [{ custom_id: 'x'.repeat(65), params: params('gatehouse/echo', 'x') }] },
        /custom_id must be 1 to 64/,
      ],
      [
        {
          requests: [
            { custom_id: 'dup', params: params('gatehouse/echo', 'x') },
            { custom_id: 'dup', params: params('gatehouse/echo', 'y') },
          ],
        },
        /requests\[1\] \(custom_id "dup"\): duplicate custom_id/,
      ],
      [{ requests: [] }, /at least one request/],
      [{}, /at least one request/],
      [{ requests: [{ custom_id: 'p', params: 'nope' }] }, /\.params: must be an object/],
      [
        { requests: [{ custom_id: 'm', params: params('no/such-model', 'x') }] },
        /\.params\.model: model no\/such-model not found/,
      ],
      [{ requests: [{ custom_id: 'b', body: params('gatehouse/echo', 'x') }] }, /unknown field "body"/],
      [{ requests: [], metadata: {} }, /Unknown field "metadata"/],
    ];
    for (const [body, message] of cases) {
      const err = await refusal(
        anthropic.messages.batches.create(body as Anthropic.Messages.BatchCreateParams),
      );
      expect(err.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(err.error).toMatchObject({
        type: 'error',
        error: { type: 'invalid_request_error', message: expect.stringMatching(message) },
      });
    }
    // Over a plain socket: malformed JSON, and params nested deeper than any client serializes.
    const deep = `{"model":"gatehouse/echo","max_tokens":5,"metadata":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`;
    for (const [body, message] of [
      ['{"requests": [{"custom_id": "a", "params": {', /./],
      [
        `{"requests": [{"custom_id": "deep", "params": ${deep}}]}`,
        /\.params: JSON nested deeper than 128 levels/,
      ],
    ] as const) {
      const res = await fetch(`${gw.url}/api/v1/messages/batches`, {
        method: 'POST',
        headers: { 'x-api-key': gw.apiKey, 'content-type': 'application/json' },
        body,
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({
        type: 'error',
        error: { type: 'invalid_request_error', message: expect.stringMatching(message) },
      });
    }
    expect(await batchRows()).toBe(rows);
    expect(
      (await refusal(anthropic.messages.batches.list({ before_id: 'batch_1' } as never))).error,
    ).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  it('refuses management keys (403) and answers 404 to another organization', async () => {
    const created = await anthropic.messages.batches.create({
      requests: [{ custom_id: 'mine', params: params('gatehouse/echo', 'private') }],
    });
    await ended(anthropic, created.id);

    const mgmt = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.managementKey, maxRetries: 0 });
    for (const call of [
      () => mgmt.messages.batches.retrieve(created.id),
      () => mgmt.messages.batches.list(),
      () =>
        mgmt.messages.batches.create({
          requests: [{ custom_id: 'a', params: params('gatehouse/echo', 'x') }],
        }),
    ]) {
      const err = await refusal(call());
      expect(err.status).toBe(403);
      expect(err.error).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
    }

    const other = await makeOrganization(gw.url, `Intruder ${db}`);
    const theirs = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: other.apiKey, maxRetries: 0 });
    for (const call of [
      () => theirs.messages.batches.retrieve(created.id),
      () => theirs.messages.batches.cancel(created.id),
      () => theirs.messages.batches.delete(created.id),
    ]) {
      const err = await refusal(call());
      expect(err.status).toBe(404);
      expect(err.error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    }
    const stolen = await fetch(`${gw.url}/api/v1/messages/batches/${created.id}/results`, {
      headers: { 'x-api-key': other.apiKey },
    });
    expect(stolen.status).toBe(404);
    expect(await stolen.text()).not.toContain('private');
    expect((await theirs.messages.batches.list()).data).toEqual([]);
    expect((await anthropic.messages.batches.retrieve(created.id)).processing_status).toBe('ended');
  });

  it('builds results_url from the proxy headers, and shows inline /v1/messages batches too', async () => {
    const inline = await client(gw.url, gw.apiKey)('POST', '/batches', {
      endpoint: '/v1/messages',
      completion_window: '24h',
      requests: [{ custom_id: 'inline-0', body: params('gatehouse/echo', 'inline') }],
    });
    expect(inline.status).toBe(202);
    const id = inline.body.id.replace('batch_', 'msgbatch_');
    await ended(anthropic, id);
    const res = await fetch(`${gw.url}/api/v1/messages/batches/${id}`, {
      headers: {
        'x-api-key': gw.apiKey,
        'x-forwarded-proto': 'https',
        'x-forwarded-host': 'gateway.example.com',
      },
    });
    expect(((await res.json()) as { results_url: string }).results_url).toBe(
      `https://gateway.example.com/api/v1/messages/batches/${id}/results`,
    );
    expect((await resultsOf(anthropic, id)).map(textOf)).toEqual(['inline']);

    // A batch of another endpoint is no message batch.
    const chat = await client(gw.url, gw.apiKey)('POST', '/batches', {
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      requests: [
        { custom_id: 'c', body: { model: 'gatehouse/echo', messages: [{ role: 'user', content: 'c' }] } },
      ],
    });
    const err = await refusal(
      anthropic.messages.batches.retrieve(chat.body.id.replace('batch_', 'msgbatch_')),
    );
    expect(err.status).toBe(404);
  });
});

describe.each(databases)("Message Batches handed to Anthropic's batch API (%s)", (db) => {
  let mock: MockBatches;
  let gw: TestGateway;

  beforeAll(async () => {
    mock = await startMockBatches();
    const file = join(mkdtempSync(join(tmpdir(), 'gatehouse-msgbatch-')), 'gatehouse.json');
    writeFileSync(
      file,
      JSON.stringify({
        development_provider: false,
        providers: [
          {
            slug: 'anthropic',
            kind: 'anthropic',
            base_url: `${mock.url}/anthropic`,
            api_key: 'sk-operator-anth-0000',
            discover_models: false, // this mock has no Models API
          },
        ],
        models: [
          {
            id: 'test/claude',
            endpoints: [
              {
                provider: 'anthropic',
                upstream_model: 'claude-upstream',
                pricing: { prompt: 1, completion: 2 },
              },
            ],
          },
          {
            id: 'test/claude-other',
            endpoints: [
              {
                provider: 'anthropic',
                upstream_model: 'claude-other-upstream',
                pricing: { prompt: 1, completion: 2 },
              },
            ],
          },
        ],
      }),
    );
    gw = await startTestGateway(db, {
      env: { ...FAST, GATEHOUSE_CONFIG: file, GATEHOUSE_BATCH_NATIVE_POLL_MS: '20' },
    });
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });

  it("submits the requests to Anthropic's Message Batches and answers with its results", async () => {
    const anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
    const created = await anthropic.messages.batches.create({
      requests: ['alpha', 'beta'].map((t, i) => ({ custom_id: `n-${i}`, params: params('test/claude', t) })),
    });
    const provider = await until('the provider batch', async () => mock.batches[0]);
    expect(provider.vendor).toBe('anthropic');
    expect(provider.headers['x-api-key']).toBe('sk-operator-anth-0000');
    expect(provider.items.map((i) => i.body)).toEqual([
      params('claude-upstream', 'alpha'),
      params('claude-upstream', 'beta'),
    ]);
    expect((await anthropic.messages.batches.retrieve(created.id)).processing_status).toBe('in_progress');
    mock.finish(provider.id);
    const done = await ended(anthropic, created.id);
    expect(done.request_counts).toMatchObject({ succeeded: 2, errored: 0 });
    const results = await resultsOf(anthropic, created.id);
    expect(results.map((r) => [r.custom_id, textOf(r)])).toEqual([
      ['n-0', 'done alpha'],
      ['n-1', 'done beta'],
    ]);
    // Nothing ran synchronously: the provider's batch answered every request.
    expect(mock.sync).toEqual([]);
  });

  it("runs a batch of several models, or one with betas, on Gatehouse's worker: a provider batch runs one model", async () => {
    const anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
    const submitted = mock.batches.length;
    mock.sync.length = 0;
    const mixed = await anthropic.messages.batches.create({
      requests: [
        { custom_id: 'm-0', params: params('test/claude', 'one') },
        { custom_id: 'm-1', params: params('test/claude-other', 'two') },
      ],
    });
    const done = await ended(anthropic, mixed.id);
    expect(done.request_counts).toMatchObject({ succeeded: 2, errored: 0 });
    expect(mock.sync.map((s) => [s.path, s.body.model]).sort()).toEqual([
      ['/anthropic/v1/messages', 'claude-other-upstream'],
      ['/anthropic/v1/messages', 'claude-upstream'],
    ]);

    // One model with betas: a provider batch's bodies would lose them, so the worker runs it too.
    mock.sync.length = 0;
    const beta = await anthropic.beta.messages.batches.create({
      requests: [{ custom_id: 'b-0', params: params('test/claude', 'three') }],
      betas: ['context-1m-2025-08-07'],
    });
    await ended(anthropic, beta.id);
    expect(mock.sync.map((s) => s.body.model)).toEqual(['claude-upstream']);
    expect(mock.batches).toHaveLength(submitted);
    const native = await gw.services.db
      .selectFrom('batches')
      .select(['native_state', 'native_provider'])
      .where(
        'id',
        'in',
        [mixed.id, beta.id].map((id) => id.replace('msgbatch_', 'batch_')),
      )
      .execute();
    expect(native).toEqual([
      { native_state: 'none', native_provider: null },
      { native_state: 'none', native_provider: null },
    ]);
  });
});
