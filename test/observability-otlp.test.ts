import { OpenRouter } from '@openrouter/sdk';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ExportDispatcher } from '../src/observability/dispatcher.js';
import type { LiveDestination } from '../src/observability/service.js';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';
import { type OtlpReceiver, startOtlpReceiver } from './support/otlp-receiver.js';

const wait = { timeout: 15_000, interval: 50 };

/**
 * The otlp and langfuse destination types against a real gateway and real OTLP receivers: each
 * generation's record arrives as a GenAI span, in batches, with the configured headers (Langfuse:
 * Basic auth), with content only while the workspace logs content and privacy mode is off (as
 * redacted by the content filters), retried while the receiver is down.
 */
describe.each(databases)('otlp and langfuse export destinations (%s)', (db) => {
  let gw: TestGateway;
  let otlp: OtlpReceiver;
  let mgmt: ReturnType<typeof client>;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    gw = await startTestGateway(db, {
      env: { GATEHOUSE_EXPORT_PRIVATE: 'on', GATEHOUSE_RATE_LIMIT_REQUESTS: '1000' },
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
    await otlp?.close();
  });

  const chat = async (content: string, as = api) => {
    const res = await as('POST', '/chat/completions', {
      model: 'gatehouse/echo',
      messages: [{ role: 'user', content }],
    });
    expect(res.status, res.text).toBe(200);
    return res.headers.get('x-gatehouse-generation-id') as string;
  };
  const spanOf = (id: string) => otlp.spans.find((s) => s.attributes['gatehouse.generation.id'] === id);
  const received = (id: string) =>
    vi.waitFor(() => {
      const s = spanOf(id);
      expect(s).toBeDefined();
      return s as NonNullable<ReturnType<typeof spanOf>>;
    }, wait);

  it('refuses an otlp or langfuse destination with missing or invalid config, in the API’s error format', async () => {
    const cases: [object, string][] = [
      [{ type: 'otlp', name: 'x', config: {} }, 'config.url'],
      [{ type: 'otlp', name: 'x', config: { url: 'ftp://collector' } }, 'http(s)'],
      [{ type: 'otlp', name: 'x', config: { url: otlp.url, encoding: 'grpc' } }, 'config.encoding'],
      [{ type: 'otlp', name: 'x', config: { url: otlp.url, method: 'PUT' } }, 'config.method'],
      [{ type: 'otlp', name: 'x', config: { url: otlp.url, headers: { Host: 'x' } } }, 'set by Gatehouse'],
      [{ type: 'langfuse', name: 'x', config: { secret_key: 'sk-lf-1' } }, 'config.public_key'],
      [{ type: 'langfuse', name: 'x', config: { public_key: 'pk-lf-1' } }, 'config.secret_key'],
      [
        { type: 'langfuse', name: 'x', config: { public_key: 'pk', secret_key: 'sk', base_url: 'x' } },
        'base_url',
      ],
      [
        { type: 'langfuse', name: 'x', config: { public_key: 'pk', secret_key: 'sk', url: otlp.url } },
        'config.url',
      ],
      [{ type: 'datadog', name: 'x', config: {} }, 'not supported'],
    ];
    for (const [body, message] of cases) {
      const res = await mgmt('POST', '/observability/destinations', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.message, JSON.stringify(body)).toContain(message);
    }
  });

  it('sends each call as a GenAI span over OTLP/protobuf, batched, with the configured headers', async () => {
    const created = await mgmt('POST', '/observability/destinations', {
      type: 'otlp',
      name: 'collector',
      config: { url: `${otlp.url}/v1/traces`, headers: { 'x-collector-token': 'collector-credential' } },
      broadcast_generation_request_context: true,
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.signing_secret).toBeUndefined();
    expect(created.body.data).toMatchObject({
      type: 'otlp',
      config: {
        url: `${otlp.url}/v1/traces`,
        encoding: 'protobuf',
        headers: { 'x-collector-token': '********' },
      },
    });
    const id = created.body.data.id;
    expect((await mgmt('GET', `/observability/destinations/${id}`)).text).not.toContain(
      'collector-credential',
    );

    const ids = await Promise.all(['one', 'two', 'three'].map((c) => chat(`span ${c}`)));
    const spans = await Promise.all(ids.map(received));
    for (const [i, span] of spans.entries()) {
      expect(span.name).toBe('chat gatehouse/echo');
      expect(span.kind).toBe(3); // CLIENT
      expect(span.status.code).toBe(1); // OK
      expect(span.resource['service.name']).toBe('gatehouse');
      expect(span.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'gatehouse/echo',
        'gen_ai.response.id': ids[i],
        'gen_ai.usage.input_tokens': expect.any(Number),
        'gen_ai.usage.output_tokens': expect.any(Number),
        'gen_ai.usage.cost': expect.any(Number),
        'gatehouse.workspace.id': expect.any(String),
        'gatehouse.status': 'success',
        'gatehouse.endpoint': 'chat',
        'http.response.status_code': 200,
      });
      expect(span.attributes['gen_ai.provider.name']).toEqual(expect.any(String));
      // Content logging is off: no content.
      expect(span.attributes).not.toHaveProperty('gen_ai.input.messages');
      expect(JSON.stringify(span)).not.toContain(`span ${['one', 'two', 'three'][i]}`);
    }
    const mine = otlp.requests.filter((r) => r.headers['x-collector-token'] === 'collector-credential');
    expect(mine.length).toBeGreaterThan(0);
    expect(mine.every((r) => String(r.headers['content-type']) === 'application/x-protobuf')).toBe(true);
    // Batched: the three calls of one second went in fewer requests than spans.
    expect(mine.reduce((n, r) => n + r.spans, 0)).toBeGreaterThanOrEqual(3);
    expect(mine.length).toBeLessThan(3);
    await mgmt('DELETE', `/observability/destinations/${id}`);
  });

  it('takes the official SDK’s otel-collector destination (config.endpoint) and delivers to it as OTLP', async () => {
    const sdk = new OpenRouter({
      serverURL: `${gw.url}/api/v1`,
      apiKey: gw.managementKey,
      retryConfig: { strategy: 'none' },
    });
    const created = await sdk.observability.create({
      createObservabilityDestinationRequest: {
        type: 'otel-collector',
        name: 'axiom-like',
        config: { endpoint: `${otlp.url}/v1/traces`, headers: { 'X-Dataset': 'sdk-dataset' } },
      },
    });
    const destination = created.data;
    if (destination.type !== 'otel-collector') throw new Error(`parsed as ${destination.type}`);
    // Validated by the SDK as its otel-collector destination, the header's value masked.
    expect(destination).toMatchObject({
      type: 'otel-collector',
      name: 'axiom-like',
      config: { endpoint: `${otlp.url}/v1/traces`, headers: { 'X-Dataset': '********' } },
    });
    const listed = await sdk.observability.list();
    expect(listed.result.data.map((d) => ('id' in d ? d.id : null))).toContain(destination.id);

    const id = await chat('through the otel collector');
    await received(id);
    const mine = otlp.requests.filter((r) => r.headers['x-dataset'] === 'sdk-dataset');
    expect(mine.length).toBeGreaterThan(0);
    expect(String(mine[0]?.headers['content-type'])).toBe('application/x-protobuf');
    // Its other settings are refused by name, like any type's.
    const wrong = await mgmt('POST', '/observability/destinations', {
      type: 'otel-collector',
      name: 'x',
      config: { url: `${otlp.url}/v1/traces` },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.message).toContain('config.url is not a otel-collector setting');
    await sdk.observability.delete({ id: destination.id });
  });

  it('sends OTLP/JSON when configured, and keeps the spans while the receiver is down', async () => {
    const created = await mgmt('POST', '/observability/destinations', {
      type: 'otlp',
      name: 'json collector',
      config: { url: `${otlp.url}/json/v1/traces`, encoding: 'json' },
    });
    expect(created.status, created.text).toBe(201);
    otlp.failFor(2);
    const id = await chat('retried');
    const span = await vi.waitFor(
      () => {
        const s = spanOf(id);
        expect(s).toBeDefined();
        return s;
      },
      { timeout: 25_000, interval: 100 },
    );
    expect(span?.attributes['gen_ai.request.model']).toBe('gatehouse/echo');
    const attempts = otlp.requests.filter((r) => r.path === '/json/v1/traces');
    expect(attempts.filter((r) => r.status === 503).length).toBe(2);
    expect(attempts.at(-1)).toMatchObject({ status: 200 });
    expect(String(attempts.at(-1)?.headers['content-type'])).toContain('application/json');
    await mgmt('DELETE', `/observability/destinations/${created.body.data.id}`);
  }, 30_000);

  it('sends to Langfuse with Basic auth and its generation attributes; content only while logged and not in privacy mode, redacted', async () => {
    const workspaceId = (await api('GET', '/key')).body.data.workspace_id as string;
    const langfuse = await mgmt('POST', '/observability/destinations', {
      type: 'langfuse',
      name: 'langfuse',
      config: { base_url: `${otlp.url}/lf/`, public_key: 'pk-lf-public', secret_key: 'sk-lf-very-secret' },
    });
    expect(langfuse.status, langfuse.text).toBe(201);
    expect(langfuse.body.data.config).toEqual({
      base_url: `${otlp.url}/lf`,
      public_key: 'pk-lf-public',
      secret_key: '********',
    });
    const lfId = langfuse.body.data.id;
    expect((await mgmt('GET', '/observability/destinations')).text).not.toContain('sk-lf-very-secret');
    // A PATCH sending the masked secret back keeps it; the audit log never shows it.
    const renamed = await mgmt('PATCH', `/observability/destinations/${lfId}`, {
      name: 'langfuse eu',
      config: { base_url: `${otlp.url}/lf`, public_key: 'pk-lf-public', secret_key: '********' },
    });
    expect(renamed.status, renamed.text).toBe(200);
    const audit = await mgmt('GET', '/audit-log');
    expect(audit.status, audit.text).toBe(200);
    expect(audit.text).toContain(lfId);
    expect(audit.text).not.toContain('sk-lf-very-secret');
    const row = await gw.services.db
      .selectFrom('observability_destinations')
      .selectAll()
      .where('id', '=', lfId)
      .executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain('sk-lf-very-secret');

    const privacy = await mgmt('POST', '/observability/destinations', {
      type: 'otlp',
      name: 'private collector',
      privacy_mode: true,
      config: { url: `${otlp.url}/private/v1/traces` },
    });
    expect(privacy.status, privacy.text).toBe(201);

    const withContent = await mgmt('POST', '/observability/destinations', {
      type: 'otlp',
      name: 'collector with content',
      config: { url: `${otlp.url}/content/v1/traces` },
    });
    expect(withContent.status, withContent.text).toBe(201);

    // Off: no content.
    const before = await chat('secret plan code-1234 before');
    // On, with a redacting content filter on the key.
    const on = await mgmt('PATCH', `/workspaces/${workspaceId}`, { content_logging: true });
    expect(on.status, on.text).toBe(200);
    const key = await mgmt('POST', '/keys', { name: 'redacted export' });
    const g = await mgmt('POST', '/guardrails', {
      name: 'redact codes',
      content_filters: [{ pattern: 'code-[0-9]+', action: 'redact', label: 'code', apply_to: 'both' }],
    });
    await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
      key_hashes: [key.body.data.hash],
    });
    const after = await chat('secret plan code-1234 after', client(gw.url, key.body.key));

    const toLangfuse = (id: string) =>
      vi.waitFor(() => {
        const s = otlp.spans.find(
          (x) => x.attributes['gatehouse.generation.id'] === id && x.attributes['langfuse.observation.type'],
        );
        expect(s).toBeDefined();
        return s as NonNullable<typeof s>;
      }, wait);
    const lfBefore = await toLangfuse(before);
    const lfAfter = await toLangfuse(after);
    const lfRequests = otlp.requests.filter((r) => r.path === '/lf/api/public/otel/v1/traces');
    expect(lfRequests.length).toBeGreaterThan(0);
    const basic = `Basic ${Buffer.from('pk-lf-public:sk-lf-very-secret').toString('base64')}`;
    for (const r of lfRequests) expect(r.headers.authorization).toBe(basic);

    expect(lfBefore.attributes).toMatchObject({
      'langfuse.observation.type': 'generation',
      'langfuse.observation.model.name': expect.any(String),
      'gen_ai.request.model': 'gatehouse/echo',
    });
    expect(JSON.parse(String(lfBefore.attributes['langfuse.observation.usage_details']))).toMatchObject({
      input: expect.any(Number),
      output: expect.any(Number),
    });
    expect(JSON.parse(String(lfBefore.attributes['langfuse.observation.cost_details']))).toHaveProperty(
      'total',
    );
    expect(lfBefore.attributes).not.toHaveProperty('langfuse.observation.input');
    expect(JSON.stringify(lfBefore)).not.toContain('secret plan');

    // Logged: input and output, as content logging kept them (redacted).
    const input = String(lfAfter.attributes['langfuse.observation.input']);
    const output = String(lfAfter.attributes['langfuse.observation.output']);
    expect(input).toContain('secret plan');
    expect(input).not.toContain('code-1234');
    expect(output).not.toContain('code-1234');
    expect(JSON.parse(output)[0]).toMatchObject({ role: 'assistant', parts: [{ type: 'text' }] });
    expect(lfAfter.attributes).not.toHaveProperty('gen_ai.input.messages'); // sent once, as Langfuse's
    expect(JSON.parse(input).messages[0]).toMatchObject({ role: 'user' });

    // An otlp destination: the conventions' attributes.
    const otlpAfter = await vi.waitFor(() => {
      const s = otlp.spans.find(
        (x) => x.attributes['gatehouse.generation.id'] === after && x.path === '/content/v1/traces',
      );
      expect(s).toBeDefined();
      return s as NonNullable<typeof s>;
    }, wait);
    expect(otlpAfter.attributes['gen_ai.input.messages']).toBe(input);
    expect(otlpAfter.attributes['gen_ai.output.messages']).toBe(output);

    // Privacy mode: the same call, never its content.
    const priv = await vi.waitFor(() => {
      const s = otlp.spans.find(
        (x) => x.attributes['gatehouse.generation.id'] === after && x.path === '/private/v1/traces',
      );
      expect(s).toBeDefined();
      return s;
    }, wait);
    expect(JSON.stringify(priv)).not.toContain('secret plan');
    expect(priv?.attributes).not.toHaveProperty('gen_ai.input.messages');

    await mgmt('PATCH', `/workspaces/${workspaceId}`, { content_logging: false });
    for (const d of [lfId, privacy.body.data.id, withContent.body.data.id])
      await mgmt('DELETE', `/observability/destinations/${d}`);
  }, 30_000);
});

