/**
 * The Responses WebSocket mode (`GET /responses` upgraded): the openai 7 client's `ResponsesWS`
 * and the Agents SDK's `OpenAIResponsesWSModel` against a model served by OpenAI (the call passed
 * through upstream as an HTTP stream) and one served by Anthropic (translated); the connection's
 * own memory of its last response (`previous_response_id` with `store: false`), which no other
 * connection reaches; error events; the handshake refused as an HTTP call is.
 */
import { createRequire } from 'node:module';
import { connect as tcpConnect } from 'node:net';
import {
  Agent,
  OpenAIResponsesWSModel,
  Runner,
  run,
  setDefaultOpenAIClient,
  setOpenAIResponsesTransport,
  setTracingDisabled,
  tool,
} from '@openai/agents';
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import WebSocket from 'ws';
import { z } from 'zod';
import type { TestGateway } from './support/gateway.js';
import { client } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { gatewayWithUpstreams } from './support/upstreams.js';

// The `openai` 7 client (the Agents SDK's own) and its Node WebSocket transport.
const sdkRequire = createRequire(createRequire(import.meta.url).resolve('@openai/agents-openai'));
const { OpenAI } = sdkRequire('openai');
const { ResponsesWS } = sdkRequire('openai/resources/responses/ws');

type Event = Record<string, any>;

const providers = [
  { model: 'test/gpt', vendor: 'openai', upstream: 'gpt-x', path: '/openai/v1/responses' },
  { model: 'test/claude', vendor: 'anthropic', upstream: 'claude-x', path: '/anthropic/v1/messages' },
  {
    model: 'test/gemini',
    vendor: 'google',
    upstream: 'gemini-x',
    path: '/google/v1beta/models/gemini-x:streamGenerateContent',
  },
] as const;

/** The streamed text of a turn's events. */
const text = (events: Event[]) =>
  events
    .filter((e) => e.type === 'response.output_text.delta')
    .map((e) => e.delta)
    .join('');

