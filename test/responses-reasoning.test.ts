/**
 * A provider's reasoning state round-trips through `/responses`: the official OpenAI client
 * (`responses.create` / `responses.stream`) runs a tool loop on Claude and Gemini through
 * Gatehouse, sending the output items back as every Responses client does (or continuing with
 * `previous_response_id` or a `conversation`), and the upstream's second request carries its own
 * signed thinking / thought signatures, with thinking still on.
 */
import OpenAI from 'openai';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient } from './support/http.js';
import { type MockUpstream, wireView } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

const WEATHER = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'Weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};
const ASK: ResponseInputItem[] = [{ role: 'user', content: 'Weather in Paris?' }];

describe('reasoning state through /responses with the official OpenAI client', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let openai: OpenAI;
  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway('sqlite', { env: { ...up.env, GATEHOUSE_RATE_LIMIT_REQUESTS: '1000' } });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  const claudeStep = () =>
    mock.enqueue({
      reply: {
        reasoning: 'The user wants weather.',
        signature: 'sig-claude-1',
        redactedThinking: 'REDACTED-DATA==',
        tool_calls: [{ id: 'toolu_1', name: 'get_weather', arguments: { city: 'Paris' } }],
      },
    });
  const claudeSent = () => {
    const sent = mock.requests.at(-1)!;
    expect(sent.format).toBe('anthropic-messages');
    expect(wireView(sent).turns[1]?.reasoning).toEqual([
      { text: 'The user wants weather.', signature: 'sig-claude-1' },
      { data: 'REDACTED-DATA==' },
    ]);
    // The continuation carries its thinking blocks, so thinking stays on.
    expect(sent.body.thinking).toMatchObject({ type: 'enabled' });
  };
  const base = { reasoning: { effort: 'low' as const }, tools: [WEATHER] };

  it('Claude, store: false, items sent back: the signed and redacted thinking reach Anthropic again', async () => {
    claudeStep();
    const first = await openai.responses.create({
      ...base,
      model: 'test/claude',
      input: ASK,
      store: false,
      include: ['reasoning.encrypted_content'],
    });
    const rs = first.output.find((i) => i.type === 'reasoning');
    expect(rs?.summary).toEqual([{ type: 'summary_text', text: 'The user wants weather.' }]);
    expect(rs?.encrypted_content).toMatch(/^gatehouse\.rd1\./);
    // Nothing of the caller's or the provider's keys is in it.
    expect(Buffer.from(JSON.stringify(first)).includes(gw.apiKey)).toBe(false);
    const call = first.output.find((i) => i.type === 'function_call');
    expect(call?.call_id).toBe('toolu_1');

    mock.enqueue({ reply: { text: 'Sunny, 21°C.' } });
    const second = await openai.responses.create({
      ...base,
      model: 'test/claude',
      store: false,
      input: [
        ...ASK,
        ...(first.output as ResponseInputItem[]),
        { type: 'function_call_output', call_id: 'toolu_1', output: '{"temp":21}' },
      ],
    });
    expect(second.output_text).toBe('Sunny, 21°C.');
    claudeSent();
  });

  it('Claude streamed (responses.stream), without include: the state comes back anyway and goes back', async () => {
    claudeStep();
    const stream = openai.responses.stream({ ...base, model: 'test/claude', input: ASK });
    const doneItems: unknown[] = [];
    stream.on('response.output_item.done', (e) => doneItems.push(e.item));
    const first = await stream.finalResponse();
    const states = first.output.flatMap((i) =>
      i.type === 'reasoning' && i.encrypted_content ? [i.encrypted_content] : [],
    );
    expect(states.length).toBeGreaterThan(0);
    // The items streamed one by one carry the same state as the final response.
    expect(
      doneItems.flatMap((i: any) =>
        i.type === 'reasoning' && i.encrypted_content ? [i.encrypted_content] : [],
      ),
    ).toEqual(states);

    mock.enqueue({ reply: { text: 'Sunny.' } });
    const next = openai.responses.stream({
      ...base,
      model: 'test/claude',
      input: [
        ...ASK,
        ...(first.output as ResponseInputItem[]),
        { type: 'function_call_output', call_id: 'toolu_1', output: 'sunny' },
      ],
    });
    expect((await next.finalResponse()).output_text).toBe('Sunny.');
    claudeSent();
  });

  it('Claude through previous_response_id: the stored reasoning state goes back', async () => {
    claudeStep();
    const first = await openai.responses.create({ ...base, model: 'test/claude', input: ASK });
    mock.enqueue({ reply: { text: 'Sunny.' } });
    const second = await openai.responses.create({
      ...base,
      model: 'test/claude',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: 'toolu_1', output: 'sunny' }],
    });
    expect(second.output_text).toBe('Sunny.');
    claudeSent();
    // item_reference (the AI SDK's way) restores it too.
    mock.enqueue({ reply: { text: 'Sunny again.' } });
    await openai.responses.create({
      ...base,
      model: 'test/claude',
      input: [
        ...ASK,
        ...first.output.map((i) => ({ type: 'item_reference' as const, id: i.id as string })),
        { type: 'function_call_output', call_id: 'toolu_1', output: 'sunny' },
      ],
    });
    claudeSent();
  });

  it('Claude through a conversation: the reasoning state kept in it goes back (streamed turn too); an OpenAI turn leaves it out', async () => {
    const conv = await openai.conversations.create({});
    claudeStep();
    const stream = await openai.responses.create({
      ...base,
      model: 'test/claude',
      conversation: conv.id,
      input: ASK,
      stream: true,
    });
    for await (const _ of stream);
    mock.enqueue({ reply: { text: 'Sunny.' } });
    const second = await openai.responses.create({
      ...base,
      model: 'test/claude',
      conversation: conv.id,
      input: [{ type: 'function_call_output', call_id: 'toolu_1', output: 'sunny' }],
    });
    expect(second.output_text).toBe('Sunny.');
    claudeSent();

    mock.enqueue({ reply: { text: 'From GPT.' } });
    await openai.responses.create({
      ...base,
      model: 'test/gpt',
      conversation: conv.id,
      input: 'And tomorrow?',
    });
    const sent = mock.requests.at(-1)!;
    expect(sent.format).toBe('openai-responses');
    expect(sent.body.input.map((i: { type?: string }) => i.type ?? 'message')).toEqual([
      'message',
      'function_call',
      'function_call_output',
      'message',
      'message',
    ]);
  });

  it('Gemini: the thought and function-call signatures go back on their parts (create and stream)', async () => {
    for (const streamed of [false, true]) {
      mock.reset();
      mock.enqueue({
        reply: {
          reasoning: 'Need the weather tool.',
          thoughtPartSignature: 'g-thought-sig',
          thoughtSignature: 'g-call-sig',
          tool_calls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }],
        },
      });
      const body = { ...base, model: 'test/gemini', input: ASK, store: false };
      const first = streamed
        ? await openai.responses.stream(body).finalResponse()
        : await openai.responses.create(body);
      const call = first.output.find((i) => i.type === 'function_call');
      if (call?.type !== 'function_call') throw new Error(JSON.stringify(first.output));

      mock.enqueue({ reply: { text: 'Cold.' } });
      const second = await openai.responses.create({
        ...body,
        input: [
          ...ASK,
          ...(first.output as ResponseInputItem[]),
          { type: 'function_call_output', call_id: call.call_id, output: '{"temp":-3}' },
        ],
      });
      expect(second.output_text).toBe('Cold.');
      const model = wireView(mock.requests.at(-1)!).turns[1]!;
      expect(model.reasoning).toEqual([{ text: 'Need the weather tool.', signature: 'g-thought-sig' }]);
      expect(model.toolCalls).toEqual([
        { name: 'get_weather', args: { city: 'Oslo' }, signature: 'g-call-sig' },
      ]);
    }
  });

  it('a foreign or broken encrypted_content is ignored (no 500): the reasoning is just not restored', async () => {
    for (const encrypted_content of ['gAAAAABfOpenAIsOwnFernetToken==', 'gatehouse.rd1.%%%garbage']) {
      mock.enqueue({ reply: { text: 'ok' } });
      const res = await openai.responses.create({
        ...base,
        model: 'test/claude',
        input: [
          ...ASK,
          {
            type: 'reasoning',
            id: 'rs_x',
            summary: [{ type: 'summary_text', text: 'Thought.' }],
            encrypted_content,
          },
          { type: 'function_call', call_id: 'toolu_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { type: 'function_call_output', call_id: 'toolu_1', output: 'sunny' },
        ],
      });
      expect(res.output_text).toBe('ok');
      expect(wireView(mock.requests.at(-1)!).turns[1]?.reasoning).toEqual([]);
    }
  });

  it('a conversation moving on to an OpenAI model: Gatehouse’s reasoning items are left out of the pass-through', async () => {
    claudeStep();
    const first = await openai.responses.create({ ...base, model: 'test/claude', input: ASK, store: false });
    mock.enqueue({ reply: { text: 'From GPT.' } });
    const raw = await openai.responses
      .create({
        ...base,
        model: 'test/gpt',
        store: false,
        input: [
          ...ASK,
          ...(first.output as ResponseInputItem[]),
          { type: 'function_call_output', call_id: 'toolu_1', output: 'sunny' },
        ],
      })
      .withResponse();
    expect(raw.data.output_text).toBe('From GPT.');
    const sent = mock.requests.at(-1)!;
    expect(sent.format).toBe('openai-responses');
    expect(sent.body.input.map((i: { type?: string }) => i.type ?? 'message')).toEqual([
      'message',
      'function_call',
      'function_call_output',
    ]);
    expect(raw.response.headers.get('x-gatehouse-dropped-fields')).toBe('input[1]');
  });
});