/**
 * The content cap, on OTLP and Langfuse destinations of a gateway capped at 4 KiB per field: a long
 * call's input and output attributes are the start of their JSON and a marker, and the span says
 * which were cut; a short call's are whole.
 */
describe.each(databases)('otlp export content cap (%s)', (db) => {
  let gw: TestGateway;
  let otlp: OtlpReceiver;
  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    gw = await startTestGateway(db, {
      env: { GATEHOUSE_EXPORT_PRIVATE: 'on', GATEHOUSE_EXPORT_CONTENT_MAX_BYTES: '4096' },
    });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
  });
  afterAll(async () => {
    await gw?.stop();
    await otlp?.close();
  });

  it('cuts content larger than the cap, with a marker, and names the cut fields', async () => {
    const mgmt = client(gw.url, gw.managementKey);
    const api = client(gw.url, gw.apiKey);
    const workspaceId = (await api('GET', '/key')).body.data.workspace_id as string;
    expect((await mgmt('PATCH', `/workspaces/${workspaceId}`, { content_logging: true })).status).toBe(200);
    for (const [name, type, config] of [
      ['collector', 'otlp', { url: `${otlp.url}/cap/v1/traces` }],
      ['langfuse', 'langfuse', { base_url: `${otlp.url}/lf`, public_key: 'pk-lf', secret_key: 'sk-lf' }],
    ] as const) {
      const res = await mgmt('POST', '/observability/destinations', { type, name, config });
      expect(res.status, res.text).toBe(201);
    }
    const chat = async (content: string) => {
      const res = await api('POST', '/chat/completions', {
        model: 'gatehouse/echo',
        messages: [{ role: 'user', content }],
      });
      expect(res.status, res.text).toBe(200);
      return res.headers.get('x-gatehouse-generation-id') as string;
    };
    const [long, short] = await Promise.all([chat(`${'ü'.repeat(8000)} the end`), chat('short words')]);
    const span = (id: string, path: string) =>
      vi.waitFor(() => {
        const s = otlp.spans.find((x) => x.attributes['gatehouse.generation.id'] === id && x.path === path);
        expect(s).toBeDefined();
        return s as NonNullable<typeof s>;
      }, wait);
    const marker = /…\[truncated by Gatehouse: \d+ bytes\]$/;
    const cut = (await span(long, '/cap/v1/traces')).attributes;
    expect(cut['gatehouse.content.truncated']).toEqual(['input', 'output']);
    for (const name of ['gen_ai.input.messages', 'gen_ai.output.messages']) {
      const v = String(cut[name]);
      expect(Buffer.byteLength(v), name).toBeLessThanOrEqual(4096);
      expect(v, name).toMatch(marker);
      expect(v, name).not.toContain('the end');
    }
    expect(String(cut['gen_ai.input.messages']).startsWith('{"messages":[{"role":"user","content":"üü')).toBe(
      true,
    );
    const lf = (await span(long, '/lf/api/public/otel/v1/traces')).attributes;
    expect(lf['gatehouse.content.truncated']).toEqual(['input', 'output']);
    expect(Buffer.byteLength(String(lf['langfuse.observation.input']))).toBeLessThanOrEqual(4096);
    expect(String(lf['langfuse.observation.output'])).toMatch(marker);

    const whole = (await span(short, '/cap/v1/traces')).attributes;
    expect(whole).not.toHaveProperty('gatehouse.content.truncated');
    expect(JSON.parse(String(whole['gen_ai.input.messages'])).messages[0]).toMatchObject({
      content: 'short words',
    });
  });
});

