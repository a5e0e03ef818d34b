import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type DbKind, databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, type JsonResponse, makeOrganization } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

/*
 * Batches end to end over real sockets: creation (streamed ingestion, validation, admission),
 * the worker running requests through the routing engine, polling, paging, the JSONL download,
 * cancel and expiry. Each gateway gets a 20 ms worker poll so batches finish in milliseconds.
 */

type Call = ReturnType<typeof client>;

const CHAT = '/v1/chat/completions';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A directive for the dev provider (gatehouse/echo): reply text, usage, delay, errors. */
const script = (s: object) => `gatehouse:${JSON.stringify(s)}`;

const chatBody = (content: string, model = 'gatehouse/echo', extra: object = {}) => ({
  model,
  messages: [{ role: 'user', content }],
  ...extra,
});

/** A chat-completions batch of `n` echo requests with custom_ids r-0, r-1, …; `extra` adds fields. */
function chatBatch(n: number, content: (i: number) => string = (i) => `hello ${i}`, extra: object = {}) {
  return {
    endpoint: CHAT,
    completion_window: '24h',
    requests: Array.from({ length: n }, (_, i) => ({ custom_id: `r-${i}`, body: chatBody(content(i)) })),
    ...extra,
  };
}

/** Polls a batch until its status is one of `statuses`; fails with the last body after `timeoutMs`. */
async function waitFor(
  call: Call,
  id: string,
  statuses: string | string[],
  { timeoutMs = 10_000, query = 'results_limit=1000' } = {},
): Promise<any> {
  const want = Array.isArray(statuses) ? statuses : [statuses];
  const deadline = Date.now() + timeoutMs;
  let last: JsonResponse | null = null;
  while (Date.now() < deadline) {
    last = await call('GET', `/batches/${id}?${query}`);
    if (last.status === 200 && want.includes(last.body.status)) return last.body;
    await sleep(25);
  }
  throw new Error(`batch ${id} did not reach ${want.join('/')} in ${timeoutMs} ms; last: ${last?.text}`);
}

/** Every result of a batch, from the JSONL download. */
async function download(call: Call, id: string): Promise<any[]> {
  const res = await call('GET', `/batches/${id}/results`);
  expect(res.status).toBe(200);
  return res.text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

const byCustomId = (results: any[]) => new Map<string, any>(results.map((r) => [r.custom_id, r]));

/** A worker that polls every 20 ms, and no request-rate limits unless a test sets them. */
const FAST = {
  GATEHOUSE_BATCH_POLL_MS: '20',
  GATEHOUSE_RATE_LIMIT_REQUESTS: '0',
  GATEHOUSE_BATCH_RATE_LIMIT: '0',
};

/** A gateway with `env` enforcing credits, whose organization holds $100 of them. */
async function gatewayWithCredits(db: DbKind, env: Record<string, string> = {}): Promise<TestGateway> {
  const gw = await startTestGateway(db, { env: { ...FAST, GATEHOUSE_CREDITS: 'enforce', ...env } });
  await adminClient(gw.url)('POST', '/admin/credits', {
    organization_id: gw.organizationId,
    amount_usd: 100,
  });
  return gw;
}

/** Rows of every batch and request in the database, accepted or not (refusals must leave none). */
async function storedRows(gw: TestGateway) {
  const count = async (table: 'batches' | 'batch_requests') =>
    Number(
      (
        await gw.services.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return { batches: await count('batches'), requests: await count('batch_requests') };
}

/**
 * Sends `send()` and expects the error `status` with a message matching `message`, and that nothing
 * was kept for it: `GET /batches` of `lister` lists no new batch and no hidden row was left behind.
 */
async function expectRefused<R extends { status: number; body: any; text: string }>(
  gw: TestGateway,
  lister: Call,
  send: () => Promise<R>,
  status: number,
  message: RegExp,
): Promise<R> {
  const listed = (await lister('GET', '/batches')).body.total_count;
  const rows = await storedRows(gw);
  const res = await send();
  expect(res.status, res.text).toBe(status);
  expect(res.body).toMatchObject({ error: { code: status, message: expect.stringMatching(message) } });
  expect((await lister('GET', '/batches')).body.total_count).toBe(listed);
  expect(await storedRows(gw)).toEqual(rows);
  return res;
}

/**
 * POSTs a batch body over node:http in `pieces` without a Content-Length (chunked), `gapMs` apart.
 * Stops sending once the server answers (a 413 answers before the body ends).
 */
function postInPieces(
  gw: TestGateway,
  key: string,
  pieces: string[],
  gapMs = 1,
): Promise<{ status: number; body: any; text: string }> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = httpRequest(`${gw.url}/api/v1/batches`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    });
    req.on('response', (res) => {
      answered = true;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        text += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), text }));
    });
    // The server may close the connection after answering early: not an error for the test.
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    void (async () => {
      for (const p of pieces) {
        if (answered) return;
        req.write(p);
        await sleep(gapMs);
      }
      req.end();
    })();
  });
}

/** Splits a string into pieces of `size` characters (cutting through tokens and strings). */
const split = (s: string, size: number) =>
  Array.from({ length: Math.ceil(s.length / size) }, (_, i) => s.slice(i * size, (i + 1) * size));

/** Every field of the seed's batch usage object, with numbers of the right kind. */
const usageShape = {
  prompt_tokens: expect.any(Number),
  completion_tokens: expect.any(Number),
  total_tokens: expect.any(Number),
  cache_creation: { ephemeral_1h_input_tokens: 0, ephemeral_5m_input_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, image_tokens: 0 },
  prompt_tokens_details: {
    cached_tokens: 0,
    cache_write_tokens: 0,
    audio_tokens: 0,
    file_tokens: 0,
    video_tokens: 0,
  },
  server_tool_use: { tool_calls_executed: 0, tool_calls_requested: 0, web_search_requests: 0 },
  cost: expect.any(Number),
  cost_details: {
    upstream_inference_prompt_cost: expect.any(Number),
    upstream_inference_completions_cost: expect.any(Number),
    upstream_inference_cost: null,
  },
  is_byok: false,
  iterations: [],
  service_tier: expect.any(String),
  speed: expect.any(String),
};

/** $1 / $2 per million prompt / completion tokens: the price of every model used here. */
const priceOf = (prompt: number, completion: number) => (prompt + 2 * completion) / 1e6;

