import { readFileSync, writeFileSync } from 'node:fs';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

/**
 * Pass-through lanes: a caller whose wire format is the provider's own has its body sent upstream
 * as it is (model id rewritten, Gatehouse's own fields removed), and the answer relayed as it came.
 */
describe('pass-through lanes', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let anthropic: Anthropic;
  let openai: OpenAI;
  let mgmt: ReturnType<typeof client>;

  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    // One model whose first endpoint speaks Anthropic's format and second OpenAI's: a failed lane
    // falls back to a translated call.
    const file = up.env.GATEHOUSE_CONFIG as string;
    const config = JSON.parse(readFileSync(file, 'utf8'));
    config.models.push({
      id: 'test/cross',
      endpoints: [
        { provider: 'anthropic', upstream_model: 'claude-cross', pricing: { prompt: 1, completion: 2 } },
        { provider: 'openai', upstream_model: 'gpt-cross', pricing: { prompt: 1, completion: 2 } },
      ],
    });
    config.models.find((m: { id: string }) => m.id === 'test/claude').endpoints[0].pricing = {
      prompt: 3,
      completion: 15,
      cached_prompt: 0.3,
      cache_write: 3.75,
      web_search: 0.01,
    };
    config.models.find((m: { id: string }) => m.id === 'test/gpt').endpoints[0].pricing = {
      prompt: 1,
      completion: 2,
      web_search: 0.025,
    };
    writeFileSync(file, JSON.stringify(config));
    gw = await startTestGateway('sqlite', { env: up.env });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
    openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    mgmt = client(gw.url, gw.managementKey);
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  const generation = async (id: string) => {
    await gw.services.accountant.flush();
    const res = await client(gw.url, gw.apiKey)('GET', `/generation?id=${encodeURIComponent(id)}`);
    expect(res.status, res.text).toBe(200);
    return res.body.data;
  };

  describe('/messages → an Anthropic provider', () => {
    /** A body with what Claude Code sends and Gatehouse knows nothing of. */
    const claudeLike = {
      model: 'test/claude',
      max_tokens: 256,
      system: [
        { type: 'text', text: 'You are a coding agent.' },
        { type: 'text', text: 'Project rules…', cache_control: { type: 'ephemeral' } },
      ],
      messages: [
        {
          role: 'user',
          content: [{ type: 'text', text: 'fix the bug', cache_control: { type: 'ephemeral', ttl: '1h' } }],
        },
      ],
      tools: [
        {
          name: 'Read',
          description: 'Reads a file',
          input_schema: { type: 'object', properties: {} },
          cache_control: { type: 'ephemeral' },
        },
      ],
      context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] },
      metadata: { user_id: 'user_abc' },
      thinking: { type: 'enabled', budget_tokens: 1024 },
      a_field_from_next_year: { anything: [1, 2, 3] },
      // Gatehouse's own fields: never sent upstream.
      provider: { allow_fallbacks: false },
      transforms: [],
      debug: { echo_upstream_body: false },
    };

    it('sends the body as it is (every field, breakpoints, betas), with the operator key and the upstream model', async () => {
      mock.enqueue({
        reply: { text: 'patched', usage: { prompt_tokens: 1200, completion_tokens: 7, cached_tokens: 1000 } },
      });
      const res = await fetch(`${gw.url}/api/v1/messages?beta=true`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': gw.apiKey,
          'anthropic-version': '2023-06-01',
          'anthropic-beta': 'context-management-2025-06-27,interleaved-thinking-2025-05-14',
          'x-stainless-lang': 'js',
        },
        body: JSON.stringify(claudeLike),
      });
      const text = await res.text();
      expect(res.status, text).toBe(200);
      expect(res.headers.get('x-gatehouse-route')).toBe('passthrough');

      const up = mock.requests[0]!;
      const { provider: _p, transforms: _t, debug: _d, ...expected } = claudeLike;
      expect(up.body).toEqual({ ...expected, model: 'claude-x' });
      expect(up.headers['anthropic-beta']).toBe(
        'context-management-2025-06-27,interleaved-thinking-2025-05-14',
      );
      expect(up.headers['anthropic-version']).toBe('2023-06-01');
      expect(up.headers['x-api-key']).toBe('sk-operator-anthropic-00');
      expect(JSON.stringify(up.headers)).not.toContain(gw.apiKey);
      expect(up.headers['x-stainless-lang']).toBeUndefined();

      // The answer is the provider's own, byte for byte (its id, model and usage object included).
      const answer = JSON.parse(text);
      expect(answer.model).toBe('claude-x');
      expect(answer.id).toMatch(/^msg_/);
      expect(answer.usage).toMatchObject({
        input_tokens: 200,
        cache_read_input_tokens: 1000,
        output_tokens: 7,
      });

      // Recorded as passed through, priced with the cached tokens at their own price, and found by
      // the id the caller saw as well as by the generation id.
      const gen = await generation(answer.id);
      expect(gen).toMatchObject({
        passthrough: true,
        upstream_id: answer.id,
        tokens_prompt: 1200,
        tokens_completion: 7,
        native_tokens_cached: 1000,
        usage_estimated: false,
        provider_name: 'anthropic',
      });
      const cost = (200 * 3 + 1000 * 0.3 + 7 * 15) / 1e6;
      expect(gen.total_cost).toBeCloseTo(cost, 12);
      expect((await generation(res.headers.get('x-gatehouse-generation-id')!)).id).toBe(gen.id);
    });

    it('relays the stream as the provider sent it, and bills what it reported', async () => {
      mock.enqueue({ reply: { text: 'one two three', usage: { prompt_tokens: 40, completion_tokens: 3 } } });
      const stream = anthropic.messages.stream({
        model: 'test/claude',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'count' }],
      });
      const events: string[] = [];
      let startInput = -1;
      stream.on('streamEvent', (e) => {
        events.push(e.type);
        if (e.type === 'message_start') startInput = e.message.usage.input_tokens;
      });
      const final = await stream.finalMessage();
      expect(final.content[0]).toMatchObject({ type: 'text', text: 'one two three' });
      expect(final.model).toBe('claude-x');
      expect(startInput).toBe(40);
      expect(events[0]).toBe('message_start');
      expect(events.at(-1)).toBe('message_stop');
      expect(mock.requests[0]!.body.stream).toBe(true);
      const gen = await generation(final.id);
      expect(gen).toMatchObject({
        streamed: true,
        passthrough: true,
        tokens_prompt: 40,
        tokens_completion: 3,
      });
    });

    it('answers refusals and upstream errors in Anthropic’s error format', async () => {
      const g = await mgmt('POST', '/guardrails', { name: 'no claude', ignored_models: ['test/claude'] });
      const key = await mgmt('POST', '/keys', { name: 'refused' });
      await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
        key_hashes: [key.body.data.hash],
      });
      const refused = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: key.body.key, maxRetries: 0 });
      const err = await refused.messages
        .create({ model: 'test/claude', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] })
        .catch((e) => e);
      expect(err).toBeInstanceOf(Anthropic.PermissionDeniedError);
      expect(err.error).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
      expect(mock.requests).toHaveLength(0);

      // The provider's own 400 goes back as it came.
      mock.enqueue({
        status: 400,
        body: {
          type: 'error',
          error: { type: 'invalid_request_error', message: 'thinking.budget_tokens: too small' },
        },
      });
      const bad = await anthropic.messages
        .create({ model: 'test/claude', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] })
        .catch((e) => e);
      expect(bad).toBeInstanceOf(Anthropic.BadRequestError);
      expect(bad.error).toEqual({
        type: 'error',
        error: { type: 'invalid_request_error', message: 'thinking.budget_tokens: too small' },
      });
    });

    it('ends a stream that fails after it started with Anthropic’s error event, billing what was served', async () => {
      mock.enqueue({
        reply: { text: 'a b c d e f g h', usage: { prompt_tokens: 10, completion_tokens: 8 } },
        dieAfterEvents: 5,
      });
      const res = await fetch(`${gw.url}/api/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': gw.apiKey },
        body: JSON.stringify({
          model: 'test/claude',
          max_tokens: 64,
          stream: true,
          messages: [{ role: 'user', content: 'x' }],
        }),
      });
      const text = await res.text();
      expect(res.status).toBe(200);
      expect(text).toMatch(/event: error\ndata: \{"type":"error","error":\{"type":"api_error"/);
      const gen = await generation(res.headers.get('x-gatehouse-generation-id')!);
      expect(gen).toMatchObject({ status: 'error', passthrough: true, tokens_prompt: 10 });
      expect(gen.total_cost).toBeGreaterThan(0);
    });

    // The events of one upstream read leave together (providers/lane.ts): nothing is lost or changed.
    const sse = (events: [string, unknown][]) =>
      events.map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join('');
    const messageStart = {
      type: 'message_start',
      message: {
        id: 'msg_oneread',
        type: 'message',
        role: 'assistant',
        model: 'claude-x',
        content: [],
        stop_reason: null,
        usage: { input_tokens: 21, output_tokens: 1 },
      },
    };
    const delta = (text: string) => ({
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text },
    });
    const streamed = (body: string) => ({
      headers: { 'content-type': 'text/event-stream' },
      body,
    });
    const messagesStream = () =>
      fetch(`${gw.url}/api/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': gw.apiKey },
        body: JSON.stringify({
          model: 'test/claude',
          max_tokens: 64,
          stream: true,
          messages: [{ role: 'user', content: 'x' }],
        }),
      });

    it('relays a stream that arrives in one read byte for byte, and bills its usage', async () => {
      const upstream = sse([
        ['message_start', messageStart],
        [
          'content_block_start',
          { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        ],
        ['ping', { type: 'ping' }],
        ['content_block_delta', delta('one ')],
        ['content_block_delta', delta('read')],
        ['content_block_stop', { type: 'content_block_stop', index: 0 }],
        [
          'message_delta',
          { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 6 } },
        ],
        ['message_stop', { type: 'message_stop' }],
      ]);
      mock.enqueue(streamed(upstream));
      const res = await messagesStream();
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(upstream);
      const gen = await generation(res.headers.get('x-gatehouse-generation-id')!);
      expect(gen).toMatchObject({
        status: 'success',
        streamed: true,
        passthrough: true,
        tokens_prompt: 21,
        tokens_completion: 6,
        finish_reason: 'end_turn',
        upstream_id: 'msg_oneread',
      });
      expect(gen.total_cost).toBeCloseTo((21 * 3 + 6 * 15) / 1e6, 12);
    });

    it('relays what came before an error event in the same read, then the error', async () => {
      const before = sse([
        ['message_start', messageStart],
        ['content_block_delta', delta('partial answer')],
      ]);
      mock.enqueue(
        streamed(
          `${before}${sse([['error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }]])}`,
        ),
      );
      const res = await messagesStream();
      const text = await res.text();
      expect(text.startsWith(before)).toBe(true);
      expect(text.slice(before.length)).toMatch(
        /^event: error\ndata: \{"type":"error","error":\{"type":"api_error","message":"Overloaded"\}\}\n\n$/,
      );
      const gen = await generation(res.headers.get('x-gatehouse-generation-id')!);
      expect(gen).toMatchObject({ status: 'error', passthrough: true, tokens_prompt: 21 });
      expect(gen.tokens_completion).toBeGreaterThan(0);
    });

    it('falls back from a failed lane to a provider of another format, translating the request', async () => {
      mock.enqueue(
        {
          match: { format: 'anthropic-messages' },
          status: 529,
          error: { type: 'overloaded_error', message: 'Overloaded' },
        },
        { match: { format: 'openai-chat' }, reply: { text: 'served by the other side' } },
      );
      const { data: msg, response } = await anthropic.messages
        .create({
          model: 'test/cross',
          max_tokens: 64,
          system: 'be brief',
          messages: [{ role: 'user', content: 'hi' }],
        })
        .withResponse();
      expect(msg.content[0]).toMatchObject({ type: 'text', text: 'served by the other side' });
      expect(mock.requests.map((r) => r.format)).toEqual(['anthropic-messages', 'openai-chat']);
      expect(mock.requests[1]!.body.model).toBe('gpt-cross');
      expect(response.headers.get('x-gatehouse-route')).toBe('translated');
      const gen = await generation(response.headers.get('x-gatehouse-generation-id')!);
      expect(gen).toMatchObject({ passthrough: false, attempts: 2, provider_name: 'openai' });
    });

    it('redacts inside the native body: system blocks, tool inputs and tool results', async () => {
      const g = await mgmt('POST', '/guardrails', {
        name: 'no emails',
        content_filter_builtins: [{ slug: 'email', action: 'redact', scan_scope: 'all_messages' }],
      });
      const key = await mgmt('POST', '/keys', { name: 'filtered' });
      await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
        key_hashes: [key.body.data.hash],
      });
      mock.enqueue({ reply: { text: 'ok' } });
      const res = await client(gw.url, key.body.key)('POST', '/messages', {
        model: 'test/claude',
        max_tokens: 64,
        system: [
          { type: 'text', text: 'Escalate to boss@example.com', cache_control: { type: 'ephemeral' } },
        ],
        messages: [
          { role: 'user', content: 'mail ada@example.com' },
          {
            role: 'assistant',
            content: [
              { type: 'tool_use', id: 't1', name: 'send', input: { to: ['bob@example.com'], body: 'hi' } },
            ],
          },
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: 't1', content: 'delivered to carol@example.com' }],
          },
        ],
      });
      expect(res.status, res.text).toBe(200);
      const sent = JSON.stringify(mock.requests[0]!.body);
      expect(sent).not.toMatch(/@example\.com/);
      expect(mock.requests[0]!.body.system[0]).toMatchObject({ cache_control: { type: 'ephemeral' } });
      expect(mock.requests[0]!.body.messages[1].content[0].input.body).toBe('hi');
      expect(sent.match(/\[REDACTED:EMAIL\]/g)).toHaveLength(4);
    });
  });

  it('bills the web searches a provider ran, per search, from its own usage report', async () => {
    mock.enqueue({
      body: {
        id: 'msg_search1',
        type: 'message',
        role: 'assistant',
        model: 'claude-x',
        content: [{ type: 'text', text: 'found it' }],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: 100, output_tokens: 10, server_tool_use: { web_search_requests: 2 } },
      },
    });
    const msg = await anthropic.messages.create({
      model: 'test/claude',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'search the web' }],
      tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }],
    });
    const gen = await generation(msg.id);
    expect(gen.web_search_requests).toBe(2);
    expect(gen.total_cost).toBeCloseTo((100 * 3 + 10 * 15) / 1e6 + 2 * 0.01, 12);

    // OpenAI's Responses API reports each search as an output item.
    mock.enqueue({
      body: {
        id: 'resp_search1',
        object: 'response',
        created_at: 1,
        status: 'completed',
        model: 'gpt-x',
        output: [
          {
            type: 'web_search_call',
            id: 'ws_1',
            status: 'completed',
            action: { type: 'search', query: 'x' },
          },
          {
            type: 'message',
            id: 'msg_1',
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text: 'found', annotations: [] }],
          },
        ],
        usage: {
          input_tokens: 50,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: 5,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: 55,
        },
      },
    });
    const res = await client(gw.url, gw.apiKey)('POST', '/responses', {
      model: 'test/gpt',
      input: 'search',
      tools: [{ type: 'web_search' }],
      store: false,
    });
    expect(res.status, res.text).toBe(200);
    const searched = await generation('resp_search1');
    expect(searched.web_search_requests).toBe(1);
    expect(searched.total_cost).toBeCloseTo((50 * 1 + 5 * 2) / 1e6 + 0.025, 12);
  });

  describe('/messages/count_tokens', () => {
    it('is counted by Anthropic as the client sent it, and estimated (said so) where no provider counts', async () => {
      const body = {
        model: 'test/claude',
        system: [
          { type: 'text' as const, text: 'You are terse.', cache_control: { type: 'ephemeral' as const } },
        ],
        messages: [{ role: 'user' as const, content: 'How many tokens is this?' }],
        thinking: { type: 'enabled' as const, budget_tokens: 2048 },
      };
      const counted = await anthropic.messages.countTokens(body);
      expect(counted.input_tokens).toBeGreaterThan(0);
      expect(mock.requests[0]!.path).toBe('/anthropic/v1/messages/count_tokens');
      expect(mock.requests[0]!.body).toEqual({ ...body, model: 'claude-x' });
      expect(mock.requests[0]!.headers['x-api-key']).toBe('sk-operator-anthropic-00');

      const estimated = await client(gw.url, gw.apiKey)('POST', '/messages/count_tokens', {
        ...body,
        model: 'test/gpt',
      });
      expect(estimated.status, estimated.text).toBe(200);
      expect(estimated.body).toEqual({ input_tokens: expect.any(Number), estimated: true });
      expect(estimated.body.input_tokens).toBeGreaterThan(0);
      expect(estimated.headers.get('x-gatehouse-route')).toBe('estimated');
      expect(mock.requests).toHaveLength(1);
      // Counting is free: no generation is recorded.
      await gw.services.accountant.flush();
      const rows = await gw.services.db
        .selectFrom('generations')
        .select('id')
        .where('upstream_model', '=', 'claude-x')
        .execute();
      const before = rows.length;
      await anthropic.messages.countTokens(body);
      await gw.services.accountant.flush();
      const after = await gw.services.db
        .selectFrom('generations')
        .select('id')
        .where('upstream_model', '=', 'claude-x')
        .execute();
      expect(after.length).toBe(before);
    });
  });

  describe('/chat/completions → an OpenAI provider', () => {
    it('sends every field OpenAI takes, asks a stream for its usage, and maps OpenRouter’s reasoning', async () => {
      mock.enqueue({ reply: { text: 'hi there' } });
      const res = await client(gw.url, gw.apiKey)('POST', '/chat/completions', {
        model: 'test/gpt',
        messages: [{ role: 'user', content: 'hi' }],
        prompt_cache_key: 'conv-42',
        service_tier: 'flex',
        verbosity: 'low',
        store: true,
        metadata: { team: 'search' },
        safety_identifier: 'user-hash',
        reasoning: { effort: 'low' },
        prediction: { type: 'content', content: 'hi' },
        models: ['test/claude'],
        usage: { include: true },
      });
      expect(res.status, res.text).toBe(200);
      expect(mock.requests[0]!.body).toEqual({
        model: 'gpt-x',
        messages: [{ role: 'user', content: 'hi' }],
        prompt_cache_key: 'conv-42',
        service_tier: 'flex',
        verbosity: 'low',
        store: true,
        metadata: { team: 'search' },
        safety_identifier: 'user-hash',
        reasoning_effort: 'low',
        prediction: { type: 'content', content: 'hi' },
      });
      // The provider's answer, with OpenRouter's additions: nothing of the provider's is lost.
      expect(res.body).toMatchObject({
        id: expect.stringMatching(/^chatcmpl-/),
        model: 'gpt-x',
        system_fingerprint: 'fp_mock0001',
        service_tier: 'default',
        provider: 'openai',
        usage: { prompt_tokens: expect.any(Number), cost: expect.any(Number), is_byok: false },
      });

      mock.enqueue({ reply: { text: 'streamed' } });
      const stream = await openai.chat.completions.create({
        model: 'test/gpt',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      });
      let text = '';
      let usage: { cost?: number } | undefined;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        if (chunk.usage) usage = chunk.usage as { cost?: number };
      }
      expect(text).toBe('streamed');
      expect(mock.requests[1]!.body.stream_options).toEqual({ include_usage: true });
      expect(usage?.cost).toBeGreaterThan(0);
    });
    it("leaves a tool's eager_input_streaming out (OpenAI has no such field), listing the ones that asked", async () => {
      mock.enqueue({ reply: { text: 'hi' } });
      const fn = (name: string) => ({ type: 'function', function: { name, parameters: { type: 'object' } } });
      const res = await client(gw.url, gw.apiKey)('POST', '/chat/completions', {
        model: 'test/gpt',
        messages: [{ role: 'user', content: 'hi' }],
        tools: [
          { ...fn('a'), eager_input_streaming: true },
          fn('b'),
          { ...fn('c'), eager_input_streaming: false },
        ],
      });
      expect(res.status, res.text).toBe(200);
      expect(mock.requests[0]!.body.tools).toEqual([fn('a'), fn('b'), fn('c')]);
      expect(res.headers.get('x-gatehouse-dropped-fields')).toBe('tools[0].eager_input_streaming');
    });
    it('relays chunks that arrive in one read with their null usage cut, the usage chunk with its cost', async () => {
      const chunk = (delta: object, finish: string | null = null) => ({
        id: 'chatcmpl-oneread',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'gpt-x',
        choices: [{ index: 0, delta, finish_reason: finish }],
        usage: null,
      });
      const data = (x: unknown) => `data: ${JSON.stringify(x)}\n\n`;
      const usage = { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 };
      mock.enqueue({
        headers: { 'content-type': 'text/event-stream' },
        body: [
          data(chunk({ role: 'assistant', content: '' })),
          data(chunk({ content: 'one ' })),
          data(chunk({ content: 'read' })),
          data(chunk({}, 'stop')),
          data({ ...chunk({}), choices: [], usage }),
          'data: [DONE]\n\n',
        ].join(''),
      });
      const res = await client(gw.url, gw.apiKey)('POST', '/chat/completions', {
        model: 'test/gpt',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      });
      expect(res.status, res.text).toBe(200);
      const { usage: _, ...withoutUsage } = chunk({ content: 'one ' });
      expect(res.text).toContain(data(withoutUsage));
      expect(res.text).not.toContain('"usage":null');
      const frames = res.text.split('\n\n').filter(Boolean);
      expect(frames).toHaveLength(6);
      expect(frames.at(-1)).toBe('data: [DONE]');
      const last = JSON.parse((frames.at(-2) as string).slice('data: '.length));
      expect(last.usage).toMatchObject({ ...usage, cost: (12 * 1 + 4 * 2) / 1e6 });
      const gen = await generation(res.headers.get('x-gatehouse-generation-id') as string);
      expect(gen).toMatchObject({
        status: 'success',
        passthrough: true,
        tokens_prompt: 12,
        tokens_completion: 4,
        finish_reason: 'stop',
        upstream_id: 'chatcmpl-oneread',
      });
    });
  });

  describe('/responses → OpenAI’s Responses API', () => {
    it('sends built-in and custom tools, include, and store upstream as they are', async () => {
      mock.enqueue({ reply: { text: 'done' } });
      const body = {
        model: 'test/gpt',
        input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'list files' }] }],
        tools: [
          { type: 'function', name: 'exec', parameters: { type: 'object', properties: {} } },
          {
            type: 'custom',
            name: 'apply_patch',
            format: { type: 'grammar', syntax: 'lark', definition: 'start: "x"' },
          },
          { type: 'namespace', name: 'mcp', tools: [{ type: 'function', name: 'search' }] },
          { type: 'web_search' },
        ],
        include: ['reasoning.encrypted_content'],
        reasoning: { effort: 'high', summary: 'auto' },
        store: false,
        prompt_cache_key: 'thread-1',
        text: { verbosity: 'low' },
      };
      const res = await client(gw.url, gw.apiKey)('POST', '/responses', body);
      expect(res.status, res.text).toBe(200);
      expect(mock.requests[0]!.path).toBe('/openai/v1/responses');
      expect(mock.requests[0]!.body).toEqual({ ...body, model: 'gpt-x' });
      expect(res.body.object).toBe('response');
      expect(res.headers.get('x-gatehouse-route')).toBe('passthrough');
      const gen = await generation(res.body.id);
      expect(gen).toMatchObject({ passthrough: true, origin: 'responses' });
    });
  });

  describe('/embeddings → an OpenAI provider', () => {
    it('passes fields Gatehouse does not know', async () => {
      mock.enqueue({ embeddings: [[0.1, 0.2]] });
      const res = await client(gw.url, gw.apiKey)('POST', '/embeddings', {
        model: 'test/embed',
        input: 'x',
        dimensions: 2,
        a_new_option: true,
      });
      expect(res.status, res.text).toBe(200);
      expect(mock.requests[0]!.body).toEqual({
        model: 'emb-x',
        input: 'x',
        dimensions: 2,
        a_new_option: true,
      });
    });

    it("answers with the provider's body plus OpenRouter's provider and cost, as a translated call does", async () => {
      mock.enqueue({ embeddings: [[0.1, 0.2]] });
      const res = await client(gw.url, gw.apiKey)('POST', '/embeddings', {
        model: 'test/embed',
        input: 'x y',
      });
      expect(res.status, res.text).toBe(200);
      expect(res.headers.get('x-gatehouse-route')).toBe('passthrough');
      expect(res.body).toMatchObject({
        object: 'list',
        model: 'emb-x',
        data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2] }],
        provider: 'openai',
        usage: { prompt_tokens: expect.any(Number), is_byok: false },
      });
      expect(res.body.usage.cost).toBeCloseTo(res.body.usage.prompt_tokens / 1e6, 12);
    });
  });

  describe('a large body', () => {
    // ~100 KB of history as a client might write it: pretty-printed, with escapes and number
    // spellings that a parse and a re-serialization would change.
    const turns = Array.from({ length: 300 }, (_, i) => ({
      role: i % 2 ? 'assistant' : 'user',
      content: `café n° ${i}: ${'lorem ipsum '.repeat(25)}`,
    }));
    const history = JSON.stringify(turns, null, 1).replaceAll('é', '\\u00e9').replaceAll('°', '\\u00b0');
    const post = (path: string, head: string, headers: Record<string, string>) =>
      fetch(`${gw.url}/api/v1${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: `{${head},"provider":{"allow_fallbacks":true},"messages":${history},"top_p":1.0}`,
      });

    it('reaches the provider with its unchanged members as the caller wrote them, on both lanes', async () => {
      const messages = await post('/messages', '"model":"test/claude","max_tokens":64', {
        'x-api-key': gw.apiKey,
        'anthropic-version': '2023-06-01',
      });
      expect(messages.status, await messages.text()).toBe(200);
      const chat = await post('/chat/completions', '"model":"test/gpt","stream":true', {
        authorization: `Bearer ${gw.apiKey}`,
      });
      expect(chat.status).toBe(200);
      expect(await chat.text()).toContain('data: [DONE]');

      const [toClaude, toGpt] = mock.requests;
      for (const up of [toClaude!, toGpt!]) {
        // The history byte for byte; Gatehouse's own field gone; the rest as JSON says.
        expect(up.raw).toContain(`"messages":${history}`);
        expect(up.body.messages).toEqual(turns);
        expect(up.body.provider).toBeUndefined();
        expect(up.body.top_p).toBe(1);
      }
      expect(toClaude!.body).toMatchObject({ model: 'claude-x', max_tokens: 64 });
      expect(toGpt!.body).toMatchObject({
        model: 'gpt-x',
        stream: true,
        stream_options: { include_usage: true },
      });
    });

    it('is translated in full where the formats differ', async () => {
      const res = await post('/chat/completions', '"model":"test/claude"', {
        authorization: `Bearer ${gw.apiKey}`,
      });
      expect(res.status).toBe(200);
      const up = mock.requests[0]!;
      expect(up.format).toBe('anthropic-messages');
      const sent = JSON.stringify(up.body.messages);
      for (const t of [turns[0]!, turns[299]!]) expect(sent).toContain(t.content);
    });
  });

  it('keeps bad input a 400 in the caller’s format: no model, not an object', async () => {
    const noModel = await client(gw.url, gw.apiKey)('POST', '/messages', { messages: [] });
    expect(noModel.status).toBe(400);
    expect(noModel.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    const array = await client(gw.url, gw.apiKey)('POST', '/chat/completions', [1, 2]);
    expect(array.status).toBe(400);
    expect(array.body.error.code).toBe(400);
    expect(mock.requests).toHaveLength(0);
  });
});