const WEATHER = {
  type: 'function',
  name: 'weather',
  description: 'The weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

/** A sample's value in the metrics listener's Prometheus text. */
async function sample(gw: TestGateway, series: string) {
  const metrics = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
  const line = metrics.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Node 20 has no global WebSocket (Node 22 has): the Agents SDK's documented requirement, met with `ws`. */
function withGlobalWebSocket() {
  const hadGlobal = 'WebSocket' in globalThis;
  if (!hadGlobal) Object.assign(globalThis, { WebSocket });
  onTestFinished(() => {
    if (!hadGlobal) Reflect.deleteProperty(globalThis, 'WebSocket');
  });
}

/** The Agents SDK's function tool the agent tests call, recording the cities it was called for. */
function weatherTool(runs: string[]) {
  return tool({
    name: 'weather',
    description: 'The weather of a city',
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      runs.push(city);
      return `sunny in ${city}`;
    },
  });
}

describe('Responses WebSocket mode', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let stop: () => Promise<void>;
  let openai: any;
  const open: any[] = [];

  beforeAll(async () => {
    setTracingDisabled(true);
    ({ gw, mock, stop } = await gatewayWithUpstreams());
    openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(async () => {
    for (const s of open) s.close();
    await stop?.();
  });
  beforeEach(() => mock.reset());

  /** A connection of the openai client's `ResponsesWS`, closed after the suite. */
  function connect() {
    const rws = new ResponsesWS(openai);
    // Error events are read by each test (an unheard one would be an unhandled rejection).
    rws.on('error', () => {});
    open.push(rws);
    return rws;
  }

  /** Sends one client event and collects the server events up to the turn's last one. */
  function turn(rws: any, event: Event): Promise<Event[]> {
    return new Promise((resolve) => {
      const events: Event[] = [];
      const onEvent = (e: Event) => {
        events.push(e);
        if (['response.completed', 'response.incomplete', 'response.failed', 'error'].includes(e.type)) {
          rws.off('event', onEvent);
          rws.off('error', onError);
          resolve(events);
        }
      };
      // The client reports an `error` event as an error carrying it.
      const onError = (err: { error?: Event }) => onEvent(err.error ?? { type: 'error', error: err });
      rws.on('event', onEvent);
      rws.on('error', onError);
      rws.send(event);
    });
  }

  const completed = (events: Event[]) => events.find((e) => e.type === 'response.completed')?.response;

  const generations = async () => {
    await gw.services.accountant.flush();
    return gw.services.db
      .selectFrom('generations')
      .select(['id', 'status', 'cost_usd', 'prompt_tokens', 'completion_tokens', 'model'])
      .orderBy('created_at')
      .execute();
  };

  it.each(
    providers,
  )('openai 7 ResponsesWS → $model ($vendor): streamed, recorded, the upstream got the call', async (p) => {
    const before = (await generations()).length;
    const rws = connect();
    const events = await turn(rws, {
      type: 'response.create',
      model: p.model,
      input: 'Say hello.',
      instructions: 'Be brief.',
      store: false,
    });
    expect(events[0]?.type).toBe('response.created');
    expect(text(events)).toBe(`Hello from ${p.upstream}!`);
    const response = completed(events);
    expect(response.status).toBe('completed');
    expect(response.usage).toMatchObject({
      input_tokens: expect.any(Number),
      output_tokens: expect.any(Number),
    });
    expect(response.usage.output_tokens).toBeGreaterThan(0);
    expect(mock.requests.map((r) => r.path)).toEqual([p.path]);
    const sent = mock.requests[0]!;
    expect(sent.model).toBe(p.upstream);
    expect(sent.stream).toBe(true);
    expect(JSON.stringify(sent.body)).toContain('Say hello.');
    expect(JSON.stringify(sent.body)).toContain('Be brief.');
    // The socket's envelope stays on the socket.
    expect(sent.body.type).toBeUndefined();
    const gens = (await generations()).slice(before);
    expect(gens).toHaveLength(1);
    expect(gens[0]).toMatchObject({ status: 'success', model: p.model });
    expect(gens[0]!.cost_usd).toBeGreaterThan(0);
  });

  it.each(
    providers,
  )('a tool loop over one socket with store: false continues the connection’s last response ($model)', async (p) => {
    mock.enqueue(
      { reply: { tool_calls: [{ id: 'call_w1', name: 'weather', arguments: { city: 'Oslo' } }] } },
      { reply: { text: 'Sunny in Oslo.' } },
    );
    const rws = connect();
    const first = await turn(rws, {
      type: 'response.create',
      model: p.model,
      input: 'Weather in Oslo?',
      tools: [WEATHER],
      store: false,
    });
    const r1 = completed(first);
    const call = r1.output.find((i: Event) => i.type === 'function_call');
    expect(call).toMatchObject({ name: 'weather', call_id: expect.any(String) });
    // Only the new item: the socket holds the rest.
    const second = await turn(rws, {
      type: 'response.create',
      model: p.model,
      previous_response_id: r1.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'sunny, 21 °C' }],
      tools: [WEATHER],
      store: false,
    });
    const r2 = completed(second);
    expect(r2, JSON.stringify(second)).toBeDefined();
    expect(text(second)).toBe('Sunny in Oslo.');
    expect(r2.previous_response_id).toBe(r1.id);
    expect(r2.store).toBe(false);
    const upstream = JSON.stringify(mock.requests[1]?.body);
    expect(upstream).toContain('Weather in Oslo?');
    // The call as the provider's format has it (Gemini's calls carry no id on the wire).
    expect(upstream).toContain(p.vendor === 'google' ? '"functionCall":{"name":"weather"' : call.call_id);
    expect(upstream).toContain('sunny, 21 °C');
    // Nothing Gatehouse alone knows reaches the provider.
    expect(mock.requests[1]?.body.previous_response_id).toBeUndefined();
    // Not stored: not readable over HTTP.
    expect((await client(gw.url, gw.apiKey)('GET', `/responses/${r1.id}`)).status).toBe(404);
  });

  it('a key disabled while the socket is open: the next turn is a 401 error event and the socket closes', async () => {
    const mgmt = client(gw.url, gw.managementKey);
    const created = await mgmt('POST', '/keys', { name: 'short-lived' });
    expect(created.status).toBe(201);
    const ws = new WebSocket(`${gw.url.replace('http', 'ws')}/api/v1/responses`, {
      headers: { authorization: `Bearer ${created.body.key}` },
    });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const messages: Event[] = [];
    ws.on('message', (data) => messages.push(JSON.parse(String(data))));
    expect((await mgmt('PATCH', `/keys/${created.body.data.hash}`, { disabled: true })).status).toBe(200);
    const code = new Promise<number>((resolve) => ws.once('close', (c) => resolve(c)));
    ws.send(JSON.stringify({ type: 'response.create', model: 'test/gpt', input: 'hi' }));
    expect(await code).toBe(1008);
    expect(messages).toEqual([expect.objectContaining({ type: 'error', status: 401 })]);
    expect(mock.requests).toHaveLength(0);
  });

  it('a stored response (store: true) continues as over HTTP, and is readable over HTTP', async () => {
    const rws = connect();
    const r1 = completed(await turn(rws, { type: 'response.create', model: 'test/claude', input: 'One.' }));
    expect(r1.store).toBe(true);
    const r2 = completed(
      await turn(rws, {
        type: 'response.create',
        model: 'test/claude',
        previous_response_id: r1.id,
        input: 'Two.',
      }),
    );
    expect(r2.previous_response_id).toBe(r1.id);
    const upstream = JSON.stringify(mock.requests[1]?.body);
    expect(upstream).toContain('One.');
    expect(upstream).toContain('Two.');
    const got = await client(gw.url, gw.apiKey)('GET', `/responses/${r2.id}`);
    expect(got.status).toBe(200);
  });

  it('another connection cannot continue a store: false response; the error leaves the socket usable', async () => {
    const a = connect();
    const r1 = completed(
      await turn(a, { type: 'response.create', model: 'test/gpt', input: 'Secret.', store: false }),
    );
    const b = connect();
    const refused = await turn(b, {
      type: 'response.create',
      model: 'test/gpt',
      previous_response_id: r1.id,
      input: 'Go on.',
      store: false,
    });
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({
      type: 'error',
      status: 404,
      error: { code: 'previous_response_not_found', param: 'previous_response_id' },
    });
    expect(mock.requests).toHaveLength(1);
    expect(text(await turn(b, { type: 'response.create', model: 'test/gpt', input: 'Hi' }))).toBe(
      'Hello from gpt-x!',
    );
  });

  it('generate: false warms up: an empty completed response the next turn continues, no model called', async () => {
    const rws = connect();
    const warm = await turn(rws, {
      type: 'response.create',
      model: 'test/gpt',
      generate: false,
      instructions: 'Be brief.',
      input: 'Context to keep.',
      store: false,
    });
    expect(warm.map((e) => e.type)).toEqual(['response.created', 'response.completed']);
    const w = completed(warm);
    expect(w.output).toEqual([]);
    expect(mock.requests).toHaveLength(0);
    const next = completed(
      await turn(rws, {
        type: 'response.create',
        model: 'test/gpt',
        previous_response_id: w.id,
        input: 'Now answer.',
        store: false,
      }),
    );
    expect(next.status).toBe('completed');
    const upstream = JSON.stringify(mock.requests[0]?.body);
    expect(upstream).toContain('Context to keep.');
    expect(upstream).toContain('Now answer.');
  });

  it('bad events are error events in OpenAI’s shape and the socket stays open', async () => {
    const rws = connect();
    const raw = (data: string) =>
      new Promise<Event[]>((resolve) => {
        rws.once('error', (err: { error?: Event }) => resolve([err.error ?? {}]));
        rws.sendRaw(data);
      });
    expect((await raw('not json'))[0]).toMatchObject({
      type: 'error',
      status: 400,
      error: { type: 'invalid_request_error', code: 'invalid_json' },
    });
    expect((await raw(JSON.stringify({ type: 'response.cancel' })))[0]).toMatchObject({
      status: 400,
      error: { code: 'unknown_event_type', param: 'type' },
    });
    const noModel = await turn(rws, { type: 'response.create', input: 'hi' });
    expect(noModel).toEqual([expect.objectContaining({ type: 'error', status: 400 })]);
    expect(noModel[0]!.error.message).toMatch(/model/);
    const unknown = await turn(rws, { type: 'response.create', model: 'test/none', input: 'hi' });
    expect(unknown[0]).toMatchObject({ type: 'error', status: 404 });
    const background = await turn(rws, {
      type: 'response.create',
      model: 'test/gpt',
      input: 'hi',
      background: true,
    });
    expect(background[0]).toMatchObject({ type: 'error', status: 400, error: { param: 'background' } });
    expect(mock.requests).toHaveLength(0);
    expect(text(await turn(rws, { type: 'response.create', model: 'test/gpt', input: 'hi' }))).toBe(
      'Hello from gpt-x!',
    );
  });

  it('an upstream error is an error event; a second response.create while one is in flight is refused', async () => {
    const rws = connect();
    mock.enqueue({ status: 400, error: { message: 'upstream says no' } });
    const refused = await turn(rws, { type: 'response.create', model: 'test/claude', input: 'hi' });
    expect(refused.at(-1)).toMatchObject({ type: 'error' });
    expect(refused.at(-1)!.status).toBeGreaterThanOrEqual(400);

    mock.enqueue({ reply: { text: 'slow answer' }, eventDelayMs: 20 });
    const seen: Event[] = [];
    const events: Event[] = [];
    const onError = (err: { error?: Event }) => seen.push(err.error ?? {});
    const done = new Promise<void>((resolve) => {
      rws.on('event', (e: Event) => {
        events.push(e);
        if (e.type === 'response.completed') resolve();
      });
    });
    rws.on('error', onError);
    rws.send({ type: 'response.create', model: 'test/gpt', input: 'one' });
    rws.send({ type: 'response.create', model: 'test/gpt', input: 'two' });
    await done;
    rws.off('error', onError);
    expect(text(events)).toBe('slow answer');
    expect(seen).toEqual([
      expect.objectContaining({
        status: 409,
        error: expect.objectContaining({ code: 'response_already_in_flight' }),
      }),
    ]);
    expect(mock.requests).toHaveLength(2);
  });

  it('closing the socket mid-response aborts the upstream call and records it as cancelled', async () => {
    const before = (await generations()).length;
    mock.enqueue({ match: { format: 'openai-responses' }, stallAfterEvents: 3 });
    const ws = new WebSocket(`${gw.url.replace('http', 'ws')}/api/v1/responses`, {
      headers: { authorization: `Bearer ${gw.apiKey}` },
    });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const firstEvent = new Promise((resolve) => ws.once('message', resolve));
    ws.send(JSON.stringify({ type: 'response.create', model: 'test/gpt', input: 'hang' }));
    await firstEvent;
    ws.close();
    await vi.waitFor(async () => {
      const gens = (await generations()).slice(before);
      expect(gens.map((g) => g.status)).toEqual(['cancelled']);
    });
  });

  it('hostile messages: each is answered by an error event (never a 5xx) or a response, and the socket stays open', async () => {
    const rws = connect();
    const value = fc.jsonValue({ maxDepth: 3 });
    const message = fc.oneof(
      fc.string({ maxLength: 40 }),
      value.map((v) => JSON.stringify(v)),
      fc
        .record(
          {
            type: fc.constantFrom('response.create', 'response.create', 'response.cancel', 7),
            model: fc.oneof(fc.constantFrom('test/gpt', 'test/claude', ''), value),
            input: value,
            previous_response_id: fc.oneof(fc.string({ maxLength: 12 }), value),
            store: value,
            generate: fc.oneof(fc.boolean(), value),
            tools: value,
          },
          { requiredKeys: ['type'] },
        )
        .map((v) => JSON.stringify(v)),
    );
    /** Sends one raw message and waits for what ends its answer. */
    const answer = (data: string) =>
      new Promise<Event>((resolve) => {
        const done = (e: Event) => {
          if (!['response.completed', 'response.incomplete', 'response.failed', 'error'].includes(e.type))
            return;
          rws.off('event', done);
          rws.off('error', onError);
          resolve(e);
        };
        const onError = (err: { error?: Event }) => done(err.error ?? { type: 'error', status: 0 });
        rws.on('event', done);
        rws.on('error', onError);
        rws.sendRaw(data);
      });
    await fc.assert(
      fc.asyncProperty(message, async (data) => {
        const end = await answer(data);
        if (end.type === 'error') expect(end.status, JSON.stringify(end)).toBeLessThan(500);
      }),
      { numRuns: 60 },
    );
    expect(text(await turn(rws, { type: 'response.create', model: 'test/gpt', input: 'still here?' }))).toBe(
      'Hello from gpt-x!',
    );
  });

  describe('the handshake', () => {
    /** The HTTP answer to an upgrade that is refused. */
    const refusedUpgrade = (headers: Record<string, string>, path = '/api/v1/responses') =>
      new Promise<{ status: number; body: any }>((resolve, reject) => {
        const ws = new WebSocket(`${gw.url.replace('http', 'ws')}${path}`, { headers });
        ws.on('open', () => reject(new Error('the socket opened')));
        ws.on('error', () => {});
        ws.on('unexpected-response', (_req, res) => {
          let text = '';
          res.on('data', (c: Buffer) => {
            text += c;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
        });
      });

    it('is refused with 401 without a key or with a bad one, 403 with a management key', async () => {
      expect(await refusedUpgrade({})).toMatchObject({
        status: 401,
        body: { error: { message: expect.any(String) } },
      });
      const bad = await refusedUpgrade({ authorization: 'Bearer sk-gh-v1-0000000000000000000000000000' });
      expect(bad.status).toBe(401);
      expect((await refusedUpgrade({ authorization: `Bearer ${gw.managementKey}` })).status).toBe(403);
    });

    it('is refused (404) on any other route, public or not', async () => {
      const auth = { authorization: `Bearer ${gw.apiKey}` };
      for (const path of ['/api/v1/models', '/api/v1/responses/resp_x', '/health', '/api/v1/nowhere'])
        expect((await refusedUpgrade(auth, path)).status, path).toBe(404);
    });

    it('answers a plain GET with 426 and tells Codex the message size limit', async () => {
      const plain = await client(gw.url, gw.apiKey)('GET', '/responses');
      expect(plain.status).toBe(426);
      const ws = new WebSocket(`${gw.url.replace('http', 'ws')}/api/v1/responses`, {
        headers: { authorization: `Bearer ${gw.apiKey}` },
      });
      const upgrade = await new Promise<Record<string, unknown>>((resolve) => {
        let headers: Record<string, unknown> = {};
        ws.once('upgrade', (res) => {
          headers = res.headers;
        });
        ws.once('open', () => resolve(headers));
      });
      ws.close();
      // The limit of a model call's body (GATEHOUSE_INFERENCE_BODY_LIMIT), not the 1 MiB of the rest.
      expect(upgrade['x-codex-websocket-max-message-bytes']).toBe('52428800');
    });
  });

  it('a response.create message over 1 MiB is served, its input reaching the provider whole', async () => {
    const long = 'A long session of an agent. '.repeat(60_000);
    const events = await turn(connect(), {
      type: 'response.create',
      model: 'test/gpt',
      input: [{ role: 'user', content: [{ type: 'input_text', text: long }] }],
      store: false,
    });
    expect(completed(events)?.status, JSON.stringify(events.at(-1)).slice(0, 300)).toBe('completed');
    expect(long.length).toBeGreaterThan(1_048_576);
    expect(JSON.stringify(mock.requests[0]?.body)).toContain(long);
  });

  it('the Agents SDK’s OpenAIResponsesWSModel runs an agent with a tool to completion', async () => {
    mock.enqueue(
      { reply: { tool_calls: [{ id: 'call_a1', name: 'weather', arguments: { city: 'Oslo' } }] } },
      { reply: { text: 'It is sunny in Oslo.' } },
    );
    const runs: string[] = [];
    withGlobalWebSocket();
    const model = new OpenAIResponsesWSModel(openai, 'test/gpt');
    const agent = new Agent({
      name: 'Weather',
      instructions: 'Answer about the weather.',
      model,
      tools: [weatherTool(runs)],
    });
    const result = await new Runner().run(agent, 'Weather in Oslo?');
    await model.close?.();
    expect(result.finalOutput).toBe('It is sunny in Oslo.');
    expect(runs).toEqual(['Oslo']);
    expect(mock.requests.map((r) => r.path)).toEqual(['/openai/v1/responses', '/openai/v1/responses']);
    expect(JSON.stringify(mock.requests[1]?.body)).toContain('sunny in Oslo');
  });

  it('the Agents SDK’s transport switch (setOpenAIResponsesTransport) runs a model named by id over the socket', async () => {
    mock.enqueue(
      { reply: { tool_calls: [{ id: 'call_b1', name: 'weather', arguments: { city: 'Bergen' } }] } },
      { reply: { text: 'It is sunny in Bergen.' } },
    );
    const runs: string[] = [];
    withGlobalWebSocket();
    // The SDK's documented set-up: a default client at the gateway, then the transport switch.
    setDefaultOpenAIClient(openai);
    setOpenAIResponsesTransport('websocket');
    onTestFinished(() => {
      setOpenAIResponsesTransport('http');
      setDefaultOpenAIClient(undefined as never);
    });
    const turns = async () => (await sample(gw, 'gatehouse_websocket_turns_total{outcome="completed"}')) ?? 0;
    const before = await turns();
    const agent = new Agent({
      name: 'Weather',
      instructions: 'Answer about the weather.',
      model: 'test/gpt',
      tools: [weatherTool(runs)],
    });
    const result = await run(agent, 'Weather in Bergen?');
    expect(result.finalOutput).toBe('It is sunny in Bergen.');
    expect(runs).toEqual(['Bergen']);
    // Both turns over the WebSocket mode (none as an HTTP call), each passed through upstream.
    expect(await turns()).toBe(before + 2);
    expect(mock.requests.map((r) => r.path)).toEqual(['/openai/v1/responses', '/openai/v1/responses']);
    expect(mock.requests[0]?.body.model).toBe('gpt-x');
    expect(JSON.stringify(mock.requests[1]?.body)).toContain('sunny in Bergen');
  });
});

describe('Responses WebSocket mode: limits and shutdown', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ gw, mock, stop } = await gatewayWithUpstreams({ GATEHOUSE_INFERENCE_BODY_LIMIT: '4096' }));
  });
  afterAll(() => stop?.());

  const socket = async () => {
    const ws = new WebSocket(`${gw.url.replace('http', 'ws')}/api/v1/responses`, {
      headers: { authorization: `Bearer ${gw.apiKey}` },
    });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    return ws;
  };
  const closed = (ws: WebSocket) =>
    new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));

  it('counts turns by outcome with their duration, and the open connections', async () => {
    const ws = await socket();
    expect(await sample(gw, 'gatehouse_websocket_connections')).toBe(1);
    const next = () =>
      new Promise<Event>((resolve) => {
        const onMessage = (data: WebSocket.RawData) => {
          const e = JSON.parse(String(data));
          if (['response.completed', 'error'].includes(e.type)) {
            ws.off('message', onMessage);
            resolve(e);
          }
        };
        ws.on('message', onMessage);
      });
    let done = next();
    ws.send(JSON.stringify({ type: 'response.create', model: 'test/gpt', input: 'hi' }));
    expect((await done).type).toBe('response.completed');
    mock.enqueue({ status: 400, error: { message: 'upstream says no' } });
    done = next();
    ws.send(JSON.stringify({ type: 'response.create', model: 'test/gpt', input: 'hi' }));
    expect((await done).type).toBe('error');

    expect(await sample(gw, 'gatehouse_websocket_turns_total{outcome="completed"}')).toBe(1);
    expect(await sample(gw, 'gatehouse_websocket_turns_total{outcome="error"}')).toBe(1);
    expect(await sample(gw, 'gatehouse_websocket_turns_total{outcome="failed"}')).toBe(0);
    expect(await sample(gw, 'gatehouse_websocket_turn_duration_seconds_count{outcome="completed"}')).toBe(1);
    expect(await sample(gw, 'gatehouse_websocket_turn_duration_seconds_count{outcome="error"}')).toBe(1);
    const code = closed(ws);
    ws.close();
    await code;
    await vi.waitFor(async () => expect(await sample(gw, 'gatehouse_websocket_connections')).toBe(0));
    mock.reset();
  });

  it('a message over the body limit closes the socket (1009, as the HTTP body gets 413)', async () => {
    const ws = await socket();
    const code = closed(ws);
    ws.send(JSON.stringify({ type: 'response.create', model: 'test/gpt', input: 'x'.repeat(5000) }));
    expect(await code).toBe(1009);
    expect(mock.requests).toHaveLength(0);
  });

  it('shutdown closes an idle socket at once and a busy one after its response (1001)', async () => {
    mock.enqueue({ reply: { text: 'finishing before the end' }, eventDelayMs: 20 });
    const idle = await socket();
    const busy = await socket();
    const idleClosed = closed(idle);
    const busyClosed = closed(busy);
    const events: Event[] = [];
    const started = new Promise<void>((resolve) =>
      busy.on('message', (data) => {
        events.push(JSON.parse(String(data)));
        resolve();
      }),
    );
    busy.send(JSON.stringify({ type: 'response.create', model: 'test/gpt', input: 'long one' }));
    await started;
    const stopped = gw.close();
    expect(await idleClosed).toBe(1001);
    expect(await busyClosed).toBe(1001);
    await stopped;
    expect(events.at(-1)?.type).toBe('response.completed');
    expect(text(events)).toBe('finishing before the end');
  });
});