/** How each endpoint's batch is written and what its result bodies look like. */
const endpointCases = [
  {
    endpoint: '/v1/chat/completions',
    model: 'gatehouse/echo',
    body: (i: number) => chatBody(`chat number ${i}`),
    check: (body: any, i: number) => {
      expect(body).toMatchObject({
        object: 'chat.completion',
        model: 'gatehouse/echo',
        provider: 'gatehouse',
        gateway_metadata: { is_byok: false, requested: 'gatehouse/echo' },
        usage: { cost: expect.any(Number) },
      });
      expect(body.choices[0].message).toMatchObject({ role: 'assistant', content: `chat number ${i}` });
    },
    tokens: (body: any) => [body.usage.prompt_tokens, body.usage.completion_tokens],
  },
  {
    // Served by an OpenAI-format upstream: the messages request and reply are translated.
    endpoint: '/v1/messages',
    model: 'test/gpt',
    body: (i: number) => ({
      model: 'test/gpt',
      max_tokens: 50,
      messages: [{ role: 'user', content: `message number ${i}` }],
    }),
    check: (body: any) => {
      expect(body).toMatchObject({ type: 'message', role: 'assistant', model: 'test/gpt' });
      expect(body.content[0]).toMatchObject({ type: 'text', text: 'Hello from gpt-x!' });
    },
    tokens: (body: any) => [body.usage.input_tokens, body.usage.output_tokens],
  },
  {
    endpoint: '/v1/responses',
    model: 'gatehouse/echo',
    body: (i: number) => ({ model: 'gatehouse/echo', input: `response number ${i}` }),
    check: (body: any, i: number) => {
      expect(body).toMatchObject({ object: 'response', status: 'completed' });
      const text = body.output
        .flatMap((o: any) => o.content ?? [])
        .map((c: any) => c.text)
        .join('');
      expect(text).toBe(`response number ${i}`);
    },
    tokens: (body: any) => [body.usage.input_tokens, body.usage.output_tokens],
  },
  {
    endpoint: '/v1/embeddings',
    model: 'test/embed',
    body: (i: number) => ({ model: 'test/embed', input: [`embed ${i}`, 'and more'] }),
    check: (body: any) => {
      expect(body.object).toBe('list');
      expect(body.data).toHaveLength(2);
      for (const d of body.data) expect(d.embedding).toEqual(expect.arrayContaining([expect.any(Number)]));
    },
    tokens: (body: any) => [body.usage.prompt_tokens, 0],
  },
];

