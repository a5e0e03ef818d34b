import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { tracingOn } from '../src/telemetry/spans.js';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from './support/otlp-receiver.js';
import { startUpstreams } from './support/upstreams.js';

/**
 * OpenTelemetry traces, exported over OTLP/HTTP to a receiver in the test: the request's SERVER
 * span, one CLIENT span per upstream attempt (a fallback's failed attempt beside the one that
 * served), the GenAI attributes, W3C propagation both ways, batches and intern runs; and nothing
 * at all without the OTEL_* variables. The SDK reads process.env: each block sets its variables
 * before its gateway starts (the blocks run in order, one gateway at a time).
 */

const SERVER = 2;
const CLIENT = 3;
const INTERNAL = 1;
const ERROR = 2;

const OTEL_VARS = [
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_SERVICE_NAME',
  'OTEL_RESOURCE_ATTRIBUTES',
  'OTEL_BSP_SCHEDULE_DELAY',
  'OTEL_TRACES_EXPORTER',
  'OTEL_SDK_DISABLED',
];
function setOtelEnv(vars: Record<string, string>): void {
  for (const name of OTEL_VARS) delete process.env[name];
  Object.assign(process.env, vars);
}

const newTraceId = () => randomBytes(16).toString('hex');
const newSpanId = () => randomBytes(8).toString('hex');

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, ms = 20_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const got = await probe();
    if (got !== undefined) return got;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The spans of one trace, once its root (or `name`d) span has arrived. */
function traceOf(rx: OtlpReceiver, traceId: string) {
  return rx.spans.filter((s) => s.traceId === traceId);
}

function logCollector() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l));
      done();
    },
  });
  return { lines, stream };
}

/** Reads an SSE response to its end. */
async function readStream(res: Response): Promise<string> {
  return res.text();
}

describe('tracing off (no OTEL_* variables)', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let rx: OtlpReceiver;
  const logs = logCollector();

  beforeAll(async () => {
    setOtelEnv({});
    rx = await startOtlpReceiver();
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway('sqlite', { env: up.env, logStream: logs.stream });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 10,
    });
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
    await rx?.close();
  });

  it('starts no SDK: the API’s tracer is the no-op one, no traceparent goes upstream, log lines carry no trace ids', async () => {
    const traceparent = `00-${newTraceId()}-${newSpanId()}-01`;
    const res = await client(gw.url, gw.apiKey)(
      'POST',
      '/chat/completions',
      { model: 'test/gpt', messages: [{ role: 'user', content: 'hi' }] },
      { traceparent },
    );
    expect(res.status).toBe(200);
    expect(tracingOn()).toBe(false);
    // No provider registered: a span from the global API records nothing and has no valid ids.
    const probe = trace.getTracer('probe').startSpan('probe');
    expect(probe.isRecording()).toBe(false);
    expect(probe.spanContext().traceId).toBe('0'.repeat(32));
    probe.end();
    expect(mock.requests).toHaveLength(1);
    expect(mock.requests[0]?.headers.traceparent).toBeUndefined();
    const access = logs.lines.find((l) => l.msg === 'request completed');
    expect(access).toBeDefined();
    expect(logs.lines.some((l) => 'trace_id' in l)).toBe(false);
    await new Promise((r) => setTimeout(r, 300));
    expect(rx.spans).toHaveLength(0);
    expect(rx.contentTypes).toHaveLength(0);
  });
});

