import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';
import type { MockStreamEvent, MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

/**
 * A lane's stream relayed as the upstream's bytes (providers/lane.ts `relayBytes`): what the caller
 * reads is what the provider wrote, byte for byte, however it was framed and cut into reads; only
 * the frames a wire rewrites differ (the chat usage chunk, with its cost). Usage is billed exactly
 * from the events the tap reads; a stream cut off mid-event ends on whole events and the error.
 */
describe('lane streams relayed as bytes', () => {
  let gw: TestGateway;
  let mock: MockUpstream;

  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    const file = up.env.GATEHOUSE_CONFIG as string;
    const config = JSON.parse(readFileSync(file, 'utf8'));
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
      cached_prompt: 0.5,
    };
    writeFileSync(file, JSON.stringify(config));
    gw = await startTestGateway('sqlite', { env: up.env });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
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

  /** The upstream's bytes written in the given pieces, one write each, a few ms apart (separate reads). */
  const pieces = (bytes: Buffer, cuts: number[]): MockStreamEvent[] => {
    const out: MockStreamEvent[] = [];
    let from = 0;
    for (const to of [...cuts, bytes.length]) {
      out.push({ raw: bytes.subarray(from, to) });
      from = to;
    }
    return out;
  };

  const post = (path: string, body: object, headers: Record<string, string>) =>
    fetch(`${gw.url}/api/v1${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  const messages = () =>
    post(
      '/messages',
      { model: 'test/claude', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'x' }] },
      { 'x-api-key': gw.apiKey },
    );
  const chat = () =>
    post(
      '/chat/completions',
      { model: 'test/gpt', stream: true, messages: [{ role: 'user', content: 'x' }] },
      { authorization: `Bearer ${gw.apiKey}` },
    );

  const json = (x: unknown) => JSON.stringify(x);
  /** An Anthropic stream as a provider may frame it: CRLF, pings and comments, `data:` without a space. */
  const anthropicStream = [
    ': stream opened\r\n\r\n',
    `event: message_start\r\ndata: ${json({
      type: 'message_start',
      message: {
        id: 'msg_bytes',
        type: 'message',
        role: 'assistant',
        model: 'claude-x',
        content: [],
        stop_reason: null,
        usage: {
          input_tokens: 40,
          cache_read_input_tokens: 1000,
          cache_creation_input_tokens: 200,
          output_tokens: 1,
        },
      },
    })}\r\n\r\n`,
    `event: content_block_start\r\ndata:${json({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } })}\r\n\r\n`,
    `event: ping\r\ndata: ${json({ type: 'ping' })}\r\n\r\n`,
    `event: content_block_delta\r\ndata: ${json({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Grüße aus 東京 🎉' } })}\r\n\r\n`,
    ':keep-alive\r\n\r\n',
    `event: content_block_stop\r\ndata: ${json({ type: 'content_block_stop', index: 0 })}\r\n\r\n`,
    `event: message_delta\r\ndata: ${json({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: 17, server_tool_use: { web_search_requests: 2 } },
    })}\r\n\r\n`,
    `event: message_stop\r\ndata: ${json({ type: 'message_stop' })}\r\n\r\n`,
  ].join('');

  it('relays /messages byte for byte, cut anywhere (a multi-byte character split across reads), and bills it exactly', async () => {
    const bytes = Buffer.from(anthropicStream);
    const emoji = bytes.indexOf(Buffer.from('🎉'));
    const tokyo = bytes.indexOf(Buffer.from('東'));
    // Inside an event, after its `data:`, inside two multi-byte characters, between CR and LF.
    const crlf = bytes.indexOf('\r\n\r\nevent: content_block_stop');
    const cuts = [30, bytes.indexOf('data: {"type":"message_start"') + 9, tokyo + 1, emoji + 2, crlf + 1];
    mock.enqueue({
      stream: pieces(
        bytes,
        cuts.sort((a, b) => a - b),
      ),
      eventDelayMs: 5,
    });
    const res = await messages();
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gatehouse-route')).toBe('passthrough');
    expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
    const gen = await generation(res.headers.get('x-gatehouse-generation-id') as string);
    expect(gen).toMatchObject({
      status: 'success',
      streamed: true,
      passthrough: true,
      tokens_prompt: 1240,
      tokens_completion: 17,
      native_tokens_cached: 1000,
      native_tokens_cache_write: 200,
      web_search_requests: 2,
      finish_reason: 'end_turn',
      upstream_id: 'msg_bytes',
    });
    expect(gen.total_cost).toBeCloseTo((40 * 3 + 1000 * 0.3 + 200 * 3.75 + 17 * 15) / 1e6 + 2 * 0.01, 12);
  });

  it('ends a /messages stream cut off mid-event on its whole events and Anthropic’s error event', async () => {
    const bytes = Buffer.from(anthropicStream);
    const half = bytes.indexOf('event: content_block_stop') + 30;
    // Two reads, then the connection dies inside the third event block of the second read.
    mock.enqueue({ stream: pieces(bytes.subarray(0, half), [200]), eventDelayMs: 5, dieAfterEvents: 2 });
    const res = await messages();
    expect(res.status).toBe(200);
    const text = await res.text();
    const whole = anthropicStream.slice(0, anthropicStream.indexOf('event: content_block_stop'));
    expect(text.startsWith(whole)).toBe(true);
    expect(text.slice(whole.length)).toMatch(
      /^event: error\ndata: \{"type":"error","error":\{"type":"api_error"/,
    );
    expect(text.endsWith('\n\n')).toBe(true);
    const gen = await generation(res.headers.get('x-gatehouse-generation-id') as string);
    expect(gen).toMatchObject({ status: 'error', passthrough: true, tokens_prompt: 1240 });
  });

  /** An OpenAI stream that asked for usage: `"usage":null` in every chunk, the usage chunk last. */
  const chunk = (delta: object, finish: string | null = null) =>
    json({
      id: 'chatcmpl-bytes',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'gpt-x',
      choices: [{ index: 0, delta, finish_reason: finish }],
      usage: null,
    });
  const usage = {
    prompt_tokens: 300,
    completion_tokens: 50,
    total_tokens: 350,
    prompt_tokens_details: { cached_tokens: 100 },
    completion_tokens_details: { reasoning_tokens: 20 },
  };
  const usageChunk = json({
    id: 'chatcmpl-bytes',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'gpt-x',
    choices: [],
    usage,
  });
  const chatStream = [
    `data: ${chunk({ role: 'assistant', content: '' })}\r\n\r\n`,
    ': OPENROUTER PROCESSING\r\n\r\n',
    `data:${chunk({ content: 'naïve ' })}\r\n\r\n`,
    `data: ${chunk({ content: '"quoted" 🎉' })}\r\n\r\n`,
    `data: ${chunk({}, 'stop')}\r\n\r\n`,
    `data: ${usageChunk}\r\n\r\n`,
    'data: [DONE]\r\n\r\n',
  ].join('');

  it('relays /chat/completions as it came but for the null usage cut and the usage chunk priced', async () => {
    const bytes = Buffer.from(chatStream);
    const emoji = bytes.indexOf(Buffer.from('🎉'));
    mock.enqueue({ stream: pieces(bytes, [10, emoji + 1, emoji + 3]), eventDelayMs: 5 });
    const res = await chat();
    expect(res.status).toBe(200);
    const text = await res.text();
    const beforeUsage = chatStream.slice(0, chatStream.indexOf(`data: ${usageChunk}`));
    expect(text.startsWith(beforeUsage.replaceAll(',"usage":null', ''))).toBe(true);
    const rest = text.slice(beforeUsage.replaceAll(',"usage":null', '').length);
    expect(rest.endsWith('\n\ndata: [DONE]\r\n\r\n')).toBe(true);
    const priced = JSON.parse(rest.slice('data: '.length, rest.indexOf('\n\n')));
    const cost = (200 * 1 + 100 * 0.5 + 50 * 2) / 1e6;
    expect(priced).toMatchObject({
      id: 'chatcmpl-bytes',
      provider: 'openai',
      usage: { ...usage, is_byok: false },
    });
    expect(priced.usage.cost).toBeCloseTo(cost, 12);
    const gen = await generation(res.headers.get('x-gatehouse-generation-id') as string);
    expect(gen).toMatchObject({
      status: 'success',
      passthrough: true,
      tokens_prompt: 300,
      tokens_completion: 50,
      native_tokens_cached: 100,
      native_tokens_reasoning: 20,
      finish_reason: 'stop',
      upstream_id: 'chatcmpl-bytes',
    });
    expect(gen.total_cost).toBeCloseTo(cost, 12);
  });

  it('ends a /chat/completions stream cut off mid-chunk on its whole chunks and the error chunk', async () => {
    const bytes = Buffer.from(chatStream);
    const cut = chatStream.indexOf(`data: ${chunk({}, 'stop')}`) + 20;
    mock.enqueue({ stream: pieces(bytes.subarray(0, cut), [60]), eventDelayMs: 5, dieAfterEvents: 2 });
    const res = await chat();
    const text = await res.text();
    const whole = chatStream
      .slice(0, chatStream.indexOf(`data: ${chunk({}, 'stop')}`))
      .replaceAll(',"usage":null', '');
    expect(text.startsWith(whole)).toBe(true);
    const error = JSON.parse(
      text
        .slice(whole.length)
        .replace(/^data: /, '')
        .split('\n\n')[0] as string,
    );
    expect(error).toMatchObject({ error: { code: 502 } });
    const gen = await generation(res.headers.get('x-gatehouse-generation-id') as string);
    expect(gen).toMatchObject({ status: 'error', passthrough: true });
  });

  it('relays /responses deltas as they came and rewrites only the events carrying the response', async () => {
    const response = (status: string, usage: unknown) => ({
      id: 'resp_bytes',
      object: 'response',
      created_at: 1,
      status,
      model: 'gpt-x',
      output: [],
      usage,
    });
    const ev = (type: string, data: object) => `event: ${type}\r\ndata: ${json({ type, ...data })}\r\n\r\n`;
    const deltas = [
      ev('response.output_item.added', {
        output_index: 0,
        item: { type: 'message', id: 'msg_1', role: 'assistant', content: [] },
      }),
      ': processing\r\n\r\n',
      ev('response.output_text.delta', {
        item_id: 'msg_1',
        output_index: 0,
        content_index: 0,
        delta: 'Grüße 🎉',
      }),
      ev('response.output_text.delta', {
        item_id: 'msg_1',
        output_index: 0,
        content_index: 0,
        delta: ' done',
      }),
    ].join('');
    const usage = {
      input_tokens: 300,
      input_tokens_details: { cached_tokens: 100 },
      output_tokens: 50,
      output_tokens_details: { reasoning_tokens: 20 },
      total_tokens: 350,
    };
    const upstream = [
      ev('response.created', { response: response('in_progress', null) }),
      deltas,
      ev('response.completed', { response: response('completed', usage) }),
    ].join('');
    const bytes = Buffer.from(upstream);
    const emoji = bytes.indexOf(Buffer.from('🎉'));
    mock.enqueue({ stream: pieces(bytes, [emoji + 1]), eventDelayMs: 5 });
    const res = await post(
      '/responses',
      { model: 'test/gpt', stream: true, input: 'x' },
      { authorization: `Bearer ${gw.apiKey}` },
    );
    expect(res.status).toBe(200);
    const text = await res.text();
    // The deltas byte for byte, between the two rewritten snapshots.
    expect(text).toContain(deltas);
    const snapshots = text.replace(deltas, '').split('\n\n').filter(Boolean);
    expect(snapshots.map((f) => f.split('\n')[0])).toEqual([
      'event: response.created',
      'event: response.completed',
    ]);
    const completed = JSON.parse((snapshots[1] as string).split('\n')[1]?.slice('data: '.length) as string);
    const cost = (200 * 1 + 100 * 0.5 + 50 * 2) / 1e6;
    expect(completed.response).toMatchObject({ id: 'resp_bytes', usage: { ...usage, is_byok: false } });
    expect(completed.response.usage.cost).toBeCloseTo(cost, 12);
    const gen = await generation(res.headers.get('x-gatehouse-generation-id') as string);
    expect(gen).toMatchObject({
      status: 'success',
      passthrough: true,
      tokens_prompt: 300,
      tokens_completion: 50,
      native_tokens_cached: 100,
      native_tokens_reasoning: 20,
      upstream_id: 'resp_bytes',
    });
    expect(gen.total_cost).toBeCloseTo(cost, 12);
  });
});