describe.each(databases)('batches (%s)', (db) => {
  describe('on a gateway with the mock upstreams', () => {
    let gw: TestGateway;
    let mock: MockUpstream;
    let call: Call;
    let mgmt: Call;
    beforeAll(async () => {
      const up = await startUpstreams();
      mock = up.mock;
      // The mock catalog plus `test/mixed`, served by four providers on one mock told apart by path:
      // a request picks one with its own `provider.only`, so each can get its own scripted failure.
      const config = JSON.parse(readFileSync(up.env.GATEHOUSE_CONFIG as string, 'utf8'));
      const mixed = ['ok', 'bad', 'busy', 'down'];
      for (const slug of mixed)
        config.providers.push({
          slug,
          kind: 'openai',
          base_url: `${mock.url}/${slug}/v1`,
          api_key: 'sk-x',
          native_batches: false, // the worker's own paths (native batches: native-batches.test.ts)
        });
      // Ten times test/gpt's prices: a batch mixing it with others is estimated per model.
      config.models.push({
        id: 'test/pricey',
        endpoints: [
          { provider: 'openai', upstream_model: 'pricey-x', pricing: { prompt: 10, completion: 20 } },
        ],
      });
      config.models.push({
        id: 'test/mixed',
        endpoints: mixed.map((provider) => ({
          provider,
          upstream_model: 'mixed-x',
          pricing: { prompt: 1, completion: 2 },
        })),
      });
      const file = join(mkdtempSync(join(tmpdir(), 'gatehouse-batches-')), 'gatehouse.json');
      writeFileSync(file, JSON.stringify(config));
      gw = await gatewayWithCredits(db, {
        GATEHOUSE_CONFIG: file,
        GATEHOUSE_BATCH_RETRY_BASE_MS: '10',
        GATEHOUSE_BATCH_MAX_ATTEMPTS: '2',
      });
      call = client(gw.url, gw.apiKey);
      mgmt = client(gw.url, gw.managementKey);
    });
    afterAll(async () => {
      await gw?.stop();
      await mock?.close();
    });
    beforeEach(() => mock.reset());

    /** A fresh API key of the gateway's organization, optionally under a new guardrail. */
    async function newKey(guardrail?: object): Promise<Call> {
      const key = await mgmt('POST', '/keys', { name: `k-${Math.random()}` });
      if (guardrail) {
        const g = await mgmt('POST', '/guardrails', { name: 'batch policy', ...guardrail });
        expect(g.status).toBe(201);
        await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
          key_hashes: [key.body.data.hash],
        });
      }
      return client(gw.url, key.body.key);
    }

    // ------------------------------------------------------------------------------------------
    // Running batches

    it.each(endpointCases)('runs a $endpoint batch to completed, results in its format', async (c) => {
      const n = 4;
      const created = await call('POST', '/batches', {
        endpoint: c.endpoint,
        completion_window: '24h',
        requests: Array.from({ length: n }, (_, i) => ({ custom_id: `c-${i}`, body: c.body(i) })),
      });
      expect(created.status, created.text).toBe(202);
      expect(created.body).toMatchObject({
        id: expect.stringMatching(/^batch_/),
        object: 'batch',
        endpoint: c.endpoint,
        model: c.model,
        completion_window: '24h',
        status: 'validating',
        finalized_at: null,
        error: null,
        request_counts: { completed: 0, failed: 0, total: n },
      });
      expect(Number.isInteger(created.body.created_at)).toBe(true);

      const done = await waitFor(call, created.body.id, ['completed', 'failed']);
      expect(done.status).toBe('completed');
      expect(done.request_counts).toEqual({ completed: n, failed: 0, total: n });
      expect(Number.isInteger(done.finalized_at)).toBe(true);
      expect(done.finalized_at).toBeGreaterThanOrEqual(done.created_at);
      expect(done.created_at).toBe(created.body.created_at);

      // Every custom_id exactly once, each with its own response.
      expect(done.results.map((r: any) => r.custom_id).sort()).toEqual(
        Array.from({ length: n }, (_, i) => `c-${i}`),
      );
      let prompt = 0;
      let completion = 0;
      for (const r of done.results) {
        const i = Number(r.custom_id.slice(2));
        expect(r.error).toBeNull();
        expect(r.response).toMatchObject({ status_code: 200, request_id: expect.any(String) });
        c.check(r.response.body, i);
        if (c.endpoint === CHAT) expect(r.response.request_id).toBe(r.response.body.id);
        const [p, k] = c.tokens(r.response.body);
        prompt += p;
        completion += k;
      }
      // The batch usage is the sum of its requests' usage, with every field of the seed.
      expect(done.usage).toMatchObject(usageShape);
      expect(done.usage).toMatchObject({
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
      });
      expect(prompt).toBeGreaterThan(0);
      expect(done.usage.cost).toBeCloseTo(priceOf(prompt, completion), 12);
      if (c.endpoint === CHAT) {
        const sum = done.results.reduce((s: number, r: any) => s + r.response.body.usage.cost, 0);
        expect(done.usage.cost).toBeCloseTo(sum, 12);
      }
      expect(done.usage.cost_details.upstream_inference_prompt_cost).toBeCloseTo(prompt / 1e6, 12);
      expect(done.usage.cost_details.upstream_inference_completions_cost).toBeCloseTo(
        (2 * completion) / 1e6,
        12,
      );
      if (c.model.startsWith('test/')) expect(mock.requests).toHaveLength(n);
      if (c.endpoint === '/v1/messages')
        // Translated: the OpenAI-format upstream got chat completions requests.
        expect(mock.requests.every((r) => r.path === '/openai/v1/chat/completions')).toBe(true);
    });

    it('bills every request once: credits, the key usage and GET /generation agree with the batch usage', async () => {
      const key = await newKey();
      const credits = async () => (await mgmt('GET', '/credits')).body.data.total_usage as number;
      const keyUsage = async () => (await key('GET', '/key')).body.data.usage as number;
      await gw.services.accountant.flush();
      const [creditsBefore, keyBefore] = [await credits(), await keyUsage()];

      const created = await key(
        'POST',
        '/batches',
        chatBatch(3, (i) =>
          script({ text: 'ok', usage: { prompt_tokens: 1000 * (i + 1), completion_tokens: 500 } }),
        ),
      );
      expect(created.status).toBe(202);
      const done = await waitFor(key, created.body.id, 'completed');
      // 6,000 prompt tokens at $1/M and 1,500 completion tokens at $2/M.
      expect(done.usage.cost).toBeCloseTo(0.009, 12);
      await gw.services.accountant.flush();
      expect((await credits()) - creditsBefore).toBeCloseTo(done.usage.cost, 12);
      expect((await keyUsage()) - keyBefore).toBeCloseTo(done.usage.cost, 12);

      for (const r of done.results) {
        const gen = await key('GET', `/generation?id=${r.response.request_id}`);
        expect(gen.status).toBe(200);
        expect(gen.body.data).toMatchObject({ id: r.response.request_id, tokens_completion: 500 });
        expect(gen.body.data.total_cost).toBeCloseTo(r.response.body.usage.cost, 12);
      }
      // Polling again (and downloading) bills nothing more.
      await download(key, created.body.id);
      await gw.services.accountant.flush();
      expect((await credits()) - creditsBefore).toBeCloseTo(done.usage.cost, 12);
    });

    it('takes a body Gatehouse does not understand when the provider speaks its format, and sends it as it is', async () => {
      const body = {
        model: 'test/claude',
        max_tokens: 64,
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] },
        ],
        context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] },
        a_field_from_next_year: true,
      };
      const created = await call('POST', '/batches', {
        endpoint: '/v1/messages',
        completion_window: '24h',
        requests: [{ custom_id: 'm', body }],
      });
      expect(created.status, created.text).toBe(202);
      const done = await waitFor(call, created.body.id, ['completed', 'failed']);
      expect(done.request_counts).toEqual({ completed: 1, failed: 0, total: 1 });
      expect(mock.requests.at(-1)?.body).toEqual({ ...body, model: 'claude-x' });
      // The answer is Anthropic's own, as the synchronous endpoint relays it.
      expect(done.results[0].response.body).toMatchObject({ type: 'message', model: 'claude-x' });
    });

    it('applies the allow-listed provider headers of the create call to every request, and no others', async () => {
      const betas = 'interleaved-thinking-2025-05-14,context-1m-2025-08-07';
      const created = await call(
        'POST',
        '/batches',
        {
          endpoint: '/v1/messages',
          completion_window: '24h',
          requests: ['one', 'two', 'three'].map((t) => ({
            custom_id: t,
            body: { model: 'test/claude', max_tokens: 16, messages: [{ role: 'user', content: t }] },
          })),
        },
        {
          'anthropic-beta': betas,
          'anthropic-version': '2023-06-01',
          'x-not-allowed': 'leak',
          // Another endpoint's header: captured, but /messages does not pass it on.
          'openai-beta': 'assistants=v2',
        },
      );
      expect(created.status, created.text).toBe(202);
      // Kept with the batch (what the worker reads, after a restart too): the allow-listed ones only.
      const row = await gw.services.db
        .selectFrom('batches')
        .select('headers_json')
        .where('id', '=', created.body.id)
        .executeTakeFirstOrThrow();
      expect(JSON.parse(row.headers_json as string)).toEqual({
        'anthropic-beta': betas,
        'anthropic-version': '2023-06-01',
        'openai-beta': 'assistants=v2',
      });
      const done = await waitFor(call, created.body.id, ['completed', 'failed']);
      expect(done.request_counts).toEqual({ completed: 3, failed: 0, total: 3 });
      const sent = mock.requests.filter((r) => r.path === '/anthropic/v1/messages');
      expect(sent.map((r) => r.body.messages[0].content).sort()).toEqual(['one', 'three', 'two']);
      for (const r of sent) {
        expect(r.headers['anthropic-beta']).toBe(betas);
        expect(r.headers['anthropic-version']).toBe('2023-06-01');
        expect(r.headers['x-not-allowed']).toBeUndefined();
        expect(r.headers['openai-beta']).toBeUndefined();
        // The operator's credential, never the caller's key.
        expect(r.headers['x-api-key']).toBe('sk-operator-anthropic-00');
        expect(JSON.stringify(r.headers)).not.toContain(gw.apiKey);
      }

      // A batch created without them sends none.
      mock.reset();
      const plain = await call('POST', '/batches', {
        endpoint: '/v1/messages',
        completion_window: '24h',
        requests: [
          {
            custom_id: 'p',
            body: { model: 'test/claude', max_tokens: 16, messages: [{ role: 'user', content: 'p' }] },
          },
        ],
      });
      expect(plain.status, plain.text).toBe(202);
      await waitFor(call, plain.body.id, ['completed', 'failed']);
      expect(mock.requests.map((r) => [r.path, r.headers['anthropic-beta']])).toEqual([
        ['/anthropic/v1/messages', undefined],
      ]);
    });

    it('records per-request failures in their items: a final 400, a 429 retried to success, a 500 until attempts run out', async () => {
      const only = (slug: string) => ({ provider: { only: [slug] } });
      mock.enqueue(
        { match: { path: /^\/bad\// }, status: 400, error: { message: 'unsupported parameter foo' } },
        // The engine retries once itself; the worker sees the 429 only when both fail.
        { match: { path: /^\/busy\// }, status: 429, headers: { 'retry-after': '0' }, times: 2 },
        { match: { path: /^\/down\// }, status: 500, error: { message: 'boom' }, times: 100 },
      );
      const requests = ['ok', 'bad', 'busy', 'down'].map((slug) => ({
        custom_id: slug,
        body: chatBody(`for ${slug}`, 'test/mixed', only(slug)),
      }));
      const created = await call('POST', '/batches', { endpoint: CHAT, completion_window: '24h', requests });
      expect(created.status, created.text).toBe(202);
      const done = await waitFor(call, created.body.id, ['completed', 'failed']);
      expect(done.status).toBe('completed');
      expect(done.request_counts).toEqual({ completed: 2, failed: 2, total: 4 });

      const items = byCustomId(done.results);
      expect(items.get('ok').response.body.choices[0].message.content).toBe('Hello from mixed-x!');
      expect(items.get('busy')).toMatchObject({ error: null, response: { status_code: 200 } });
      expect(items.get('bad')).toEqual({
        id: expect.any(String),
        custom_id: 'bad',
        response: null,
        error: {
          message: expect.stringMatching(/unsupported parameter foo/),
          type: 'invalid_request_error',
          param: null,
          error_type: 'invalid_request',
        },
      });
      expect(items.get('down')).toEqual({
        id: expect.any(String),
        custom_id: 'down',
        response: null,
        error: {
          message: expect.stringMatching(/500/),
          type: 'api_error',
          param: null,
          error_type: 'upstream_error',
        },
      });
      const calls = (slug: string) => mock.requests.filter((r) => r.path.startsWith(`/${slug}/`)).length;
      // 400: final at once. 429: two refused calls, then the worker's retry. 500: two attempts of two calls.
      expect([calls('ok'), calls('bad'), calls('busy'), calls('down')]).toEqual([1, 1, 3, 4]);
      // Only the served requests count in the usage.
      const served = [items.get('ok'), items.get('busy')];
      expect(done.usage.cost).toBeCloseTo(
        served.reduce((s, r) => s + r.response.body.usage.cost, 0),
        12,
      );
    });

    it('pages results in request order and downloads them all as JSONL', async () => {
      const created = await call('POST', '/batches', chatBatch(25));
      const id = created.body.id;
      await waitFor(call, id, 'completed');

      const seen: any[] = [];
      for (const [offset, count, hasMore] of [
        [0, 10, true],
        [10, 10, true],
        [20, 5, false],
      ] as const) {
        const page = await call('GET', `/batches/${id}?results_offset=${offset}&results_limit=10`);
        expect(page.body.results).toHaveLength(count);
        expect(page.body.results_page).toEqual({ offset, limit: 10, total: 25, has_more: hasMore });
        seen.push(...page.body.results);
      }
      expect(seen.map((r) => r.custom_id)).toEqual(Array.from({ length: 25 }, (_, i) => `r-${i}`));
      expect(new Set(seen.map((r) => r.id)).size).toBe(25);

      const none = await call('GET', `/batches/${id}?results_limit=0`);
      expect(none.body.results).toEqual([]);
      expect(none.body.results_page).toEqual({ offset: 0, limit: 0, total: 25, has_more: true });
      expect(none.body.request_counts).toEqual({ completed: 25, failed: 0, total: 25 });

      const res = await call('GET', `/batches/${id}/results`);
      expect(res.headers.get('content-type')).toMatch(/^application\/jsonl/);
      const lines = res.text.split('\n');
      expect(lines.pop()).toBe(''); // every line ends with a newline
      expect(lines).toHaveLength(25);
      expect(lines.map((l) => JSON.parse(l))).toEqual(seen);
      for (const l of lines)
        expect(Object.keys(JSON.parse(l)).sort()).toEqual(['custom_id', 'error', 'id', 'response']);
    });

    it('lists this key’s batches newest first with total_count, and not another key’s', async () => {
      const key = await newKey();
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await key('POST', '/batches', chatBatch(1))).body.id);
      const list = await key('GET', '/batches');
      expect(list.status).toBe(200);
      expect(list.body.total_count).toBe(3);
      expect(list.body.data.map((b: any) => b.id)).toEqual([...ids].reverse());
      expect(list.body.data[0]).toMatchObject({ object: 'batch', endpoint: CHAT, model: 'gatehouse/echo' });
      expect(list.body.data[0].results).toBeUndefined();
      const page = await key('GET', '/batches?offset=1&limit=1');
      expect(page.body).toMatchObject({ total_count: 3, data: [{ id: ids[1] }] });

      const others = (await call('GET', '/batches?limit=100')).body.data.map((b: any) => b.id);
      expect(others.some((id: string) => ids.includes(id))).toBe(false);
      for (const id of ids) await waitFor(key, id, 'completed');
    });

    // ------------------------------------------------------------------------------------------
    // Ingestion

    it('accepts top-level fields in any order: requests first, model last', async () => {
      const requests = chatBatch(3).requests;
      const text = `{"requests":${JSON.stringify(requests)},"endpoint":"${CHAT}","completion_window":"24h","model":"gatehouse/echo"}`;
      const created = await call('POST', '/batches', text);
      expect(created.status, created.text).toBe(202);
      expect(created.body).toMatchObject({ model: 'gatehouse/echo', request_counts: { total: 3 } });
      const done = await waitFor(call, created.body.id, 'completed');
      expect(done.results.map((r: any) => r.response.body.choices[0].message.content)).toEqual([
        'hello 0',
        'hello 1',
        'hello 2',
      ]);
    });

    it('reads a body sent in many small chunks without a Content-Length', async () => {
      const body = JSON.stringify(chatBatch(20, (i) => `piece by piece ${i} "quoted" \\ and ü`));
      const res = await postInPieces(gw, gw.apiKey, split(body, 37));
      expect(res.status, res.text).toBe(202);
      const done = await waitFor(call, res.body.id, 'completed');
      expect(done.request_counts).toEqual({ completed: 20, failed: 0, total: 20 });
      expect(byCustomId(done.results).get('r-7').response.body.choices[0].message.content).toBe(
        'piece by piece 7 "quoted" \\ and ü',
      );
    });

    it('runs 3,000 requests in one batch, each result exactly once', async () => {
      const n = 3000;
      const created = await call(
        'POST',
        '/batches',
        chatBatch(n, (i) => `n${i}`),
      );
      expect(created.status, created.text).toBe(202);
      expect(created.body.request_counts.total).toBe(n);
      const done = await waitFor(call, created.body.id, 'completed', {
        timeoutMs: 30_000,
        query: 'results_limit=0',
      });
      expect(done.request_counts).toEqual({ completed: n, failed: 0, total: n });
      const results = await download(call, created.body.id);
      expect(results.map((r) => r.custom_id)).toEqual(Array.from({ length: n }, (_, i) => `r-${i}`));
      expect(results.every((r, i) => r.response.body.choices[0].message.content === `n${i}`)).toBe(true);
    }, 60_000);

    it('accepts OpenAI-JSONL-style items with method POST and the endpoint as url', async () => {
      const created = await call('POST', '/batches', {
        endpoint: CHAT,
        completion_window: '24h',
        requests: [{ custom_id: 'a', method: 'POST', url: CHAT, body: chatBody('jsonl style') }],
      });
      expect(created.status, created.text).toBe(202);
      const done = await waitFor(call, created.body.id, 'completed');
      expect(done.results[0].response.body.choices[0].message.content).toBe('jsonl style');
    });

    // ------------------------------------------------------------------------------------------
    // Refusals: each with its message, and nothing kept

    const item = (custom_id: string, body: object = chatBody('x')) => ({ custom_id, body });
    const batchOf = (requests: unknown[], extra: object = {}) => ({
      endpoint: CHAT,
      completion_window: '24h',
      requests,
      ...extra,
    });
    /** An array nested `depth` deep. */
    const nested = (depth: number): unknown => Array.from({ length: depth }).reduce<unknown>((v) => [v], 0);
    const invalid: [string, unknown, RegExp][] = [
      [
        'a request without custom_id',
        batchOf([item('a'), { body: chatBody('x') }]),
        /^requests\[1\]: custom_id/,
      ],
      [
        'a duplicate custom_id',
        batchOf([item('a'), item('b'), item('a')]),
        /^requests\[2\] \(custom_id "a"\): duplicate custom_id \(also requests\[0\]\)/,
      ],
      [
        'a duplicate custom_id in another insert chunk',
        batchOf(Array.from({ length: 1500 }, (_, i) => item(i === 1400 ? 'r-2' : `r-${i}`))),
        /^requests\[1400\] \(custom_id "r-2"\): duplicate custom_id \(also requests\[2\]\)/,
      ],
      [
        'a body invalid for the endpoint',
        {
          endpoint: '/v1/messages',
          completion_window: '24h',
          requests: [item('m-0', { model: 'gatehouse/echo', max_tokens: 5, messages: 'hi' })],
        },
        /^requests\[0\] \(custom_id "m-0"\)\.body\.messages/,
      ],
      [
        'an unknown endpoint',
        batchOf([item('a')], { endpoint: '/v1/completions' }),
        /endpoint must be one of/,
      ],
      [
        'an unknown completion_window',
        batchOf([item('a')], { completion_window: '48h' }),
        /completion_window must be one of 24h/,
      ],
      ['an unknown top-level field', batchOf([item('a')], { priority: 1 }), /Unknown field "priority"/],
      [
        'a body nested deeper than the synchronous endpoints take',
        batchOf([item('a'), item('b', chatBody('x', 'gatehouse/echo', { metadata: nested(200) }))]),
        /^requests\[1\] \(custom_id "b"\)\.body: JSON nested deeper than 128 levels/,
      ],
      [
        'a streaming request',
        batchOf([item('a'), item('b', chatBody('x', 'gatehouse/echo', { stream: true }))]),
        /^requests\[1\] \(custom_id "b"\)\.body\.stream/,
      ],
      [
        'a request naming a preset',
        batchOf([item('a'), item('b', chatBody('x', '@preset/writer'))]),
        /^requests\[1\] \(custom_id "b"\)\.body: presets are not applied in batches/,
      ],
      [
        'a request with a preset field',
        batchOf([item('a', chatBody('x', 'gatehouse/echo', { preset: 'writer' }))]),
        /^requests\[0\] \(custom_id "a"\)\.body: presets are not applied in batches/,
      ],
      [
        'requests for different models under a batch model',
        batchOf([item('a'), item('b', chatBody('x', 'gatehouse/scripted'))], { model: 'gatehouse/echo' }),
        /^requests\[1\] \(custom_id "b"\)\.body\.model: must be the batch's model gatehouse\/echo/,
      ],
      [
        'a request for another model than the batch model',
        batchOf([item('a', chatBody('x', 'test/gpt'))], { model: 'gatehouse/echo' }),
        /^requests\[0\] \(custom_id "a"\)\.body\.model: must be the batch's model gatehouse\/echo/,
      ],
      [
        'the batch model after requests for another',
        `{"endpoint":"${CHAT}","completion_window":"24h","requests":[${JSON.stringify(item('a'))}],"model":"test/gpt"}`,
        /^requests\[0\] \(custom_id "a"\)\.body\.model: must be the batch's model test\/gpt/,
      ],
      ['a url other than the endpoint', batchOf([{ ...item('a'), url: '/v1/embeddings' }]), /\.url: must be/],
      [
        'an unknown model',
        batchOf([item('a', chatBody('x', 'nobody/nothing'))]),
        /nobody\/nothing not found/,
      ],
      [
        'malformed JSON',
        `{"endpoint":"${CHAT}","requests":[{"custom_id":"a",`,
        /Unexpected end of body.*requests\[0\]/,
      ],
      ['an empty requests array', batchOf([]), /requests is required/],
      [
        'a stored-response reference (batches read no stored state)',
        {
          endpoint: '/v1/responses',
          completion_window: '24h',
          requests: [
            item('r-0', { model: 'test/gpt', input: 'more', previous_response_id: 'resp_someone_elses' }),
          ],
        },
        /^requests\[0\] \(custom_id "r-0"\)\.body: previous_response_id, conversation and item_reference/,
      ],
      [
        'a file named by id (put into calls as they are served, which batch requests are not)',
        {
          endpoint: '/v1/messages',
          completion_window: '24h',
          requests: [
            item('m-0', {
              model: 'test/claude',
              max_tokens: 10,
              messages: [
                {
                  role: 'user',
                  content: [
                    { type: 'document', source: { type: 'file', file_id: `file-${'0'.repeat(24)}` } },
                  ],
                },
              ],
            }),
          ],
        },
        /^requests\[0\] \(custom_id "m-0"\)\.body: files named by id \(file_id\) are not supported in batches/,
      ],
      [
        'a conversation (on a model OpenAI serves: never passed through)',
        {
          endpoint: '/v1/responses',
          completion_window: '24h',
          requests: [item('r-0', { model: 'test/gpt', input: 'more', conversation: 'conv_someone_elses' })],
        },
        /conversation and item_reference inputs are not supported in batches/,
      ],
      [
        'an item reference',
        {
          endpoint: '/v1/responses',
          completion_window: '24h',
          requests: [item('r-0', { model: 'test/gpt', input: [{ type: 'item_reference', id: 'msg_x' }] })],
        },
        /item_reference inputs are not supported in batches/,
      ],
      ['a missing endpoint', { completion_window: '24h', requests: [item('a')] }, /endpoint is required/],
    ];

    it.each(invalid)('400 for %s', async (_what, body, message) => {
      await expectRefused(gw, call, () => call('POST', '/batches', body), 400, message);
    });

    it('401 without a key, 403 for a management key', async () => {
      await expectRefused(
        gw,
        call,
        () => client(gw.url)('POST', '/batches', chatBatch(1)),
        401,
        /Authentication/,
      );
      await expectRefused(gw, call, () => mgmt('POST', '/batches', chatBatch(1)), 403, /Management keys/);
      expect((await mgmt('GET', '/batches')).status).toBe(403);
    });

    it('403 for a model or a provider.only the key’s guardrail forbids', async () => {
      const echoOnly = await newKey({ allowed_models: ['gatehouse/echo'] });
      await expectRefused(
        gw,
        echoOnly,
        () => echoOnly('POST', '/batches', batchOf([item('a', chatBody('x', 'test/gpt'))])),
        403,
        /test\/gpt/,
      );
      const groqOnly = await newKey({ allowed_providers: ['groq'] });
      const multi = (extra: object) => batchOf([item('a', chatBody('x', 'test/multi'))], extra);
      await expectRefused(
        gw,
        groqOnly,
        () => groqOnly('POST', '/batches', multi({ provider: { only: ['openai'] } })),
        403,
        /Provider openai is not in the allowed providers/,
      );
      // The same batch on the allowed provider is accepted.
      const ok = await groqOnly('POST', '/batches', multi({ provider: { only: ['groq'] } }));
      expect(ok.status, ok.text).toBe(202);
      const done = await waitFor(groqOnly, ok.body.id, 'completed');
      expect(done.results[0].response.body.provider).toBe('groq');
    });

    it('runs a batch whose requests use different models, each on its own (no batch model)', async () => {
      const created = await call(
        'POST',
        '/batches',
        batchOf([
          item('gpt', chatBody('to gpt', 'test/gpt')),
          item('claude', chatBody('to claude', 'test/claude', { max_tokens: 50 })),
          item('echo', chatBody('to echo')),
          item('gpt-2', chatBody('to gpt again', 'test/gpt')),
        ]),
      );
      expect(created.status, created.text).toBe(202);
      expect(created.body).toMatchObject({ model: null, request_counts: { total: 4 } });
      const done = await waitFor(call, created.body.id, 'completed');
      expect(done.model).toBeNull();
      const results = byCustomId(done.results);
      const text = (id: string) => results.get(id)?.response.body.choices[0].message.content;
      expect([text('gpt'), text('claude'), text('echo'), text('gpt-2')]).toEqual([
        'Hello from gpt-x!',
        'Hello from claude-x!',
        'to echo',
        'Hello from gpt-x!',
      ]);
      // Each request reached its own model's provider with its upstream model id.
      const sent = mock.requests.map((r) => [r.path, r.body.model, JSON.stringify(r.body)]);
      expect(sent.filter(([p]) => p === '/openai/v1/chat/completions').map(([, m]) => m)).toEqual([
        'gpt-x',
        'gpt-x',
      ]);
      const toClaude = sent.filter(([p]) => p === '/anthropic/v1/messages');
      expect(toClaude.map(([, m]) => m)).toEqual(['claude-x']);
      expect(toClaude[0]?.[2]).toContain('to claude');
      expect(sent).toHaveLength(3);
    });

    it('403 for a batch of several models when the guardrail forbids one of them', async () => {
      const echoOnly = await newKey({ allowed_models: ['gatehouse/echo'] });
      await expectRefused(
        gw,
        echoOnly,
        () =>
          echoOnly('POST', '/batches', batchOf([item('a'), item('b', chatBody('x', 'test/gpt')), item('c')])),
        403,
        /test\/gpt/,
      );
      // Its allowed model alone is accepted.
      const ok = await echoOnly('POST', '/batches', batchOf([item('a'), item('c')]));
      expect(ok.status, ok.text).toBe(202);
      await waitFor(echoOnly, ok.body.id, 'completed');
      expect(mock.requests).toHaveLength(0);
    });

    it('estimates a batch of several models at each model’s prices (402 when the sum exceeds the balance)', async () => {
      const cheap = item('e', chatBody('x', 'gatehouse/echo', { max_tokens: 100 }));
      // As long as `cheap` ('test/pricey' is 3 characters shorter than 'gatehouse/echo').
      const dear = item('p', chatBody('xxxx', 'test/pricey', { max_tokens: 100 }));
      const estimateOf = async (requests: unknown[]) => {
        const res = await call('POST', '/batches', batchOf(requests));
        expect(res.status, res.text).toBe(202);
        await waitFor(call, res.body.id, 'completed');
        const row = await gw.services.db
          .selectFrom('batches')
          .select('estimated_cost_usd')
          .where('id', '=', res.body.id)
          .executeTakeFirstOrThrow();
        return row.estimated_cost_usd;
      };
      const [echoOnly, priceyOnly, both] = [
        await estimateOf([cheap]),
        await estimateOf([dear]),
        await estimateOf([cheap, dear]),
      ];
      // Same sizes, ten times the prices: 10× the estimate; the mix is the sum of its models'.
      expect(priceyOnly).toBeCloseTo(10 * echoOnly, 12);
      expect(both).toBeCloseTo(echoOnly + priceyOnly, 12);

      // A balance the cheap model's part fits but not the whole.
      const other = await makeOrganization(gw.url, `Batch mix ${db}`);
      const poor = client(gw.url, other.apiKey);
      await adminClient(gw.url)('POST', '/admin/credits', {
        organization_id: other.organizationId,
        amount_usd: (echoOnly + both) / 2,
      });
      await expectRefused(
        gw,
        poor,
        () => poor('POST', '/batches', batchOf([cheap, dear])),
        402,
        /estimated cost/,
      );
      const ok = await poor('POST', '/batches', batchOf([cheap]));
      expect(ok.status, ok.text).toBe(202);
      await waitFor(poor, ok.body.id, 'completed');
    });

    it('402 without credits, and when the estimate exceeds the balance', async () => {
      const other = await makeOrganization(gw.url, `Batch poor ${db}`);
      const poor = client(gw.url, other.apiKey);
      await expectRefused(
        gw,
        poor,
        () => poor('POST', '/batches', chatBatch(1)),
        402,
        /Insufficient credits/,
      );

      await adminClient(gw.url)('POST', '/admin/credits', {
        organization_id: other.organizationId,
        amount_usd: 0.001,
      });
      // 10 requests of up to 1,000 completion tokens at $2/M: at least $0.02 > $0.001.
      const big = batchOf(
        Array.from({ length: 10 }, (_, i) =>
          item(`b-${i}`, chatBody('x', 'gatehouse/echo', { max_tokens: 1000 })),
        ),
      );
      await expectRefused(gw, poor, () => poor('POST', '/batches', big), 402, /estimated cost/);
      // A small one fits the balance.
      const small = batchOf([item('s', chatBody('x', 'gatehouse/echo', { max_tokens: 10 }))]);
      const ok = await poor('POST', '/batches', small);
      expect(ok.status, ok.text).toBe(202);
      await waitFor(poor, ok.body.id, 'completed');
    });

    it('404 for an unknown batch and for another organization’s batch (poll, results, cancel)', async () => {
      const mine = (await call('POST', '/batches', chatBatch(1))).body.id;
      const other = await makeOrganization(gw.url, `Batch other ${db}`);
      const stranger = client(gw.url, other.apiKey);
      for (const [who, id] of [
        [call, 'batch_000000000000000000000000'],
        [stranger, mine],
      ] as const) {
        for (const [method, path] of [
          ['GET', `/batches/${id}`],
          ['GET', `/batches/${id}/results`],
          ['POST', `/batches/${id}/cancel`],
        ] as const) {
          const res = await who(method, path);
          expect(res.status, `${method} ${path}`).toBe(404);
          expect(res.body.error.message).toMatch(/Batch/);
        }
      }
      // The stranger's attempt to cancel changed nothing.
      expect((await waitFor(call, mine, 'completed')).request_counts.completed).toBe(1);
    });

    it('409 when cancelling a completed batch', async () => {
      const id = (await call('POST', '/batches', chatBatch(1))).body.id;
      await waitFor(call, id, 'completed');
      const res = await call('POST', `/batches/${id}/cancel`);
      expect(res.status).toBe(409);
      expect(res.body.error.message).toMatch(/completed/);
      expect((await call('GET', `/batches/${id}`)).body.status).toBe('completed');
    });
  });

  describe('cancel (two requests at a time)', () => {
    let gw: TestGateway;
    let call: Call;
    beforeAll(async () => {
      gw = await gatewayWithCredits(db, { GATEHOUSE_BATCH_CONCURRENCY: '2' });
      call = client(gw.url, gw.apiKey);
    });
    afterAll(() => gw?.stop());

    it('cancels mid-run: finished requests keep their results, unstarted ones are cancelled', async () => {
      const created = await call(
        'POST',
        '/batches',
        chatBatch(10, (i) => script({ text: `slow ${i}`, delay_ms: 150 })),
      );
      const id = created.body.id;
      // Wait until some requests have finished, then cancel while others wait for a slot.
      let before: any;
      for (;;) {
        before = await waitFor(call, id, 'in_progress');
        if (before.request_counts.completed >= 2) break;
        await sleep(20);
      }
      const cancelled = await call('POST', `/batches/${id}/cancel`);
      expect(cancelled.status).toBe(200);
      expect(['cancelling', 'cancelled']).toContain(cancelled.body.status);
      expect(Number.isInteger(cancelled.body.cancelling_at)).toBe(true);

      const done = await waitFor(call, id, 'cancelled');
      expect(Number.isInteger(done.finalized_at)).toBe(true);
      const { completed, failed, total } = done.request_counts;
      expect(total).toBe(10);
      expect(completed + failed).toBe(10);
      expect(completed).toBeGreaterThanOrEqual(2);
      expect(failed).toBeGreaterThan(0);
      const items = byCustomId(done.results);
      // What had finished before the cancel is unchanged.
      for (const r of before.results) expect(items.get(r.custom_id)).toEqual(r);
      for (const r of done.results) {
        if (r.response)
          expect(r.response.body.choices[0].message.content).toBe(`slow ${r.custom_id.slice(2)}`);
        else
          expect(r.error).toEqual({
            message: expect.stringMatching(/cancelled/),
            type: 'cancelled',
            param: null,
            error_type: 'cancelled',
          });
      }
      // Cancelling again returns the batch as it is.
      const again = await call('POST', `/batches/${id}/cancel`);
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ id, status: 'cancelled', request_counts: done.request_counts });
    });
  });

  describe('a model leaving the catalog under a batch of several models (one request at a time)', () => {
    let gw: TestGateway;
    let mock: MockUpstream;
    let file: string;
    let config: { models: { id: string }[] };
    beforeAll(async () => {
      const up = await startUpstreams();
      mock = up.mock;
      file = up.env.GATEHOUSE_CONFIG as string;
      config = JSON.parse(readFileSync(file, 'utf8'));
      gw = await gatewayWithCredits(db, { GATEHOUSE_CONFIG: file, GATEHOUSE_BATCH_CONCURRENCY: '1' });
    });
    afterAll(async () => {
      await gw?.stop();
      await mock?.close();
    });

    it('fails only the requests of the model that left; the others complete', async () => {
      const call = client(gw.url, gw.apiKey);
      const created = await call('POST', '/batches', {
        endpoint: CHAT,
        completion_window: '24h',
        requests: [
          { custom_id: 'slow', body: chatBody(script({ text: 'slow', delay_ms: 1500 })) },
          { custom_id: 'gpt', body: chatBody('to gpt', 'test/gpt') },
          { custom_id: 'claude', body: chatBody('to claude', 'test/claude', { max_tokens: 20 }) },
        ],
      });
      expect(created.status, created.text).toBe(202);
      // While the first request runs, test/gpt leaves the catalog.
      await waitFor(call, created.body.id, 'in_progress');
      writeFileSync(
        file,
        JSON.stringify({ ...config, models: config.models.filter((m) => m.id !== 'test/gpt') }),
      );
      const reloaded = await adminClient(gw.url)('POST', '/admin/catalog/reload');
      expect(reloaded.status, reloaded.text).toBe(200);

      const done = await waitFor(call, created.body.id, ['completed', 'failed']);
      expect(done).toMatchObject({
        status: 'completed',
        request_counts: { completed: 2, failed: 1, total: 3 },
      });
      const results = byCustomId(done.results);
      expect(results.get('slow').response.body.choices[0].message.content).toBe('slow');
      expect(results.get('claude').response.body.choices[0].message.content).toBe('Hello from claude-x!');
      expect(results.get('gpt')).toMatchObject({
        response: null,
        error: { message: 'Model test/gpt not found', error_type: 'not_found' },
      });
      expect(mock.requests.map((r) => r.path)).toEqual(['/anthropic/v1/messages']);
    });
  });

  describe('expiry (a 1 s completion window)', () => {
    let gw: TestGateway;
    let call: Call;
    beforeAll(async () => {
      gw = await gatewayWithCredits(db, { GATEHOUSE_BATCH_WINDOW_SECONDS: '1' });
      call = client(gw.url, gw.apiKey);
    });
    afterAll(() => gw?.stop());

    it('expires a batch whose window passes: finished requests keep results, the rest are expired', async () => {
      // The window ends at the next whole second after created_at: start early in a second.
      const ms = Date.now() % 1000;
      if (ms > 200) await sleep(1010 - ms);
      const created = await call(
        'POST',
        '/batches',
        chatBatch(6, (i) => (i < 2 ? `quick ${i}` : script({ delay_ms: 5000 }))),
      );
      expect(created.status, created.text).toBe(202);
      expect(created.body.expires_at).toBe(created.body.created_at + 1);
      const done = await waitFor(call, created.body.id, ['expired', 'completed', 'failed'], {
        timeoutMs: 4000,
      });
      expect(done.status).toBe('expired');
      expect(Number.isInteger(done.finalized_at)).toBe(true);
      expect(done.request_counts).toEqual({ completed: 2, failed: 4, total: 6 });
      for (const r of done.results) {
        const i = Number(r.custom_id.slice(2));
        if (i < 2) expect(r.response.body.choices[0].message.content).toBe(`quick ${i}`);
        else
          expect(r).toMatchObject({
            response: null,
            error: {
              type: 'expired',
              param: null,
              error_type: 'expired',
              message: expect.stringMatching(/expired/),
            },
          });
      }
    });
  });

  describe('size and rate limits (4 KB bodies, 2 batches per key)', () => {
    let gw: TestGateway;
    let call: Call;
    beforeAll(async () => {
      gw = await gatewayWithCredits(db, {
        GATEHOUSE_BATCH_MAX_BYTES: '4096',
        GATEHOUSE_BATCH_RATE_LIMIT: '2',
      });
      call = client(gw.url, gw.apiKey);
    });
    afterAll(() => gw?.stop());

    it('413 for a Content-Length over the limit', async () => {
      const body = JSON.stringify(chatBatch(60));
      expect(body.length).toBeGreaterThan(4096);
      await expectRefused(
        gw,
        call,
        () => call('POST', '/batches', body),
        413,
        /^Batch input exceeds the payload limit of 4096 bytes$/,
      );
    });

    it('413 for a chunked body that grows past the limit', async () => {
      const body = JSON.stringify(chatBatch(200));
      await expectRefused(
        gw,
        call,
        () => postInPieces(gw, gw.apiKey, split(body, 512)),
        413,
        /payload limit of 4096 bytes/,
      );
    });

    it('429 with Retry-After beyond the batch rate limit', async () => {
      const mgmt = client(gw.url, gw.managementKey);
      const key = client(gw.url, (await mgmt('POST', '/keys', { name: 'rate' })).body.key);
      for (let i = 0; i < 2; i++) expect((await key('POST', '/batches', chatBatch(1))).status).toBe(202);
      const res = await expectRefused(
        gw,
        key,
        () => key('POST', '/batches', chatBatch(1)),
        429,
        /rate limit exceeded .*2 per 60 s/,
      );
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    });
  });
});