/**
 * The queue bound, on the dispatcher itself: an OTLP destination whose receiver is down holds at
 * most `queueMax` records; the others are dropped and counted, not held in memory.
 */
describe('export queue bound', () => {
  it('drops records past the queue bound and counts them', { timeout: 20_000 }, async () => {
    const down = await startOtlpReceiver();
    down.failFor(1_000);
    const metrics = new Registry();
    const dest: LiveDestination = {
      id: 'd1',
      type: 'otlp',
      url: `${down.url}/v1/traces`,
      method: 'POST',
      headers: {},
      encoding: 'protobuf',
      signingSecret: '',
      apiKeyHashes: null,
      privacyMode: false,
      samplingRate: 1,
      filterRules: null,
      cost: true,
      identity: false,
      requestContext: false,
    };
    const log = { warn: () => {}, error: () => {}, info: () => {}, debug: () => {} } as never;
    const dispatcher = new ExportDispatcher({ forWorkspace: async () => [dest] }, log, metrics, {
      queueMax: 3,
      batchSize: 100,
      flushMs: 60_000,
      timeoutMs: 5_000,
      maxAttempts: 2,
      backoffMs: 10,
      allowPrivate: true,
      contentMaxBytes: 0,
    });
    const row = (i: number) =>
      ({
        id: `gen-${i}`,
        organization_id: 'o',
        workspace_id: 'w',
        key_hash: null,
        requested_model: 'm',
        model: 'm',
        provider: 'p',
        prompt_tokens: 1,
        completion_tokens: 1,
        created_at: new Date().toISOString(),
        latency_ms: 5,
        status: 'success',
        http_status: 200,
      }) as never;
    for (let i = 0; i < 8; i++) dispatcher.onRecord(row(i));
    const count = async (result: string, reason: string) => {
      const m = await metrics.getSingleMetric('gatehouse_export_records_total')?.get();
      return m?.values.find((v) => v.labels.result === result && v.labels.reason === reason)?.value ?? 0;
    };
    await vi.waitFor(async () => expect(await count('dropped', 'queue_full')).toBe(5), wait);
    // The three it held get one last attempt on shutdown; the receiver is down: dropped, counted.
    await dispatcher.close(5_000);
    expect(await count('dropped', 'shutdown')).toBe(3);
    expect(await count('sent', '')).toBe(0);
    expect(down.requests).toHaveLength(1);
    expect(down.requests[0]?.status).toBe(503);
    await down.close();
  });
});
