import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

/**
 * What a generation keeps of its checks and its routing (GET /generation's `safeguards` and
 * `gateway_metadata`): the content filters that ran on the request and on the answer, whole
 * answers and streams, blocked answers, and a request refused before it was sent.
 */
describe.each(databases)('generation safeguards and routing (%s)', (db) => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let mgmt: ReturnType<typeof client>;
  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway(db, { env: { ...up.env, GATEHOUSE_RATE_LIMIT_REQUESTS: '1000' } });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    mgmt = client(gw.url, gw.managementKey);
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  /** A fresh API key with one guardrail: emails redacted on the request, a codename on the answer. */
  async function keyWith(answerAction: 'redact' | 'flag' | 'block') {
    const key = await mgmt('POST', '/keys', { name: `k-${Math.random()}` });
    const name = `filters ${Math.random()}`;
    const g = await mgmt('POST', '/guardrails', {
      name,
      content_filter_builtins: [{ slug: 'email', action: 'redact', apply_to: 'request' }],
      content_filters: [
        { pattern: 'project falcon', action: answerAction, label: 'codename', apply_to: 'response' },
      ],
    });
    expect(g.status, g.text).toBe(201);
    await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
      key_hashes: [key.body.data.hash],
    });
    return {
      call: client(gw.url, key.body.key),
      keyHash: key.body.data.hash as string,
      guardrailId: g.body.data.id as string,
      guardrailName: name,
    };
  }

  const ask = (model: string, extra: object = {}) => ({
    model,
    messages: [{ role: 'user', content: 'write to me at jane@example.com' }],
    ...extra,
  });
  const answer = { reply: { text: 'we call it project falcon internally' } };

  const expected = (guardrailId: string, answerAction: string, guardrailName: string | null) => [
    {
      stage: 'request',
      source: 'gateway',
      type: 'content_filter',
      label: 'Email addresses',
      slug: 'email',
      action: 'redacted',
      matches: 1,
      guardrail_id: guardrailId,
      guardrail_name: guardrailName,
    },
    {
      stage: 'response',
      source: 'gateway',
      type: 'content_filter',
      label: 'codename',
      action: answerAction,
      matches: 1,
      guardrail_id: guardrailId,
      guardrail_name: guardrailName,
    },
  ];

  /** GET /generation with the management key: 200 and its data. */
  async function detail(id: string) {
    const res = await mgmt('GET', `/generation?id=${encodeURIComponent(id)}`);
    expect(res.status, res.text).toBe(200);
    // Names, actions and counts: never what the filters matched.
    expect(res.text).not.toContain('jane@example.com');
    expect(res.text).not.toContain('falcon');
    return res.body.data;
  }

  /** The newest generation of a key (as the list shows it), once written. */
  async function newest(keyHash: string) {
    await gw.services.accountant.flush();
    const list = await mgmt('GET', `/generations?key=${keyHash}&limit=5`);
    expect(list.status, list.text).toBe(200);
    return list.body.data as Array<Record<string, unknown>>;
  }

  it('a whole answer keeps the request and the answer filters, and the route it took', async () => {
    const { call, keyHash, guardrailId, guardrailName } = await keyWith('redact');
    mock.enqueue(answer);
    const res = await call('POST', '/chat/completions', ask('test/gpt'));
    expect(res.status, res.text).toBe(200);
    expect(res.body.choices[0].message.content).toBe('we call it [REDACTED:CODENAME] internally');
    expect(JSON.stringify(mock.requests[0]?.body)).not.toContain('jane@example.com');

    const g = await detail(res.body.id);
    expect(g.safeguards).toEqual(expected(guardrailId, 'redacted', guardrailName));
    expect(g.gateway_metadata).toMatchObject({
      route: 'lane',
      requested: 'test/gpt',
      strategy: 'default',
      attempt: 1,
      models_tried: ['test/gpt'],
      dropped_fields: [],
    });
    expect(g.gateway_metadata.endpoints.available).toContainEqual({
      model: 'test/gpt',
      provider: g.provider_name,
      selected: true,
    });
    expect(g.gateway_metadata.summary).toContain(`served by ${g.provider_name}`);

    // The list keeps its rows small: neither is listed (read once written).
    // A pass-through caller knows its generation by the provider's id of the answer.
    const rows = await newest(keyHash);
    expect(rows[0]?.upstream_id).toBe(res.body.id);
    expect(rows[0]).not.toHaveProperty('safeguards');
    expect(rows[0]).not.toHaveProperty('gateway_metadata');
    // Written, the detail reads the same from the database.
    expect((await detail(res.body.id)).safeguards).toEqual(expected(guardrailId, 'redacted', guardrailName));
  });

  it('a translated stream keeps the answer filters of its whole text (its end included)', async () => {
    const { call, guardrailId, guardrailName } = await keyWith('redact');
    mock.enqueue(answer);
    const res = await call('POST', '/chat/completions', ask('test/claude', { stream: true }));
    expect(res.status).toBe(200);
    expect(res.text).not.toContain('falcon');
    const first = res.text
      .split('\n')
      .find((l) => l.startsWith('data: {'))
      ?.slice(6);
    const id = JSON.parse(first as string).id as string;

    const g = await detail(id);
    expect(g.streamed).toBe(true);
    expect(g.status).toBe('success');
    expect(g.safeguards).toEqual(expected(guardrailId, 'redacted', guardrailName));
    expect(g.gateway_metadata).toMatchObject({ route: 'translated', requested: 'test/claude' });
  });

  it("the safeguards name each filter's guardrail as it is now: renamed, then deleted (its id left)", async () => {
    const { call, guardrailId } = await keyWith('redact');
    mock.enqueue(answer);
    const res = await call('POST', '/chat/completions', ask('test/gpt'));
    expect(res.status, res.text).toBe(200);
    await gw.services.accountant.flush();

    const renamed = `renamed ${Math.random()}`;
    expect((await mgmt('PATCH', `/guardrails/${guardrailId}`, { name: renamed })).status).toBe(200);
    expect((await detail(res.body.id)).safeguards).toEqual(expected(guardrailId, 'redacted', renamed));

    expect((await mgmt('DELETE', `/guardrails/${guardrailId}`)).status).toBe(200);
    expect((await detail(res.body.id)).safeguards).toEqual(expected(guardrailId, 'redacted', null));
  });

  it('flag lets the answer through and is kept as flagged', async () => {
    const { call, guardrailId, guardrailName } = await keyWith('flag');
    mock.enqueue(answer);
    const res = await call('POST', '/chat/completions', ask('test/claude'));
    expect(res.status).toBe(200);
    expect(res.body.choices[0].message.content).toContain('project falcon');
    const g = await mgmt('GET', `/generation?id=${res.body.id}`);
    expect(g.body.data.safeguards).toEqual(expected(guardrailId, 'flagged', guardrailName));
  });

  /**
   * A blocked answer is recorded as the caller got it — an error, 403 and the block's message, the
   * `content_filter` finish reason — billed (the provider did the work), with its block kept; the
   * Activity filters find it among the errors.
   */
  async function expectBlocked(
    keyHash: string,
    guardrailId: string,
    guardrailName: string,
    streamed: boolean,
  ) {
    // The caller has no id for it: it is the key's newest generation.
    const [row] = await newest(keyHash);
    const recorded = {
      streamed,
      status: 'error',
      http_status: 403,
      error_message: 'Blocked by content filter: codename',
      finish_reason: 'content_filter',
      cancelled: false,
      api_key_hash: keyHash,
    };
    expect(row).toMatchObject(recorded);
    expect(row?.total_cost).toBeGreaterThan(0);
    const g = await detail(row?.id as string);
    expect(g).toMatchObject(recorded);
    expect(g.safeguards).toEqual(expected(guardrailId, 'blocked', guardrailName));

    const filtered = async (status: string) => {
      const res = await mgmt('GET', `/generations?key=${keyHash}&status=${status}`);
      expect(res.status, res.text).toBe(200);
      return (res.body.data as Array<{ id: string }>).map((r) => r.id);
    };
    expect(await filtered('error')).toEqual([row?.id]);
    expect(await filtered('success')).toEqual([]);
    expect(await filtered('cancelled')).toEqual([]);
  }

  it('a whole answer blocked by a filter is refused with 403, and recorded as refused', async () => {
    const { call, keyHash, guardrailId, guardrailName } = await keyWith('block');
    mock.enqueue(answer);
    const res = await call('POST', '/chat/completions', ask('test/gpt'));
    expect(res.status).toBe(403);
    expect(res.body.error.message).toBe('Blocked by content filter: codename');
    expect(res.text).not.toContain('falcon');
    await expectBlocked(keyHash, guardrailId, guardrailName, false);
  });

  it('a stream blocked by a filter ends with a 403 error event, and is recorded as refused the same way', async () => {
    const { call, keyHash, guardrailId, guardrailName } = await keyWith('block');
    mock.enqueue(answer);
    const res = await call('POST', '/chat/completions', ask('test/claude', { stream: true }));
    const events = res.text
      .split('\n')
      .filter((l) => l.startsWith('data: {'))
      .map((l) => JSON.parse(l.slice(6)));
    expect(events.at(-1)?.error).toMatchObject({ code: 403, message: 'Blocked by content filter: codename' });
    expect(res.text).not.toContain('falcon');
    await expectBlocked(keyHash, guardrailId, guardrailName, true);
  });

  it('a request refused by a filter is sent nowhere and records no generation', async () => {
    const key = await mgmt('POST', '/keys', { name: `k-${Math.random()}` });
    const g = await mgmt('POST', '/guardrails', {
      name: `blocking ${Math.random()}`,
      content_filter_builtins: [{ slug: 'email', action: 'block' }],
    });
    await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
      key_hashes: [key.body.data.hash],
    });
    const res = await client(gw.url, key.body.key)('POST', '/chat/completions', ask('test/gpt'));
    expect(res.status).toBe(403);
    expect(res.body.error.message).toMatch(/Blocked by content filter: Email/);
    expect(mock.requests).toHaveLength(0);
    expect(await newest(key.body.data.hash)).toEqual([]);
  });

  it('a call no endpoint served keeps its request filters and what was tried', async () => {
    const { call, keyHash, guardrailId, guardrailName } = await keyWith('redact');
    mock.enqueue({ status: 500, body: { error: { message: 'down' } }, times: 10 });
    const res = await call('POST', '/chat/completions', ask('test/gpt'));
    expect(res.status).toBeGreaterThanOrEqual(500);
    const [row] = await newest(keyHash);
    expect(row?.status).toBe('error');
    const g = await detail(row?.id as string);
    expect(g.safeguards).toEqual([expected(guardrailId, 'redacted', guardrailName)[0]]);
    expect(g.gateway_metadata).toMatchObject({
      route: null,
      requested: 'test/gpt',
      models_tried: ['test/gpt'],
    });
    expect(g.gateway_metadata.summary).toMatch(/^no endpoint served test\/gpt/);
  });
});