describe('Responses WebSocket mode: the connection age limit', () => {
  let gw: TestGateway;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ gw, stop } = await gatewayWithUpstreams({ GATEHOUSE_WEBSOCKET_MAX_AGE_MS: '500' }));
  });
  afterAll(() => stop?.());

  it('a connection past its age gets websocket_connection_limit_reached and is closed', async () => {
    const ws = new WebSocket(`${gw.url.replace('http', 'ws')}/api/v1/responses`, {
      headers: { authorization: `Bearer ${gw.apiKey}` },
    });
    const messages: Event[] = [];
    ws.on('message', (data) => messages.push(JSON.parse(String(data))));
    const code = await new Promise<number>((resolve) => ws.once('close', (c) => resolve(c)));
    expect(code).toBe(1000);
    expect(messages).toEqual([
      expect.objectContaining({
        type: 'error',
        error: expect.objectContaining({ code: 'websocket_connection_limit_reached' }),
      }),
    ]);
  });
});

describe('Responses WebSocket mode: an upgrade during shutdown', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ gw, mock, stop } = await gatewayWithUpstreams());
  });
  afterAll(() => stop?.());

  it('is answered 503 and its connection ends while a busy socket drains', async () => {
    mock.enqueue({ reply: { text: 'a long answer in many parts' }, eventDelayMs: 100 });
    const busy = new WebSocket(`${gw.url.replace('http', 'ws')}/api/v1/responses`, {
      headers: { authorization: `Bearer ${gw.apiKey}` },
    });
    await new Promise((resolve, reject) => busy.once('open', resolve).once('error', reject));
    const started = new Promise((resolve) => busy.once('message', resolve));
    busy.send(JSON.stringify({ type: 'response.create', model: 'test/gpt', input: 'long one' }));
    await started;
    // The shutdown waits for the busy socket's response; an upgrade arrives meanwhile. (The
    // WebSocket plugin has stopped taking upgrades: Node serves it as a plain request, which
    // Fastify answers 503 with `connection: close`. A listener of our own on 'upgrade' would
    // leave it open and hold the shutdown until its grace is over.)
    const stopped = gw.close();
    const { port } = new URL(gw.url);
    const conn = tcpConnect(Number(port), '127.0.0.1');
    let answer = '';
    conn.on('data', (d) => {
      answer += String(d);
    });
    const ended = new Promise<string>((resolve) => conn.once('close', () => resolve('ended')));
    conn.write(
      [
        'GET /api/v1/responses HTTP/1.1',
        `host: 127.0.0.1:${port}`,
        `authorization: Bearer ${gw.apiKey}`,
        'connection: Upgrade',
        'upgrade: websocket',
        'sec-websocket-version: 13',
        'sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==',
        '',
        '',
      ].join('\r\n'),
    );
    const outcome = await Promise.race([
      ended,
      new Promise((resolve) => setTimeout(() => resolve('still open'), 1000)),
    ]);
    conn.destroy();
    expect(answer).toMatch(/^HTTP\/1\.1 503 /);
    expect(outcome).toBe('ended');
    await stopped;
  });
});
