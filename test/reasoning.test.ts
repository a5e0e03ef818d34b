/**
 * Reasoning survives translation both ways: the gateway returns the provider's reasoning state as
 * `reasoning_details` (signatures included), and a caller that sends the assistant message back
 * makes the upstream receive its own thinking blocks / thought signatures again.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ReasoningDetail } from '../src/formats/chat.js';
import { collapseReasoningDetails } from '../src/formats/reasoning-details.js';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';
import { type MockUpstream, wireView } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

const A = 'anthropic-claude-v1';
const G = 'google-gemini-v1';

const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } } },
  },
};
const ASK = { role: 'user', content: 'Weather in Paris?' };

/** The chunks of an SSE chat stream (without [DONE]). */
async function streamChunks(url: string, key: string, body: object): Promise<any[]> {
  const res = await fetch(`${url}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
  });
  expect(res.status).toBe(200);
  const text = await res.text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]')
    .map((l) => JSON.parse(l.slice(6)));
}

describe('reasoning_details round trips through the gateway', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let call: ReturnType<typeof client>;
  let anthropic: Anthropic;
  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway('sqlite', { env: { ...up.env, GATEHOUSE_RATE_LIMIT_REQUESTS: '1000' } });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    call = client(gw.url, gw.apiKey);
    // The Anthropic client appends /v1/messages itself.
    anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  it('Anthropic: returns thinking signatures and redacted data, and sends them back in the tool loop', async () => {
    mock.enqueue({
      reply: {
        reasoning: 'The user wants weather.',
        signature: 'sig-anthropic-1',
        redactedThinking: 'REDACTED-DATA==',
        tool_calls: [{ id: 'toolu_1', name: 'get_weather', arguments: { city: 'Paris' } }],
      },
    });
    const body = { model: 'test/claude', reasoning: { effort: 'low' }, tools: [WEATHER] };
    const first = await call('POST', '/chat/completions', { ...body, messages: [ASK] });
    expect(first.status).toBe(200);
    const message = first.body.choices[0].message;
    expect(message.reasoning).toBe('The user wants weather.');
    expect(message.reasoning_details).toEqual([
      {
        type: 'reasoning.text',
        text: 'The user wants weather.',
        signature: 'sig-anthropic-1',
        format: A,
        index: 0,
      },
      { type: 'reasoning.encrypted', data: 'REDACTED-DATA==', format: A, index: 1 },
    ]);

    mock.enqueue({ reply: { text: 'Sunny, 21°C.' } });
    const second = await call('POST', '/chat/completions', {
      ...body,
      messages: [ASK, message, { role: 'tool', tool_call_id: 'toolu_1', content: '{"temp":21}' }],
    });
    expect(second.status).toBe(200);
    const sent = mock.requests.at(-1)!;
    const assistant = wireView(sent).turns[1]!;
    expect(assistant.role).toBe('assistant');
    expect(assistant.reasoning).toEqual([
      { text: 'The user wants weather.', signature: 'sig-anthropic-1' },
      { data: 'REDACTED-DATA==' },
    ]);
    expect(sent.body.messages[1].content.slice(0, 2).map((b: { type: string }) => b.type)).toEqual([
      'thinking',
      'redacted_thinking',
    ]);
    // The continuation carries its thinking blocks, so thinking stays enabled.
    expect(sent.body.thinking).toMatchObject({ type: 'enabled' });
    // A message without its details (only the reasoning text) sends no thinking and turns it off.
    mock.enqueue({ reply: { text: 'ok' } });
    const { reasoning_details: _, ...bare } = message;
    await call('POST', '/chat/completions', {
      ...body,
      messages: [ASK, bare, { role: 'tool', tool_call_id: 'toolu_1', content: '{"temp":21}' }],
    });
    expect(wireView(mock.requests.at(-1)!).turns[1]!.reasoning).toEqual([]);
    expect(mock.requests.at(-1)!.body).not.toHaveProperty('thinking');
  });

  it('Anthropic streams: reasoning_details fragments carry the signature_delta signature', async () => {
    mock.enqueue({
      reply: {
        reasoning: 'Streaming thoughts here.',
        signature: 'sig-stream-1',
        tool_calls: [{ id: 'toolu_s', name: 'get_weather', arguments: { city: 'Paris' } }],
      },
    });
    const body = { model: 'test/claude', reasoning: { effort: 'low' }, tools: [WEATHER] };
    const chunks = await streamChunks(gw.url, gw.apiKey, { ...body, messages: [ASK] });
    const fragments: ReasoningDetail[] = chunks.flatMap(
      (c) => c.choices?.[0]?.delta?.reasoning_details ?? [],
    );
    expect(fragments.length).toBeGreaterThan(1);
    expect(collapseReasoningDetails(fragments)).toEqual([
      {
        type: 'reasoning.text',
        text: 'Streaming thoughts here.',
        signature: 'sig-stream-1',
        format: A,
        index: 0,
      },
    ]);

    // Sent back as the raw fragments (merged by index on the way up).
    mock.enqueue({ reply: { text: 'Sunny.' } });
    await call('POST', '/chat/completions', {
      ...body,
      messages: [
        ASK,
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'toolu_s',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
          ],
          reasoning_details: fragments,
        },
        { role: 'tool', tool_call_id: 'toolu_s', content: 'sunny' },
      ],
    });
    expect(wireView(mock.requests.at(-1)!).turns[1]!.reasoning).toEqual([
      { text: 'Streaming thoughts here.', signature: 'sig-stream-1' },
    ]);
  });

  it('Gemini: returns thought and function-call signatures and sends them back on their parts', async () => {
    mock.enqueue({
      reply: {
        reasoning: 'Need the weather tool.',
        thoughtPartSignature: 'g-thought-sig',
        thoughtSignature: 'g-call-sig',
        tool_calls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }],
      },
    });
    const body = { model: 'test/gemini', reasoning: { effort: 'low' }, tools: [WEATHER] };
    const first = await call('POST', '/chat/completions', { ...body, messages: [ASK] });
    expect(first.status).toBe(200);
    const message = first.body.choices[0].message;
    const callId = message.tool_calls[0].id;
    expect(message.reasoning_details).toEqual([
      {
        type: 'reasoning.text',
        text: 'Need the weather tool.',
        signature: 'g-thought-sig',
        format: G,
        index: 0,
      },
      { type: 'reasoning.encrypted', data: 'g-call-sig', id: callId, format: G, index: 1 },
    ]);

    mock.enqueue({ reply: { text: 'Cold.' } });
    const second = await call('POST', '/chat/completions', {
      ...body,
      messages: [ASK, message, { role: 'tool', tool_call_id: callId, content: '{"temp":-3}' }],
    });
    expect(second.status).toBe(200);
    const model = wireView(mock.requests.at(-1)!).turns[1]!;
    expect(model.role).toBe('assistant');
    expect(model.reasoning).toEqual([{ text: 'Need the weather tool.', signature: 'g-thought-sig' }]);
    expect(model.toolCalls).toEqual([
      { name: 'get_weather', args: { city: 'Oslo' }, signature: 'g-call-sig' },
    ]);
  });

  it('Gemini streams: the function-call signature arrives with its tool call', async () => {
    mock.enqueue({
      reply: {
        reasoning: 'Think.',
        thoughtSignature: 'g-stream-call-sig',
        tool_calls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }],
      },
    });
    const chunks = await streamChunks(gw.url, gw.apiKey, {
      model: 'test/gemini',
      reasoning: { effort: 'low' },
      tools: [WEATHER],
      messages: [ASK],
    });
    const withCall = chunks.find((c) => c.choices?.[0]?.delta?.tool_calls);
    expect(withCall.choices[0].delta.reasoning_details).toEqual([
      {
        type: 'reasoning.encrypted',
        data: 'g-stream-call-sig',
        id: withCall.choices[0].delta.tool_calls[0].id,
        format: G,
        index: 1,
      },
    ]);
  });

  it('/messages through the official Anthropic client gets the real signature back and round-trips it', async () => {
    mock.enqueue({
      reply: {
        reasoning: 'Weather needs a tool.',
        signature: 'sig-messages-1',
        tool_calls: [{ id: 'toolu_m', name: 'get_weather', arguments: { city: 'Paris' } }],
      },
    });
    const params = {
      model: 'test/claude',
      max_tokens: 4096,
      thinking: { type: 'enabled' as const, budget_tokens: 1024 },
      tools: [{ name: 'get_weather', input_schema: { type: 'object' as const } }],
    };
    const first = await anthropic.messages.create({
      ...params,
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    expect(first.content[0]).toEqual({
      type: 'thinking',
      thinking: 'Weather needs a tool.',
      signature: 'sig-messages-1',
    });

    mock.enqueue({ reply: { text: 'Sunny.' } });
    await anthropic.messages.create({
      ...params,
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_m', content: 'sunny' }] },
      ],
    });
    const sent = mock.requests.at(-1)!;
    expect(sent.body.messages[1].content[0]).toEqual({
      type: 'thinking',
      thinking: 'Weather needs a tool.',
      signature: 'sig-messages-1',
    });
    expect(sent.body.thinking).toMatchObject({ type: 'enabled' });

    // Streamed: the signature_delta carries the real signature.
    mock.enqueue({
      reply: {
        reasoning: 'Streamed thinking.',
        signature: 'sig-messages-2',
        redactedThinking: 'RD==',
        text: 'Hi.',
      },
    });
    const final = await anthropic.messages
      .stream({ ...params, messages: [{ role: 'user', content: 'Hello' }] })
      .finalMessage();
    expect(final.content.slice(0, 2)).toEqual([
      { type: 'thinking', thinking: 'Streamed thinking.', signature: 'sig-messages-2' },
      { type: 'redacted_thinking', data: 'RD==' },
    ]);
  });
});
