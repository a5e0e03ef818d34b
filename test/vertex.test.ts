import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';
import { type MockVertex, startMockVertex } from './support/mock-vertex.js';
import { expectThreadsHeld } from './support/threads.js';

const GEMINI = 'gemini-2.5-flash';
const CLAUDE = 'claude-sonnet-4@20250514';
const price = { prompt: 1, completion: 2 };
const usage = { prompt_tokens: 1000, completion_tokens: 500 };

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-vertex-'));
const writeJson = (name: string, json: unknown): string => {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(json));
  return path;
};

/**
 * Google Vertex AI (`kind: vertex`) through the gateway: the official OpenAI and Anthropic clients
 * on the caller's side; on the other, a mock Vertex with its own token endpoint, which grants a
 * token only for a JWT signed by the test's service account key and serves Vertex's paths only
 * with a token it issued. The mock records what reached Vertex: the project/region/publisher URL,
 * the Bearer token — never the gateway key nor the private key.
 */
describe('Google Vertex AI provider', () => {
  let gw: TestGateway;
  let mock: MockVertex;
  let openai: OpenAI;
  let anthropic: Anthropic;
  /** The gateway's log lines (at info), checked for secrets at the end. */
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });

  beforeAll(async () => {
    mock = await startMockVertex({ project: 'acme-ml', region: 'europe-west4' });
    const entry = {
      kind: 'vertex',
      project: 'acme-ml',
      region: 'europe-west4',
      endpoint: mock.url,
    };
    const config = {
      providers: [
        // The key file by path; its token_uri points at the mock's token endpoint.
        { slug: 'my-vertex', ...entry, credentials: writeJson('sa.json', mock.serviceAccount) },
        // The same account inline, in an entry of its own (its own token cache).
        { slug: 'vertex-inline', ...entry, credentials: mock.serviceAccount },
      ],
      models: [
        { id: 'test/gemini', endpoints: [{ provider: 'my-vertex', upstream_model: GEMINI, pricing: price }] },
        {
          id: 'test/gemini3',
          endpoints: [{ provider: 'my-vertex', upstream_model: 'gemini-3-pro-preview', pricing: price }],
        },
        { id: 'test/claude', endpoints: [{ provider: 'my-vertex', upstream_model: CLAUDE, pricing: price }] },
        {
          id: 'test/claude-max',
          endpoints: [
            { provider: 'my-vertex', upstream_model: CLAUDE, pricing: price, max_completion_tokens: 64000 },
          ],
        },
        {
          id: 'test/embed',
          kind: 'embeddings',
          endpoints: [{ provider: 'my-vertex', upstream_model: 'text-embedding-005', pricing: price }],
        },
        {
          id: 'test/gemini-inline',
          endpoints: [{ provider: 'vertex-inline', upstream_model: GEMINI, pricing: price }],
        },
      ],
    };
    gw = await startTestGateway('sqlite', {
      env: { GATEHOUSE_CONFIG: writeJson('gatehouse.json', config) },
      logStream,
    });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => {
    mock.reset();
    mock.expiresIn = 3600;
  });

  /** The one request that reached Vertex, with the credential checks every call must pass. */
  const vertexRequest = (publisher: 'google' | 'anthropic', model: string, method: string) => {
    expect(mock.requests).toHaveLength(1);
    const req = mock.requests[0]!;
    expect(req.path).toBe(
      `/v1/projects/acme-ml/locations/europe-west4/publishers/${publisher}/models/${model}:${method}`,
    );
    expect(mock.issued).toContain(String(req.headers.authorization).replace(/^Bearer /, ''));
    const headers = JSON.stringify(req.headers);
    expect(headers).not.toContain(gw.apiKey);
    expect(req.headers['x-api-key']).toBeUndefined();
    expect(req.headers['x-goog-api-key']).toBeUndefined();
    return req;
  };

  const generation = async (id: string) => {
    await gw.services.accountant.flush();
    const res = await client(gw.url, gw.apiKey)('GET', `/generation?id=${encodeURIComponent(id)}`);
    expect(res.status, res.text).toBe(200);
    return res.body.data;
  };

  it('fetches one token for many calls, concurrent ones included', async () => {
    const before = mock.tokenRequests;
    const ask = () =>
      openai.chat.completions.create({
        model: 'test/gemini-inline',
        messages: [{ role: 'user', content: 'hi' }],
      });
    await Promise.all([ask(), ask(), ask()]);
    await ask();
    expect(mock.tokenRequests - before).toBe(1);
    expect(mock.requests).toHaveLength(4);
    const tokens = new Set(mock.requests.map((r) => r.headers.authorization));
    expect(tokens.size).toBe(1);
  });

  it('fetches a new token once the cached one is about to expire', async () => {
    // Tokens of a minute are inside the library's five-minute early renewal: each call renews.
    mock.expiresIn = 60;
    const before = mock.tokenRequests;
    const issued = mock.issued.length;
    for (let i = 0; i < 2; i++)
      await openai.chat.completions.create({
        model: 'test/gemini',
        messages: [{ role: 'user', content: 'hi' }],
      });
    expect(mock.tokenRequests - before).toBeGreaterThanOrEqual(2);
    const fresh = mock.issued.slice(issued);
    expect(mock.requests.map((r) => r.headers.authorization)).toEqual([
      `Bearer ${fresh[fresh.length - 2]}`,
      `Bearer ${fresh[fresh.length - 1]}`,
    ]);
  });

  it('/chat/completions on Gemini: translated to generateContent, usage and cost recorded', async () => {
    mock.enqueue({ reply: { text: 'hello from gemini', usage } });
    const { data, response } = await openai.chat.completions
      .create({
        model: 'test/gemini',
        messages: [
          { role: 'system', content: 'be brief' },
          { role: 'user', content: 'hi' },
        ],
      })
      .withResponse();
    expect(response.headers.get('x-gatehouse-route')).toBe('translated');
    expect(data.choices[0]!.message.content).toBe('hello from gemini');
    const req = vertexRequest('google', GEMINI, 'generateContent');
    expect(req.body.systemInstruction).toEqual({ parts: [{ text: 'be brief' }] });
    expect(req.body.contents).toEqual([{ role: 'user', parts: [{ text: 'hi' }] }]);
    const gen = await generation(data.id);
    expect(gen).toMatchObject({ tokens_prompt: 1000, tokens_completion: 500, provider_name: 'my-vertex' });
    expect(gen.total_cost).toBeCloseTo(0.002, 12);
  });

  it('/chat/completions streams from Gemini through streamGenerateContent?alt=sse', async () => {
    mock.enqueue({ reply: { text: 'one two three', usage } });
    const stream = await openai.chat.completions.create({
      model: 'test/gemini',
      messages: [{ role: 'user', content: 'count' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let final: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) final = chunk.usage;
    }
    expect(text).toBe('one two three');
    expect(final).toMatchObject({ prompt_tokens: 1000, completion_tokens: 500 });
    const req = vertexRequest('google', GEMINI, 'streamGenerateContent');
    expect(req.query).toEqual({ alt: 'sse' });
  });

  it('/responses on Claude: translated to rawPredict, the model in the URL and the version in the body', async () => {
    mock.enqueue({ reply: { text: 'a response from claude', usage } });
    const { data: res, response } = await openai.responses
      .create({ model: 'test/claude', input: 'hi', max_output_tokens: 64 })
      .withResponse();
    expect(res.output_text).toBe('a response from claude');
    const req = vertexRequest('anthropic', CLAUDE, 'rawPredict');
    expect(req.body.anthropic_version).toBe('vertex-2023-10-16');
    expect(req.body.model).toBeUndefined();
    expect(req.body.max_tokens).toBe(64);
    expect(req.headers['anthropic-version']).toBeUndefined();
    const gen = await generation(response.headers.get('x-gatehouse-generation-id')!);
    expect(gen).toMatchObject({ tokens_prompt: 1000, tokens_completion: 500 });
  });

  it("a translated call to Claude naming no limit sends the catalog's maximum output (4096 unknown)", async () => {
    mock.enqueue({ reply: { text: 'long' } });
    await openai.chat.completions.create({
      model: 'test/claude-max',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(vertexRequest('anthropic', CLAUDE, 'rawPredict').body.max_tokens).toBe(64000);
    mock.reset();
    mock.enqueue({ reply: { text: 'short' } });
    await openai.responses.create({ model: 'test/claude', input: 'hi' });
    expect(vertexRequest('anthropic', CLAUDE, 'rawPredict').body.max_tokens).toBe(4096);
  });

  it('/chat/completions on Claude streams through streamRawPredict', async () => {
    mock.enqueue({ reply: { text: 'streamed by claude' } });
    const stream = await openai.chat.completions.create({
      model: 'test/claude',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('streamed by claude');
    const req = vertexRequest('anthropic', CLAUDE, 'streamRawPredict');
    expect(req.body.stream).toBe(true);
  });

  it('a translated call to Claude carries the caller’s anthropic-beta as the header, streamed or not', async () => {
    const betas = 'interleaved-thinking-2025-05-14,context-1m-2025-08-07';
    mock.enqueue({ reply: { text: 'whole' } }, { reply: { text: 'streamed' } });
    const { data, response } = await openai.chat.completions
      .create(
        { model: 'test/claude', messages: [{ role: 'user', content: 'hi' }] },
        { headers: { 'anthropic-beta': betas } },
      )
      .withResponse();
    expect(data.choices[0]!.message.content).toBe('whole');
    expect(response.headers.get('x-gatehouse-route')).toBe('translated');
    expect(response.headers.get('x-gatehouse-dropped-fields')).toBeNull();
    const whole = vertexRequest('anthropic', CLAUDE, 'rawPredict');
    expect(whole.headers['anthropic-beta']).toBe(betas);
    expect(JSON.stringify(whole.body)).not.toContain('beta');
    mock.requests.length = 0;
    const stream = await openai.chat.completions.create(
      { model: 'test/claude', messages: [{ role: 'user', content: 'hi' }], stream: true },
      { headers: { 'anthropic-beta': betas } },
    );
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('streamed');
    expect(vertexRequest('anthropic', CLAUDE, 'streamRawPredict').headers['anthropic-beta']).toBe(betas);
  });

  it('a call to Gemini drops the caller’s anthropic-beta and lists it', async () => {
    mock.enqueue({ reply: { text: 'gemini' } });
    const { response } = await openai.chat.completions
      .create(
        { model: 'test/gemini', messages: [{ role: 'user', content: 'hi' }] },
        { headers: { 'anthropic-beta': 'context-1m-2025-08-07' } },
      )
      .withResponse();
    expect(response.headers.get('x-gatehouse-dropped-fields')).toContain('anthropic-beta');
    const req = vertexRequest('google', GEMINI, 'generateContent');
    expect(req.headers['anthropic-beta']).toBeUndefined();
    expect(JSON.stringify(req.body)).not.toContain('context-1m');
  });

  it('Gemini 3: a search offered beside function tools is left out and listed (no server-side tool invocations on Vertex)', async () => {
    const res = await client(gw.url, gw.apiKey)('POST', '/responses', {
      model: 'test/gemini3',
      input: 'Release news and the weather?',
      tools: [
        { type: 'function', name: 'get_weather', parameters: { type: 'object' } },
        { type: 'web_search' },
      ],
    });
    expect(res.status, res.text).toBe(200);
    const req = vertexRequest('google', 'gemini-3-pro-preview', 'generateContent');
    expect(req.body.tools).toEqual([
      { functionDeclarations: [{ name: 'get_weather', parameters: { type: 'OBJECT' } }] },
    ]);
    expect(req.body).not.toHaveProperty('toolConfig');
    expect(res.headers.get('x-gatehouse-dropped-fields')?.split(',')).toContain('web_search');
  });

  it('Gemini 3: a search asked for beside function tools is a 400 naming it, and nothing reaches Vertex', async () => {
    const res = await client(gw.url, gw.apiKey)('POST', '/chat/completions', {
      model: 'test/gemini3',
      messages: [{ role: 'user', content: 'Release news and the weather?' }],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
      plugins: [{ id: 'web' }],
    });
    expect(res.status, res.text).toBe(400);
    expect(res.body.error.message).toContain('web_search cannot be sent to this provider');
    expect(mock.requests).toHaveLength(0);
  });

  it('a message thread is held by Gatehouse: each turn the provider gets the whole conversation', () =>
    expectThreadsHeld(anthropic, 'test/claude', {
      requests: () => mock.requests,
      enqueueText: (text) => mock.enqueue({ reply: { text } }),
    }));

  it('/messages on Claude is a pass-through lane: the body as sent, anthropic-beta forwarded', async () => {
    mock.enqueue({ reply: { text: 'lane answer', usage } });
    const { data, response } = await anthropic.messages
      .create(
        {
          model: 'test/claude',
          max_tokens: 50,
          messages: [{ role: 'user', content: 'hi' }],
          metadata: { user_id: 'u-1' },
          // A field Gatehouse does not know travels as sent.
          // @ts-expect-error not in the client's types
          future_option: { on: true },
        },
        { headers: { 'anthropic-beta': 'context-1m-2025-08-07' } },
      )
      .withResponse();
    expect(response.headers.get('x-gatehouse-route')).toBe('passthrough');
    expect(data.content[0]).toMatchObject({ type: 'text', text: 'lane answer' });
    const req = vertexRequest('anthropic', CLAUDE, 'rawPredict');
    expect(req.body).toEqual({
      anthropic_version: 'vertex-2023-10-16',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'hi' }],
      metadata: { user_id: 'u-1' },
      future_option: { on: true },
    });
    expect(req.headers['anthropic-beta']).toBe('context-1m-2025-08-07');
    // The SDK's version header travels too, as Vertex's own clients send it.
    expect(req.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    const gen = await generation(response.headers.get('x-gatehouse-generation-id')!);
    expect(gen).toMatchObject({ tokens_prompt: 1000, tokens_completion: 500, provider_name: 'my-vertex' });
    expect(gen.total_cost).toBeCloseTo(0.002, 12);
  });

  it('/messages on Claude: betas Vertex lacks and their body fields are left out and listed, not refused', async () => {
    mock.enqueue({ reply: { text: 'lane answer', usage } });
    const betas = [
      'claude-code-20250219',
      'context-management-2025-06-27',
      'per-turn-control-2026-07-01',
      'advanced-tool-use-2025-11-20',
      'effort-2025-11-24',
    ];
    const { data, response } = await anthropic.beta.messages
      .create({
        model: 'test/claude',
        max_tokens: 50,
        messages: [{ role: 'user', content: 'hi' }],
        context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
        betas,
      })
      .withResponse();
    expect(data.content[0]).toMatchObject({ type: 'text', text: 'lane answer' });
    const req = vertexRequest('anthropic', CLAUDE, 'rawPredict');
    // Tool search under Vertex's name; the rest Vertex has no flag for stays behind.
    expect(String(req.headers['anthropic-beta']).split(',')).toEqual([
      'claude-code-20250219',
      'tool-search-tool-2025-10-19',
      'effort-2025-11-24',
    ]);
    expect(req.body).not.toHaveProperty('context_management');
    expect(String(response.headers.get('x-gatehouse-dropped-fields')).split(',').sort()).toEqual([
      'anthropic-beta:context-management-2025-06-27',
      'anthropic-beta:per-turn-control-2026-07-01',
      'context_management',
    ]);
  });

  it('a Message Batch created with betas: each request gets the betas Vertex has, as /messages would', async () => {
    mock.enqueue({ reply: { text: 'batched', usage } });
    const created = await anthropic.beta.messages.batches.create({
      requests: [
        {
          custom_id: 'v-0',
          params: { model: 'test/claude', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] },
        },
      ],
      betas: ['claude-code-20250219', 'per-turn-control-2026-07-01', 'effort-2025-11-24'],
    });
    const deadline = Date.now() + 15_000;
    let batch = created;
    while (batch.processing_status !== 'ended' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 25));
      batch = await anthropic.beta.messages.batches.retrieve(created.id);
    }
    expect(batch.request_counts).toMatchObject({ succeeded: 1, errored: 0 });
    const req = vertexRequest('anthropic', CLAUDE, 'rawPredict');
    // The beta Vertex has no flag for stays behind, as on the synchronous call.
    expect(String(req.headers['anthropic-beta']).split(',')).toEqual([
      'claude-code-20250219',
      'effort-2025-11-24',
    ]);
    const results = [];
    for await (const r of await anthropic.beta.messages.batches.results(created.id)) results.push(r);
    expect(results[0]?.result).toMatchObject({
      type: 'succeeded',
      message: { content: [{ text: 'batched' }] },
    });
  });

  it('/messages streaming on Claude relays the SSE from streamRawPredict and taps its usage', async () => {
    mock.enqueue({ reply: { text: 'streamed lane', usage } });
    const stream = anthropic.messages.stream({
      model: 'test/claude',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const message = await stream.finalMessage();
    expect(message.content[0]).toMatchObject({ type: 'text', text: 'streamed lane' });
    const req = vertexRequest('anthropic', CLAUDE, 'streamRawPredict');
    expect(req.body.stream).toBe(true);
    expect(req.body.model).toBeUndefined();
    const gen = await generation(message.id);
    expect(gen).toMatchObject({ tokens_prompt: 1000, tokens_completion: 500 });
  });

  it('/messages/count_tokens on Claude asks Vertex: count-tokens:rawPredict, the model in the body', async () => {
    mock.enqueue({ reply: { usage: { prompt_tokens: 42 } } });
    const { data, response } = await anthropic.messages
      .countTokens({ model: 'test/claude', messages: [{ role: 'user', content: 'how many?' }] })
      .withResponse();
    expect(response.headers.get('x-gatehouse-route')).toBe('passthrough');
    expect(data.input_tokens).toBe(42);
    const req = vertexRequest('anthropic', 'count-tokens', 'rawPredict');
    expect(req.body).toEqual({
      anthropic_version: 'vertex-2023-10-16',
      model: CLAUDE,
      messages: [{ role: 'user', content: 'how many?' }],
    });
  });

  it('/messages on Gemini is translated', async () => {
    mock.enqueue({ reply: { text: 'gemini via messages' } });
    const { data, response } = await anthropic.messages
      .create({ model: 'test/gemini', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(response.headers.get('x-gatehouse-route')).toBe('translated');
    expect(data.content[0]).toMatchObject({ type: 'text', text: 'gemini via messages' });
    const req = vertexRequest('google', GEMINI, 'generateContent');
    expect(req.body.generationConfig.maxOutputTokens).toBe(50);
  });

  it('/embeddings go to :predict, with the token counts Vertex reports', async () => {
    const res = await openai.embeddings.create({
      model: 'test/embed',
      input: ['one two', 'three'],
      dimensions: 8,
    });
    expect(res.data.map((d) => d.embedding.length)).toEqual([8, 8]);
    expect(res.usage.prompt_tokens).toBe(3);
    const req = vertexRequest('google', 'text-embedding-005', 'predict');
    expect(req.body).toEqual({
      instances: [{ content: 'one two' }, { content: 'three' }],
      parameters: { outputDimensionality: 8 },
    });
  });

  it("Vertex's errors reach each caller in its own format", async () => {
    const notFound = {
      status: 404,
      body: {
        error: { code: 404, message: `Publisher Model ${GEMINI} was not found.`, status: 'NOT_FOUND' },
      },
    };
    mock.enqueue(notFound);
    const err = await openai.chat.completions
      .create({ model: 'test/gemini', messages: [{ role: 'user', content: 'x' }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(404);
    expect(err.message).toContain(`NOT_FOUND: Publisher Model ${GEMINI} was not found.`);

    mock.reset();
    mock.enqueue({
      status: 400,
      body: {
        error: { code: 400, message: 'Request contains an invalid argument.', status: 'INVALID_ARGUMENT' },
      },
    });
    const bad = await anthropic.messages
      .create({ model: 'test/claude', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] })
      .catch((e) => e);
    expect(bad).toBeInstanceOf(Anthropic.BadRequestError);
    expect(bad.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(JSON.stringify(bad.error)).toContain('invalid argument');
  });

  it('a stream request answered by a Vertex error is an error in the caller format, not a 500', async () => {
    mock.enqueue({
      status: 429,
      body: {
        error: {
          code: 429,
          message: 'Quota exceeded for online_prediction_requests.',
          status: 'RESOURCE_EXHAUSTED',
        },
      },
      times: 5,
    });
    const err = await (async () => {
      const stream = await openai.chat.completions.create({
        model: 'test/gemini',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
      });
      for await (const _ of stream);
    })().catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(429);
    expect(err.message).toContain('RESOURCE_EXHAUSTED');
  });

  it("Vertex's malformed answer is an upstream error (502), never a 500", async () => {
    mock.enqueue({ body: '<html>proxy error</html>', times: 5 });
    const err = await openai.chat.completions
      .create({ model: 'test/gemini', messages: [{ role: 'user', content: 'x' }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(502);
  });

  it('no token nor the private key ever reached a log line', () => {
    const text = logs.join('');
    expect(text).toContain('/chat/completions'); // the calls were logged
    expect(mock.issued.length).toBeGreaterThan(1);
    for (const token of mock.issued) expect(text).not.toContain(token);
    const keyBody = mock.serviceAccount.private_key.split('\n')[5]!;
    expect(keyBody.length).toBeGreaterThan(40);
    expect(text).not.toContain(keyBody);
  });
});

describe('Google Vertex AI credentials', () => {
  let mock: MockVertex;
  const gateways: TestGateway[] = [];

  beforeAll(async () => {
    mock = await startMockVertex();
  });
  afterAll(async () => {
    for (const gw of gateways) await gw.stop();
    await mock?.close();
  });

  const start = async (entry: Record<string, unknown>, env: Record<string, string> = {}) => {
    const config = {
      providers: [
        {
          slug: 'gv',
          kind: 'vertex',
          project: mock.project,
          region: mock.region,
          endpoint: mock.url,
          ...entry,
        },
      ],
      models: [{ id: 'test/g', endpoints: [{ provider: 'gv', upstream_model: GEMINI, pricing: price }] }],
    };
    const gw = await startTestGateway('sqlite', {
      env: { GATEHOUSE_CONFIG: writeJson(`cfg-${gateways.length}-${Date.now()}.json`, config), ...env },
    });
    gateways.push(gw);
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 10,
    });
    return new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
  };

  it('application default credentials: GOOGLE_APPLICATION_CREDENTIALS, at the token_url configured', async () => {
    const saved = process.env.GOOGLE_APPLICATION_CREDENTIALS;
    process.env.GOOGLE_APPLICATION_CREDENTIALS = writeJson('adc.json', mock.serviceAccount);
    try {
      const openai = await start({ token_url: mock.tokenUrl });
      mock.reset();
      const res = await openai.chat.completions.create({
        model: 'test/g',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(res.choices[0]!.message.content).toContain('Hello from');
      expect(mock.issued).toContain(String(mock.requests[0]!.headers.authorization).replace(/^Bearer /, ''));
    } finally {
      if (saved === undefined) delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
      else process.env.GOOGLE_APPLICATION_CREDENTIALS = saved;
    }
  });

  it('a key the token endpoint refuses: an error naming Google OAuth, nothing sent to Vertex, no secret shown', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    const openai = await start({ credentials: { ...mock.serviceAccount, private_key: pem } });
    mock.reset();
    const err = await openai.chat.completions
      .create({ model: 'test/g', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBeGreaterThanOrEqual(400);
    expect(err.status).not.toBe(500);
    expect(err.message).toContain('Google OAuth');
    expect(err.message).toContain('Invalid JWT Signature');
    expect(JSON.stringify(err.error ?? {})).not.toContain('PRIVATE KEY');
    expect(mock.requests).toHaveLength(0);
  });

  const refused = (entry: Record<string, unknown>) => {
    const config = {
      providers: [{ slug: 'gv', kind: 'vertex', project: 'p-1', region: 'us-central1', ...entry }],
      models: [{ id: 'test/g', endpoints: [{ provider: 'gv', upstream_model: GEMINI, pricing: price }] }],
    };
    return startTestGateway('sqlite', {
      env: { GATEHOUSE_CONFIG: writeJson(`bad-${Date.now()}-${Math.random()}.json`, config) },
    }).then(
      (gw) => {
        gateways.push(gw);
        throw new Error('the gateway started');
      },
      (err: Error) => err.message,
    );
  };

  it.each([
    [{ project: undefined }, /providers\[0\]\.project \(provider gv\): required/],
    [{ region: undefined }, /providers\[0\]\.region \(provider gv\): required/],
    [{ region: 'Moon Base' }, /providers\[0\]\.region .*not a Vertex AI region/],
    [{ endpoint: 'aiplatform' }, /providers\[0\]\.endpoint .*not an http\(s\) URL/],
    [{ api_key: 'AIza-123' }, /providers\[0\]\.api_key .*Google credentials/],
    [{ credentials: '/nowhere/sa.json' }, /providers\[0\]\.credentials .*cannot read .*ENOENT/],
    [{ credentials: '{"type": "service_account",' }, /providers\[0\]\.credentials .*not valid JSON/],
    [
      { credentials: { type: 'authorized_user' } },
      /providers\[0\]\.credentials\.type .*only service_account/,
    ],
    [{ credentials: { client_email: 'a@b.c' } }, /providers\[0\]\.credentials\.private_key .*required/],
    [{ publishers: { 'x-1': 'meta' } }, /providers\[0\]\.publishers\.x-1 .*"google" or "anthropic"/],
  ])('refuses to start on a bad entry: %j', async (entry, message) => {
    expect(await refused(entry)).toMatch(message);
  });

  it('a malformed private key is refused at start without quoting it', async () => {
    const secret = '-----BEGIN PRIVATE KEY-----\nTOPSECRETNOTAKEY\n-----END PRIVATE KEY-----\n';
    const message = await refused({ credentials: { ...mock.serviceAccount, private_key: secret } });
    expect(message).toMatch(/providers\[0\]\.credentials\.private_key .*not a PEM private key/);
    expect(message).not.toContain('TOPSECRET');
  });
});
