import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, makeOrganization } from './support/http.js';

/** A webhook receiver: records every delivery; `failNext` answers that many with 503 first. */
async function startReceiver() {
  const deliveries: { headers: IncomingMessage['headers']; body: string; status: number }[] = [];
  let failNext = 0;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const status = failNext > 0 ? 503 : 200;
      if (failNext > 0) failNext--;
      deliveries.push({ headers: req.headers, body, status });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook?token=q-secret`,
    deliveries,
    /** Records received with a 2xx answer. */
    accepted: () => deliveries.filter((d) => d.status === 200).flatMap((d) => JSON.parse(d.body).data),
    failFor: (n: number) => {
      failNext = n;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/**
 * Export destinations against a real gateway: management of webhook destinations (secrets
 * masked, never returned), and delivery of each generation's record — signed, batched, filtered,
 * retried while the receiver is down, bounded when it stays down.
 */
describe.each(databases)('export destinations (%s)', (db) => {
  let gw: TestGateway;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let mgmt: ReturnType<typeof client>;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    receiver = await startReceiver();
    gw = await startTestGateway(db, {
      env: {
        GATEHOUSE_EXPORT_PRIVATE: 'on',
        GATEHOUSE_RATE_LIMIT_REQUESTS: '1000',
        GATEHOUSE_EXPORT_CONTENT_MAX_BYTES: '4096',
      },
    });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    mgmt = client(gw.url, gw.managementKey);
    api = client(gw.url, gw.apiKey);
  });
  afterAll(async () => {
    await gw?.stop();
    await receiver?.close();
  });

  const chat = (content = 'hello') =>
    api('POST', '/chat/completions', { model: 'gatehouse/echo', messages: [{ role: 'user', content }] });

  it('creates a webhook destination: the signing secret once, header values masked, never returned', async () => {
    const created = await mgmt('POST', '/observability/destinations', {
      type: 'webhook',
      name: 'audit sink',
      config: { url: receiver.url, headers: { Authorization: 'Bearer receiver-credential' } },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.signing_secret).toMatch(/^whsec_/);
    expect(created.body.data).toMatchObject({
      type: 'webhook',
      name: 'audit sink',
      enabled: true,
      config: { url: receiver.url, method: 'POST', headers: { Authorization: '********' } },
      api_key_hashes: null,
      sampling_rate: 1,
      regions: ['global'],
      broadcast_generation_cost: true,
    });
    const id = created.body.data.id;
    for (const res of [
      await mgmt('GET', `/observability/destinations/${id}`),
      await mgmt('GET', '/observability/destinations'),
    ]) {
      expect(res.status).toBe(200);
      expect(res.text).not.toContain('receiver-credential');
      expect(res.text).not.toContain(created.body.signing_secret);
    }
    // Stored sealed: the database holds neither the header value nor the signing secret in clear.
    const row = await gw.services.db
      .selectFrom('observability_destinations')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain('receiver-credential');
    expect(JSON.stringify(row)).not.toContain(created.body.signing_secret);
    await mgmt('DELETE', `/observability/destinations/${id}`);
  });

  it('refuses what it cannot deliver, with a message saying why', async () => {
    const cases: [object, number, string][] = [
      [{ type: 'datadog', name: 'x', config: {} }, 400, 'not supported'],
      [{ type: 'webhook', name: 'x', config: { url: 'ftp://example.com' } }, 400, 'http(s)'],
      [{ type: 'webhook', name: 'x', config: { url: 'not a url' } }, 400, 'config.url'],
      [{ type: 'webhook', name: 'x', config: { url: receiver.url, method: 'GET' } }, 400, 'config.method'],
      [{ type: 'webhook', name: 'x', config: { url: receiver.url, endpoint: 'y' } }, 400, 'config.endpoint'],
      [
        {
          type: 'webhook',
          name: 'x',
          config: { url: receiver.url, headers: { 'X-Gatehouse-Signature': 'x' } },
        },
        400,
        'set by Gatehouse',
      ],
      [
        {
          type: 'webhook',
          name: 'x',
          config: { url: receiver.url },
          filter_rules: {
            enabled: true,
            groups: [{ rules: [{ field: 'input', operator: 'contains', value: 'a' }] }],
          },
        },
        400,
        'not supported',
      ],
      [
        {
          type: 'webhook',
          name: 'x',
          config: { url: receiver.url },
          filter_rules: {
            enabled: true,
            groups: [{ rules: [{ field: 'total_cost', operator: 'gt', value: 'a' }] }],
          },
        },
        400,
        'must be a number',
      ],
      [{ type: 'webhook', name: 'x', config: { url: receiver.url }, sampling_rate: 2 }, 400, 'sampling_rate'],
    ];
    for (const [body, status, message] of cases) {
      const res = await mgmt('POST', '/observability/destinations', body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body.error.message).toContain(message);
    }
    expect((await api('GET', '/observability/destinations')).status).toBe(403);
  });

  it('sends each generation’s record, signed, once the call is answered', async () => {
    const created = await mgmt('POST', '/observability/destinations', {
      type: 'webhook',
      name: 'all calls',
      config: { url: receiver.url, headers: { Authorization: 'Bearer receiver-credential' } },
      broadcast_generation_request_context: true,
    });
    const secret = created.body.signing_secret as string;
    const res = await chat('sign me');
    expect(res.status).toBe(200);
    const id = res.headers.get('x-gatehouse-generation-id');
    const record = await vi.waitFor(
      () => {
        const r = receiver.accepted().find((x: { id: string }) => x.id === id);
        expect(r).toBeDefined();
        return r;
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(record).toMatchObject({
      id,
      model: 'gatehouse/echo',
      status: 'success',
      usage: { prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) },
      cost: { total_usd: expect.any(Number) },
      identity: { api_key_hash: expect.any(String) },
      request: { endpoint: 'chat', streamed: false, route: expect.any(String) },
    });
    const delivery = receiver.deliveries.find((d) => d.body.includes(id as string));
    expect(delivery?.headers.authorization).toBe('Bearer receiver-credential');
    const sig = String(delivery?.headers['x-gatehouse-signature']);
    const t = /t=(\d+)/.exec(sig)?.[1];
    const expected = createHmac('sha256', secret).update(`${t}.${delivery?.body}`).digest('hex');
    expect(sig).toBe(`t=${t},v1=${expected}`);
    expect(delivery?.headers['x-gatehouse-delivery']).toMatch(/^[0-9a-f-]{36}$/);
    // The record carries no content: no prompt text, no answer text.
    expect(delivery?.body).not.toContain('sign me');
    await mgmt('DELETE', `/observability/destinations/${created.body.data.id}`);
  });

  it('filters by rule and API key; a disabled destination gets nothing', async () => {
    const keyHash = (await api('GET', '/key')).body.data.hash ?? null;
    const onlyBig = await mgmt('POST', '/observability/destinations', {
      type: 'webhook',
      name: 'big only',
      config: { url: `${receiver.url}&dest=big` },
      filter_rules: {
        enabled: true,
        groups: [{ rules: [{ field: 'total_tokens', operator: 'gt', value: 1_000_000 }] }],
      },
    });
    const otherKey = await mgmt('POST', '/observability/destinations', {
      type: 'webhook',
      name: 'other key',
      config: { url: `${receiver.url}&dest=other` },
      api_key_hashes: ['0'.repeat(64)],
    });
    const disabled = await mgmt('POST', '/observability/destinations', {
      type: 'webhook',
      name: 'off',
      enabled: false,
      config: { url: `${receiver.url}&dest=off` },
    });
    const matching = await mgmt('POST', '/observability/destinations', {
      type: 'webhook',
      name: 'echo model',
      config: { url: `${receiver.url}&dest=echo` },
      filter_rules: {
        enabled: true,
        groups: [{ logic: 'or', rules: [{ field: 'model', operator: 'starts_with', value: 'gatehouse/' }] }],
      },
      ...(keyHash ? { api_key_hashes: [keyHash] } : {}),
    });
    for (const d of [onlyBig, otherKey, disabled, matching]) expect(d.status, d.text).toBe(201);
    const res = await chat('filtered');
    const id = res.headers.get('x-gatehouse-generation-id') as string;
    await vi.waitFor(
      () =>
        expect(
          receiver.deliveries.some(
            (d) => d.body.includes(id) && d.headers['user-agent'] && d.body.includes(matching.body.data.id),
          ),
        ).toBe(true),
      { timeout: 10_000, interval: 50 },
    );
    // Give the others the same flush interval to (wrongly) arrive.
    await new Promise((r) => setTimeout(r, 1500));
    for (const skipped of [onlyBig, otherKey, disabled])
      expect(receiver.deliveries.some((d) => d.body.includes(skipped.body.data.id))).toBe(false);
    for (const d of [onlyBig, otherKey, disabled, matching])
      await mgmt('DELETE', `/observability/destinations/${d.body.data.id}`);
  });

  it('keeps records while the receiver is down and sends them when it is back', async () => {
    const created = await mgmt('POST', '/observability/destinations', {
      type: 'webhook',
      name: 'flaky',
      config: { url: `${receiver.url}&dest=flaky` },
    });
    receiver.failFor(2);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await chat(`retry ${i}`)).headers.get('x-gatehouse-generation-id') as string);
    await vi.waitFor(
      () => {
        const got = receiver.accepted().map((r: { id: string }) => r.id);
        for (const id of ids) expect(got).toContain(id);
      },
      { timeout: 20_000, interval: 100 },
    );
    const attempts = receiver.deliveries.filter((d) => d.body.includes(created.body.data.id));
    expect(attempts.filter((d) => d.status === 503).length).toBeGreaterThanOrEqual(2);
    // Retries of one batch carry one delivery id (receivers can drop duplicates).
    const byDelivery = new Set(attempts.map((d) => d.headers['x-gatehouse-delivery']));
    expect(byDelivery.size).toBeLessThan(attempts.length);
    await mgmt('DELETE', `/observability/destinations/${created.body.data.id}`);
  }, 30_000);

  it('carries the content content logging kept, unless in privacy mode', async () => {
    const workspaceId = (await api('GET', '/key')).body.data.workspace_id as string;
    const open = await mgmt('POST', '/observability/destinations', {
      type: 'webhook',
      name: 'with content',
      config: { url: `${receiver.url}&dest=content` },
    });
    const closed = await mgmt('POST', '/observability/destinations', {
      type: 'webhook',
      name: 'private',
      privacy_mode: true,
      config: { url: `${receiver.url}&dest=private` },
    });
    expect((await mgmt('PATCH', `/workspaces/${workspaceId}`, { content_logging: true })).status).toBe(200);
    const id = (await chat('kept words')).headers.get('x-gatehouse-generation-id') as string;
    const delivered = (dest: string) =>
      vi.waitFor(
        () => {
          const d = receiver.deliveries.find(
            (x) => x.status === 200 && x.body.includes(dest) && x.body.includes(id),
          );
          expect(d).toBeDefined();
          return JSON.parse(d?.body as string).data.find((r: { id: string }) => r.id === id);
        },
        { timeout: 10_000, interval: 50 },
      );
    const withContent = await delivered(open.body.data.id);
    expect(withContent.content.input.messages[0]).toMatchObject({ role: 'user', content: 'kept words' });
    expect(withContent.content.output.completion).toEqual(expect.any(String));
    const without = await delivered(closed.body.data.id);
    expect(without).not.toHaveProperty('content');
    expect(JSON.stringify(without)).not.toContain('kept words');
    await mgmt('PATCH', `/workspaces/${workspaceId}`, { content_logging: false });
    for (const d of [open, closed]) await mgmt('DELETE', `/observability/destinations/${d.body.data.id}`);
  });

  it('caps each content field, saying so, and reads a batch’s content in one query', async () => {
    const workspaceId = (await api('GET', '/key')).body.data.workspace_id as string;
    const dest = await mgmt('POST', '/observability/destinations', {
      type: 'webhook',
      name: 'capped',
      config: { url: `${receiver.url}&dest=capped` },
    });
    expect((await mgmt('PATCH', `/workspaces/${workspaceId}`, { content_logging: true })).status).toBe(200);
    // Count the content reads: the calls to the content log and the queries they make.
    const contentLog = gw.services.contentLog;
    const deps = (contentLog as unknown as { deps: { db: typeof gw.services.db } }).deps;
    const realDb = deps.db;
    let queries = 0;
    deps.db = new Proxy(realDb, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver);
        if (prop !== 'selectFrom') return typeof v === 'function' ? v.bind(target) : v;
        return (table: string) => {
          if (table === 'generation_contents') queries++;
          return target.selectFrom(table as 'generation_contents');
        };
      },
    });
    const reads = vi.spyOn(contentLog, 'getMany');
    try {
      const long = `${'é'.repeat(6000)} the end`;
      const ids = (await Promise.all([chat('first short'), chat(long), chat('third short')])).map(
        (r) => r.headers.get('x-gatehouse-generation-id') as string,
      );
      const delivery = await vi.waitFor(
        () => {
          const d = receiver.deliveries.find(
            (x) =>
              x.status === 200 &&
              x.body.includes(dest.body.data.id) &&
              ids.every((id) => x.body.includes(id)),
          );
          expect(d).toBeDefined();
          return JSON.parse(d?.body as string).data as { id: string; content: any }[];
        },
        { timeout: 10_000, interval: 50 },
      );
      const [first, big, third] = ids.map((id) => delivery.find((r) => r.id === id)!);
      expect(first!.content.input.messages[0]).toMatchObject({ content: 'first short' });
      expect(first!.content).not.toHaveProperty('truncated');
      expect(third!.content.input.messages[0]).toMatchObject({ content: 'third short' });
      // The long one: each field is the start of its JSON, at most the cap, and a marker with its size.
      expect(big!.content.truncated).toEqual(['input', 'output']);
      const input = big!.content.input as string;
      expect(Buffer.byteLength(input)).toBeLessThanOrEqual(4096);
      expect(input.startsWith('{"messages":[{"role":"user","content":"éé')).toBe(true);
      expect(input).toMatch(/…\[truncated by Gatehouse: \d{5} bytes\]$/);
      expect(input).not.toContain('the end');
      expect(Buffer.byteLength(big!.content.output as string)).toBeLessThanOrEqual(4096);
      // One read for the batch (all three ids), one query for it.
      const ours = reads.mock.calls.filter(([, asked]) => asked.some((id) => ids.includes(id)));
      expect(ours).toHaveLength(1);
      expect([...ours[0]![1]].sort()).toEqual([...ids].sort());
      expect(queries).toBeGreaterThan(0);
      expect(queries).toBeLessThanOrEqual(reads.mock.calls.length);
    } finally {
      reads.mockRestore();
      deps.db = realDb;
      await mgmt('PATCH', `/workspaces/${workspaceId}`, { content_logging: false });
      await mgmt('DELETE', `/observability/destinations/${dest.body.data.id}`);
    }
  });

  it('never lets one organization read or change another’s destinations', async () => {
    const created = await mgmt('POST', '/observability/destinations', {
      type: 'webhook',
      name: 'mine',
      config: { url: receiver.url },
    });
    const other = await makeOrganization(gw.url, 'Observability Other');
    const theirs = client(gw.url, other.managementKey);
    const id = created.body.data.id;
    expect((await theirs('GET', `/observability/destinations/${id}`)).status).toBe(404);
    expect((await theirs('PATCH', `/observability/destinations/${id}`, { enabled: false })).status).toBe(404);
    expect((await theirs('DELETE', `/observability/destinations/${id}`)).status).toBe(404);
    expect((await theirs('GET', '/observability/destinations')).body.total_count).toBe(0);
    // Masked header values sent back keep the stored value; a PATCH changes what it names.
    const patched = await mgmt('PATCH', `/observability/destinations/${id}`, {
      sampling_rate: 0.5,
      name: 'renamed',
    });
    expect(patched.body.data).toMatchObject({ sampling_rate: 0.5, name: 'renamed', enabled: true });
    await mgmt('DELETE', `/observability/destinations/${id}`);
    expect((await mgmt('GET', `/observability/destinations/${id}`)).status).toBe(404);
  });
});