describe('tracing over OTLP/HTTP JSON', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let rx: OtlpReceiver;
  const logs = logCollector();

  beforeAll(async () => {
    rx = await startOtlpReceiver();
    setOtelEnv({
      OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'gatehouse-under-test',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    });
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway('sqlite', {
      env: { ...up.env, GATEHOUSE_BATCH_POLL_MS: '20', GATEHOUSE_INTERNS_PER_MEMBER: '50' },
      logStream: logs.stream,
    });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 50,
    });
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
    await rx?.close();
    setOtelEnv({});
  });

  it('the Responses WebSocket mode: each response.create is a SERVER span of its own (under the handshake’s traceparent), its attempt under it', async () => {
    mock.reset();
    const traceId = newTraceId();
    const callerSpan = newSpanId();
    const ws = new WebSocket(`${gw.url.replace('http', 'ws')}/api/v1/responses`, {
      headers: { authorization: `Bearer ${gw.apiKey}`, traceparent: `00-${traceId}-${callerSpan}-01` },
    });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const turn = () =>
      new Promise<void>((resolve) => {
        const onMessage = (data: Buffer) => {
          if (JSON.parse(String(data)).type !== 'response.completed') return;
          ws.off('message', onMessage);
          resolve();
        };
        ws.on('message', onMessage);
        ws.send(JSON.stringify({ type: 'response.create', model: 'test/gpt', input: 'hi', store: false }));
      });
    await turn();
    await turn();
    // A third turn the client leaves mid-way: a closed request (499), as its metric counts it.
    mock.enqueue({ match: { format: 'openai-responses' }, stallAfterEvents: 3 });
    const firstEvent = new Promise((resolve) => ws.once('message', resolve));
    ws.send(JSON.stringify({ type: 'response.create', model: 'test/gpt', input: 'hang', store: false }));
    await firstEvent;
    ws.close();
    const servers = await until('three server spans', () => {
      const found = traceOf(rx, traceId).filter((s) => s.kind === SERVER);
      return found.length === 3 ? found : undefined;
    });
    for (const server of servers) {
      expect(server.name).toBe('GET /api/v1/responses');
      expect(server.parentSpanId).toBe(callerSpan);
      expect(server.attributes).toMatchObject({ 'gen_ai.request.model': 'test/gpt' });
    }
    expect(servers.map((s) => s.attributes['http.response.status_code']).sort()).toEqual([200, 200, 499]);
    const attempts = traceOf(rx, traceId).filter((s) => s.kind === CLIENT);
    expect(attempts.map((a) => a.parentSpanId).sort()).toEqual(servers.map((s) => s.spanId).sort());
    expect(mock.requests.map((r) => r.headers.traceparent)).toEqual([
      expect.any(String),
      expect.any(String),
      expect.any(String),
    ]);
    // Each turn has its access line, with its span's ids.
    const lines = await until('three access lines', () => {
      const found = logs.lines.filter((l) => l.msg === 'websocket turn completed' && l.trace_id === traceId);
      return found.length === 3 ? found : undefined;
    });
    expect(lines.map((l) => l.span_id).sort()).toEqual(servers.map((s) => s.spanId).sort());
    expect(lines.map((l) => (l.res as { statusCode: number }).statusCode)).toEqual([200, 200, 499]);
  });

  it('a streamed call whose first provider fails: the caller’s traceparent parents the SERVER span, two CLIENT attempt spans under it, the fallback’s with usage; the upstream sees each attempt’s traceparent', async () => {
    mock.reset();
    // test/multi: openai first (fails with 500), then groq serves.
    mock.enqueue({ status: 500, error: { message: 'boom' }, match: { path: /^\/openai\// } });
    const traceId = newTraceId();
    const callerSpan = newSpanId();
    const res = await fetch(`${gw.url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${gw.apiKey}`,
        'content-type': 'application/json',
        traceparent: `00-${traceId}-${callerSpan}-01`,
        tracestate: 'vendor=abc',
        baggage: 'user.id=someone',
      },
      body: JSON.stringify({
        model: 'test/multi',
        stream: true,
        max_tokens: 64,
        temperature: 0.5,
        messages: [{ role: 'user', content: 'a secret prompt' }],
      }),
    });
    expect(res.status).toBe(200);
    const generationId = res.headers.get('x-gatehouse-generation-id');
    const text = await readStream(res);
    expect(text).toContain('[DONE]');

    const server = await until('the server span', () => traceOf(rx, traceId).find((s) => s.kind === SERVER));
    expect(server.name).toBe('POST /api/v1/chat/completions');
    expect(server.parentSpanId).toBe(callerSpan);
    expect(server.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/api/v1/chat/completions',
      'http.response.status_code': 200,
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'test/multi',
      'gatehouse.model': 'test/multi',
      'gatehouse.generation_id': generationId,
    });
    // What the call used is on the serving attempt's span only: a sum over spans counts it once.
    for (const key of [
      'gen_ai.usage.input_tokens',
      'gatehouse.cost_usd',
      'gatehouse.provider',
      'gatehouse.attempts',
    ])
      expect(server.attributes).not.toHaveProperty(key);
    expect(server.resource).toMatchObject({
      'service.name': 'gatehouse-under-test',
      'deployment.environment.name': 'test',
    });

    const attempts = traceOf(rx, traceId)
      .filter((s) => s.kind === CLIENT)
      .sort(
        (a, b) =>
          Number(a.attributes['gatehouse.fallback_index']) - Number(b.attributes['gatehouse.fallback_index']),
      );
    expect(attempts.map((s) => s.name)).toEqual(['chat gpt-multi', 'chat llama-multi']);
    for (const a of attempts) expect(a.parentSpanId).toBe(server.spanId);
    const [failed, served] = attempts as [ReceivedSpan, ReceivedSpan];
    expect(failed.status.code).toBe(ERROR);
    expect(failed.events.map((e) => e.name)).toContain('exception');
    expect(failed.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-multi',
      'gatehouse.provider': 'openai',
      'gatehouse.fallback_index': 0,
      'http.response.status_code': 500,
      'error.type': '500',
    });
    expect(served.status.code).not.toBe(ERROR);
    expect(served.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'groq',
      'gen_ai.request.model': 'llama-multi',
      'gen_ai.response.model': 'llama-multi',
      'gen_ai.request.max_tokens': 64,
      'gen_ai.request.temperature': 0.5,
      'gen_ai.response.finish_reasons': ['stop'],
      'gatehouse.provider': 'groq',
      'gatehouse.model': 'test/multi',
      'gatehouse.route': 'lane',
      'gatehouse.fallback_index': 1,
      'gatehouse.stream': true,
      'gatehouse.generation_id': generationId,
      'gatehouse.key_hash_prefix': expect.stringMatching(/^[0-9a-f]{12}$/),
    });
    expect(served.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
    expect(served.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    expect(served.attributes['gatehouse.cost_usd']).toBeGreaterThan(0);
    expect(served.attributes['gatehouse.attempts']).toBe(2);
    // The conventions' older name of gen_ai.provider.name is not sent.
    expect(served.attributes).not.toHaveProperty('gen_ai.system');
    // Never the prompt, the answer or a key.
    const everything = JSON.stringify(traceOf(rx, traceId));
    expect(everything).not.toContain('a secret prompt');
    expect(everything).not.toContain('sk-operator');
    expect(everything).not.toContain(gw.apiKey);

    // Each upstream request carried its own attempt's span as parent.
    const sent = mock.requests.map((r) => String(r.headers.traceparent));
    expect(sent).toEqual([`00-${traceId}-${failed.spanId}-01`, `00-${traceId}-${served.spanId}-01`]);
    // The caller's tracestate travels with the trace (W3C), to each upstream.
    expect(mock.requests.map((r) => r.headers.tracestate)).toEqual(['vendor=abc', 'vendor=abc']);
    // The caller's baggage is not passed on to providers.
    expect(mock.requests.map((r) => r.headers.baggage)).toEqual([undefined, undefined]);

    // The access line of the request names its trace.
    const access = logs.lines.find(
      (l) => l.msg === 'request completed' && (l.req as { url?: string })?.url === '/api/v1/chat/completions',
    );
    expect(access).toMatchObject({ trace_id: traceId, span_id: server.spanId });
  });

  it('a call every provider refuses: the SERVER span is an error (502) and each attempt is an error', async () => {
    mock.reset();
    mock.enqueue({ status: 503, error: { message: 'down' }, times: 4 });
    const traceId = newTraceId();
    const res = await client(gw.url, gw.apiKey)(
      'POST',
      '/chat/completions',
      { model: 'test/multi', messages: [{ role: 'user', content: 'hi' }] },
      { traceparent: `00-${traceId}-${newSpanId()}-01` },
    );
    expect(res.status).toBe(502);
    const server = await until('the server span', () => traceOf(rx, traceId).find((s) => s.kind === SERVER));
    expect(server.status.code).toBe(ERROR);
    expect(server.attributes['http.response.status_code']).toBe(502);
    const attempts = await until('the attempt spans', () => {
      const a = traceOf(rx, traceId).filter((s) => s.kind === CLIENT);
      return a.length >= 2 ? a : undefined;
    });
    for (const a of attempts) {
      expect(a.status.code).toBe(ERROR);
      expect(a.parentSpanId).toBe(server.spanId);
    }
  });

  it('a stream that breaks after it started: its attempt span is an error, with the usage so far', async () => {
    mock.reset();
    mock.enqueue({ reply: { text: 'a long answer cut short' }, dieAfterEvents: 2 });
    const traceId = newTraceId();
    const res = await fetch(`${gw.url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${gw.apiKey}`,
        'content-type': 'application/json',
        traceparent: `00-${traceId}-${newSpanId()}-01`,
      },
      body: JSON.stringify({ model: 'test/gpt', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    await res.text().catch(() => '');
    const attempt = await until('the attempt span', () =>
      traceOf(rx, traceId).find((s) => s.kind === CLIENT),
    );
    expect(attempt.status.code).toBe(ERROR);
    expect(attempt.events.map((e) => e.name)).toContain('exception');
    expect(attempt.attributes['gatehouse.status']).toBe('error');
    expect(attempt.attributes['gatehouse.generation_id']).toBe(res.headers.get('x-gatehouse-generation-id'));
    expect(attempt.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
  });

  it('a request without traceparent starts a trace of its own; a non-streamed translated call has its usage', async () => {
    mock.reset();
    const res = await client(gw.url, gw.apiKey)('POST', '/chat/completions', {
      model: 'test/claude',
      max_tokens: 32,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(res.status).toBe(200);
    const generationId = res.headers.get('x-gatehouse-generation-id');
    const attempt = await until('the attempt span', () =>
      rx.spans.find((s) => s.kind === CLIENT && s.attributes['gatehouse.generation_id'] === generationId),
    );
    const server = rx.spans.find((s) => s.spanId === attempt.parentSpanId) as ReceivedSpan;
    expect(server.kind).toBe(SERVER);
    expect(server.parentSpanId).toBe('');
    expect(attempt.attributes).toMatchObject({
      'gen_ai.provider.name': 'anthropic',
      'gen_ai.request.model': 'claude-x',
      'gen_ai.request.max_tokens': 32,
      'gatehouse.route': 'translated',
      'gen_ai.response.finish_reasons': ['stop'],
    });
    expect(attempt.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    expect(mock.requests[0]?.headers.traceparent).toBe(`00-${attempt.traceId}-${attempt.spanId}-01`);
  });

  it('a rerank call is named for what it is: gen_ai.operation.name rerank on its attempt and its SERVER span, not chat', async () => {
    const res = await client(gw.url, gw.apiKey)('POST', '/rerank', {
      model: 'gatehouse/rerank',
      query: 'lighthouse',
      documents: ['a red lighthouse', 'a blue boat'],
    });
    expect(res.status).toBe(200);
    const generationId = res.headers.get('x-gatehouse-generation-id');
    const attempt = await until('the attempt span', () =>
      rx.spans.find((s) => s.kind === CLIENT && s.attributes['gatehouse.generation_id'] === generationId),
    );
    expect(attempt.name).toMatch(/^rerank /);
    expect(attempt.attributes['gen_ai.operation.name']).toBe('rerank');
    const server = await until('the SERVER span', () =>
      rx.spans.find((s) => s.spanId === attempt.parentSpanId),
    );
    expect(server.attributes['gen_ai.operation.name']).toBe('rerank');
  });

  it('a batch: one span per request run, its attempt under it', async () => {
    mock.reset();
    const api = client(gw.url, gw.apiKey);
    const created = await api('POST', '/batches', {
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      requests: [0, 1].map((i) => ({
        custom_id: `c-${i}`,
        body: { model: 'test/gpt', messages: [{ role: 'user', content: `q${i}` }] },
      })),
    });
    expect(created.status, created.text).toBe(202);
    const id = created.body.id as string;
    const items = await until('the batch request spans', () => {
      const got = rx.spans.filter(
        (s) => s.name === 'batch.request' && s.attributes['gatehouse.batch.id'] === id,
      );
      return got.length === 2 ? got : undefined;
    });
    for (const item of items) {
      expect(item.kind).toBe(INTERNAL);
      expect(item.parentSpanId).toBe('');
      expect(item.status.code).not.toBe(ERROR);
      expect(item.attributes).toMatchObject({ 'gatehouse.batch.endpoint': '/v1/chat/completions' });
      const attempt = await until('its attempt span', () =>
        rx.spans.find((s) => s.kind === CLIENT && s.parentSpanId === item.spanId),
      );
      expect(attempt.traceId).toBe(item.traceId);
      expect(attempt.attributes).toMatchObject({
        'gen_ai.request.model': 'gpt-x',
        'gen_ai.provider.name': 'openai',
        'gatehouse.stream': false,
      });
      expect(attempt.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
    }
    expect(new Set(items.map((s) => s.attributes['gatehouse.batch.request_index']))).toEqual(new Set([0, 1]));
  });

  it('an intern run: the chat request’s SERVER span, the runtime’s model calls under it', async () => {
    const api = client(gw.url, gw.apiKey);
    const created = await api('POST', '/interns', {
      name: 'traced',
      provision: true,
      instructions: 'Be brief.',
    });
    expect(created.status, created.text).toBe(201);
    const internId = created.body.id as string;
    await until(
      'the intern running',
      async () => {
        const got = await api('GET', `/interns/${internId}`);
        if (got.body.status === 'failed')
          throw new Error(`provisioning failed: ${got.body.last_failure_message}`);
        return got.body.status === 'running' ? true : undefined;
      },
      60_000,
    );
    const traceId = newTraceId();
    const res = await fetch(`${gw.url}/api/v1/interns/${internId}/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${gw.apiKey}`,
        'content-type': 'application/json',
        traceparent: `00-${traceId}-${newSpanId()}-01`,
      },
      body: JSON.stringify({ stream: true, messages: [{ role: 'user', content: 'hello intern' }] }),
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('[DONE]');
    const run = await until('the run span', () =>
      traceOf(rx, traceId).find((s) => s.kind === SERVER && s.name.includes('/interns/')),
    );
    expect(run.name).toBe('POST /api/v1/interns/:internId/chat/completions');
    expect(run.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.id': internId,
      'gen_ai.agent.name': 'traced',
    });
    const callback = await until('a model call of the run', () =>
      traceOf(rx, traceId).find((s) => s.kind === SERVER && s.parentSpanId === run.spanId),
    );
    expect(callback.attributes['gen_ai.agent.id']).toBe(internId);
    const attempt = await until('its attempt span', () =>
      traceOf(rx, traceId).find((s) => s.kind === CLIENT && s.parentSpanId === callback.spanId),
    );
    expect(attempt.attributes['gen_ai.operation.name']).toBe('chat');
    expect(attempt.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
  }, 90_000);
});

describe('tracing over OTLP/HTTP protobuf (the default protocol)', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let rx: OtlpReceiver;

  beforeAll(async () => {
    rx = await startOtlpReceiver();
    setOtelEnv({
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
      OTEL_BSP_SCHEDULE_DELAY: '50',
    });
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway('sqlite', { env: up.env });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 10,
    });
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
    await rx?.close();
    setOtelEnv({});
  });

  it('exports the request’s and the attempt’s spans as protobuf, with the default service name', async () => {
    const traceId = newTraceId();
    const res = await client(gw.url, gw.apiKey)(
      'POST',
      '/chat/completions',
      { model: 'test/gpt', messages: [{ role: 'user', content: 'hi' }] },
      { traceparent: `00-${traceId}-${newSpanId()}-01` },
    );
    expect(res.status).toBe(200);
    const attempt = await until('the attempt span', () =>
      traceOf(rx, traceId).find((s) => s.kind === CLIENT),
    );
    const server = traceOf(rx, traceId).find((s) => s.kind === SERVER) as ReceivedSpan;
    expect(attempt.parentSpanId).toBe(server.spanId);
    expect(rx.contentTypes.every((t) => t.startsWith('application/x-protobuf'))).toBe(true);
    expect(server.resource['service.name']).toBe('gatehouse');
    expect(attempt.attributes).toMatchObject({
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-x',
      'gen_ai.response.finish_reasons': ['stop'],
      'gatehouse.fallback_index': 0,
    });
    expect(attempt.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
  });
});
