/**
 * LangChain through Gatehouse, with LangChain's own packages and their own parsing: `ChatOpenAI`
 * (chat completions and, with `useResponsesApi`, the Responses API), `OpenAIEmbeddings`,
 * `ChatAnthropic`, and `createAgent`'s tool loop from `langchain`. Each runs on a model Gatehouse
 * passes through to its provider and on one it translates, against the mock upstream speaking the
 * providers' real wire formats. What is asserted is what a LangChain user reads back (text, tool
 * calls with parsed args, usage_metadata, structured output, errors) and what reached the upstream.
 */
import { ChatAnthropic } from '@langchain/anthropic';
import type { AIMessageChunk, BaseMessage } from '@langchain/core/messages';
import { HumanMessage } from '@langchain/core/messages';
import { ChatOpenAI, OpenAIEmbeddings } from '@langchain/openai';
import { createAgent, providerStrategy, tool } from 'langchain';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { TestGateway } from './support/gateway.js';
import { client } from './support/http.js';
import { type MockUpstream, wireView } from './support/mock-upstream.js';
import { gatewayWithUpstreams } from './support/upstreams.js';

const reply = { text: 'upstream says hi', usage: { prompt_tokens: 20, completion_tokens: 6 } };
const weatherCall = { id: 'call_w1', name: 'weather', arguments: { city: 'Oslo' } };
const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'weather',
    description: 'The weather of a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    },
  },
};

/** Joins a LangChain stream into one chunk, as `concat` does for a user. */
async function collect(stream: AsyncIterable<AIMessageChunk>): Promise<AIMessageChunk> {
  let acc: AIMessageChunk | undefined;
  for await (const chunk of stream) acc = acc ? acc.concat(chunk) : chunk;
  if (!acc) throw new Error('empty stream');
  return acc;
}

const textOf = (m: BaseMessage): string =>
  typeof m.content === 'string'
    ? m.content
    : m.content.map((b) => (b.type === 'text' ? (b as { text: string }).text : '')).join('');

describe('LangChain through Gatehouse', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ gw, mock, stop } = await gatewayWithUpstreams());
  });
  afterAll(() => stop?.());
  beforeEach(() => mock.reset());

  const openai = (model: string, extra: Partial<ConstructorParameters<typeof ChatOpenAI>[0] & object> = {}) =>
    new ChatOpenAI({
      model,
      apiKey: gw.apiKey,
      configuration: { baseURL: `${gw.url}/api/v1` },
      maxRetries: 0,
      ...extra,
    });
  const anthropic = (model: string, extra: object = {}) =>
    new ChatAnthropic({
      model,
      apiKey: gw.apiKey,
      anthropicApiUrl: `${gw.url}/api`,
      maxRetries: 0,
      maxTokens: 256,
      ...extra,
    });

  describe.each([
    { model: 'test/gpt', upstream: 'openai-chat' },
    { model: 'test/claude', upstream: 'anthropic-messages' },
  ])('ChatOpenAI (chat completions) on $model', ({ model, upstream }) => {
    it('invoke: text, usage_metadata, the id', async () => {
      mock.enqueue({ reply });
      const msg = await openai(model).invoke('say hi');
      expect(msg.content).toBe(reply.text);
      expect(msg.usage_metadata).toMatchObject({ input_tokens: 20, output_tokens: 6, total_tokens: 26 });
      expect(msg.id).toBeTruthy();
      expect(mock.requests).toHaveLength(1);
      expect(mock.requests[0]?.format).toBe(upstream);
      expect(wireView(mock.requests[0]!).turns).toEqual([
        expect.objectContaining({ role: 'user', text: 'say hi' }),
      ]);
    });

    it('stream with streamUsage: the chunks join to the text, usage_metadata on the aggregate', async () => {
      mock.enqueue({ reply });
      const acc = await collect(await openai(model, { streamUsage: true }).stream('say hi'));
      expect(acc.content).toBe(reply.text);
      expect(acc.usage_metadata).toMatchObject({ input_tokens: 20, output_tokens: 6, total_tokens: 26 });
      expect(mock.requests[0]?.stream).toBe(true);
    });

    it('bindTools: tool_calls come back parsed, the tool reached the upstream', async () => {
      mock.enqueue({ reply: { tool_calls: [weatherCall] } });
      const msg = await openai(model).bindTools([weatherTool]).invoke('weather in Oslo?');
      expect(msg.tool_calls).toEqual([
        expect.objectContaining({ id: 'call_w1', name: 'weather', args: { city: 'Oslo' } }),
      ]);
      expect(wireView(mock.requests[0]!).tools.map((t) => t.name)).toEqual(['weather']);

      mock.enqueue({ reply: { tool_calls: [weatherCall] } });
      const streamed = await collect(await openai(model).bindTools([weatherTool]).stream('weather in Oslo?'));
      expect(streamed.tool_calls).toEqual([
        expect.objectContaining({ id: 'call_w1', name: 'weather', args: { city: 'Oslo' } }),
      ]);
    });

    it('withStructuredOutput: a json_schema response_format reaches the upstream, the object comes back', async () => {
      const person = { name: 'Ada', age: 36 };
      mock.enqueue({ reply: { text: JSON.stringify(person) } });
      const schema = z.object({ name: z.string(), age: z.number() });
      const out = await openai(model).withStructuredOutput(schema, { name: 'person' }).invoke('who?');
      expect(out).toEqual(person);
      const body = mock.requests[0]!.body;
      if (upstream === 'openai-chat') {
        expect(body.response_format).toMatchObject({
          type: 'json_schema',
          json_schema: { name: 'person', schema: { type: 'object', required: ['name', 'age'] } },
        });
      } else {
        // Anthropic's structured output: the same schema as output_config.format.
        expect(body.output_config).toMatchObject({
          format: { type: 'json_schema', schema: { type: 'object', required: ['name', 'age'] } },
        });
        expect(body.response_format).toBeUndefined();
      }
    });
  });

  describe.each([
    { model: 'test/gpt', upstream: 'openai-responses' },
    { model: 'test/claude', upstream: 'anthropic-messages' },
  ])('ChatOpenAI with useResponsesApi on $model', ({ model, upstream }) => {
    const responses = (extra: object = {}) => openai(model, { useResponsesApi: true, ...extra });

    it('invoke: text and usage_metadata over /responses', async () => {
      mock.enqueue({ reply });
      const msg = await responses().invoke('say hi');
      expect(textOf(msg)).toBe(reply.text);
      expect(msg.usage_metadata).toMatchObject({ input_tokens: 20, output_tokens: 6, total_tokens: 26 });
      expect(mock.requests[0]?.format).toBe(upstream);
    });

    it('stream: text deltas and usage_metadata', async () => {
      mock.enqueue({ reply });
      const acc = await collect(await responses().stream('say hi'));
      expect(textOf(acc)).toBe(reply.text);
      expect(acc.usage_metadata).toMatchObject({ input_tokens: 20, output_tokens: 6 });
    });

    it('tools: function calls parsed, invoke and stream', async () => {
      mock.enqueue({ reply: { tool_calls: [weatherCall] } });
      const msg = await responses().bindTools([weatherTool]).invoke('weather in Oslo?');
      expect(msg.tool_calls).toEqual([
        expect.objectContaining({ id: 'call_w1', name: 'weather', args: { city: 'Oslo' } }),
      ]);
      expect(wireView(mock.requests[0]!).tools.map((t) => t.name)).toEqual(['weather']);
      mock.enqueue({ reply: { tool_calls: [weatherCall] } });
      const acc = await collect(await responses().bindTools([weatherTool]).stream('weather in Oslo?'));
      expect(acc.tool_calls).toEqual([
        expect.objectContaining({ id: 'call_w1', name: 'weather', args: { city: 'Oslo' } }),
      ]);
    });
  });

  describe.each([
    { model: 'test/gpt', upstream: 'openai-responses' },
    { model: 'test/claude', upstream: 'anthropic-messages' },
  ])('withStructuredOutput over the Responses API on $model', ({ model, upstream }) => {
    it('text.format json_schema reaches the upstream, the object comes back', async () => {
      const person = { name: 'Ada', age: 36 };
      mock.enqueue({ reply: { text: JSON.stringify(person) } });
      const schema = z.object({ name: z.string(), age: z.number() });
      const out = await openai(model, { useResponsesApi: true })
        .withStructuredOutput(schema, { name: 'person' })
        .invoke('who?');
      expect(out).toEqual(person);
      const body = mock.requests[0]!.body;
      const expected = { type: 'object', required: ['name', 'age'] };
      if (upstream === 'openai-responses') {
        expect(body.text.format).toMatchObject({ type: 'json_schema', name: 'person', schema: expected });
      } else {
        expect(body.output_config).toMatchObject({ format: { type: 'json_schema', schema: expected } });
      }
    });
  });

  describe.each([
    { model: 'test/claude', upstream: 'anthropic-messages' },
    { model: 'test/gpt', upstream: 'openai-chat' },
  ])('ChatAnthropic withStructuredOutput on $model', ({ model, upstream }) => {
    const person = { name: 'Ada', age: 36 };
    const schema = z.object({ name: z.string(), age: z.number() });

    it('functionCalling (the default): the forced tool call comes back as the object', async () => {
      mock.enqueue({ reply: { tool_calls: [{ id: 'call_p1', name: 'person', arguments: person }] } });
      const out = await anthropic(model).withStructuredOutput(schema, { name: 'person' }).invoke('who?');
      expect(out).toEqual(person);
      expect(wireView(mock.requests[0]!).tools.map((t) => t.name)).toEqual(['person']);
    });

    it('jsonSchema: output_config.format reaches the upstream (as response_format when translated)', async () => {
      mock.enqueue({ reply: { text: JSON.stringify(person) } });
      const out = await anthropic(model)
        .withStructuredOutput(schema, { method: 'jsonSchema' })
        .invoke('who?');
      expect(out).toEqual(person);
      const body = mock.requests[0]!.body;
      const expected = { type: 'object', required: ['name', 'age'] };
      if (upstream === 'anthropic-messages') {
        expect(body.output_config).toMatchObject({ format: { type: 'json_schema', schema: expected } });
      } else {
        expect(body.response_format).toMatchObject({
          type: 'json_schema',
          json_schema: { schema: expected },
        });
      }
    });
  });

  describe('reasoning with ChatOpenAI', () => {
    it("an OpenAI reasoning model by its own id: LangChain's reasoning options reach OpenAI", async () => {
      mock.enqueue({ reply });
      const msg = await openai('gpt-5', { reasoning: { effort: 'low' }, maxTokens: 100 }).invoke('say hi');
      expect(msg.content).toBe(reply.text);
      expect(mock.requests[0]).toMatchObject({ format: 'openai-chat', model: 'gpt-5' });
      expect(mock.requests[0]?.body).toMatchObject({ reasoning_effort: 'low', max_completion_tokens: 100 });
      expect(mock.requests[0]?.body.max_tokens).toBeUndefined();
    });

    it('any other model: the effort given in modelKwargs reaches the provider (Anthropic: thinking)', async () => {
      mock.enqueue({ reply });
      await openai('test/claude', { modelKwargs: { reasoning_effort: 'low' } }).invoke('say hi');
      expect(mock.requests[0]?.body.thinking).toMatchObject({ type: 'enabled' });

      // The Responses API: the reasoning comes back as a reasoning block.
      mock.enqueue({ reply: { reasoning: 'thinking it over', text: 'answer' } });
      const m = openai('test/claude', {
        useResponsesApi: true,
        modelKwargs: { reasoning: { effort: 'low', summary: 'auto' } },
      });
      const msg = await m.invoke('say hi');
      expect(mock.requests[1]?.body.thinking).toMatchObject({ type: 'enabled' });
      expect(msg.content).toEqual([
        expect.objectContaining({ type: 'reasoning', reasoning: 'thinking it over' }),
        expect.objectContaining({ type: 'text', text: 'answer' }),
      ]);
    });
  });

  it('OpenAIEmbeddings on test/embed: one vector per text, in order', async () => {
    // Values a float32 holds exactly: the client asks for base64 and decodes float32s.
    mock.enqueue({
      embeddings: [
        [0.5, 0.25, -1],
        [2, 0.125, 0],
      ],
    });
    const embeddings = new OpenAIEmbeddings({
      model: 'test/embed',
      apiKey: gw.apiKey,
      configuration: { baseURL: `${gw.url}/api/v1` },
      maxRetries: 0,
    });
    const vectors = await embeddings.embedDocuments(['first', 'second']);
    expect(vectors).toEqual([
      [0.5, 0.25, -1],
      [2, 0.125, 0],
    ]);
    expect(mock.requests[0]?.format).toBe('openai-embeddings');
    expect(mock.requests[0]?.body.input).toEqual(['first', 'second']);
    mock.enqueue({ embeddings: [[1, 2]] });
    expect(await embeddings.embedQuery('q')).toEqual([1, 2]);
  });

  describe.each([
    { model: 'test/claude', upstream: 'anthropic-messages' },
    { model: 'test/gpt', upstream: 'openai-chat' },
  ])('ChatAnthropic on $model', ({ model, upstream }) => {
    const usage = { prompt_tokens: 20, completion_tokens: 6, cached_tokens: 8 };

    it('invoke: text and usage_metadata (cache reads included in input_tokens)', async () => {
      mock.enqueue({ reply: { ...reply, usage } });
      const msg = await anthropic(model).invoke('say hi');
      expect(textOf(msg)).toBe(reply.text);
      expect(msg.usage_metadata).toMatchObject({
        input_tokens: 20,
        output_tokens: 6,
        total_tokens: 26,
        input_token_details: { cache_read: 8 },
      });
      expect(mock.requests[0]?.format).toBe(upstream);
    });

    it('stream: text joins, usage_metadata as LangChain reads it from message_start and message_delta', async () => {
      mock.enqueue({ reply: { ...reply, usage } });
      const acc = await collect(await anthropic(model).stream('say hi'));
      expect(textOf(acc)).toBe(reply.text);
      // LangChain takes the input counts from message_start only and adds message_start's output
      // count to message_delta's: Anthropic's own message_start counts one output token, as it
      // does without Gatehouse. An OpenAI-format upstream reports usage only at the end of its
      // stream, after message_start is sent: there LangChain reads no input tokens (a documented
      // limit; not streamed, the counts are exact).
      const pass = upstream === 'anthropic-messages';
      expect(acc.usage_metadata).toMatchObject(
        pass
          ? { input_tokens: 20, output_tokens: 7, input_token_details: { cache_read: 8 } }
          : { input_tokens: 0, output_tokens: 6 },
      );
    });

    it('tools: tool_use parsed into tool_calls, invoke and stream', async () => {
      mock.enqueue({ reply: { tool_calls: [weatherCall] } });
      const msg = await anthropic(model).bindTools([weatherTool]).invoke('weather in Oslo?');
      expect(msg.tool_calls).toEqual([
        expect.objectContaining({ id: 'call_w1', name: 'weather', args: { city: 'Oslo' } }),
      ]);
      expect(wireView(mock.requests[0]!).tools.map((t) => t.name)).toEqual(['weather']);
      mock.enqueue({ reply: { tool_calls: [weatherCall] } });
      const acc = await collect(await anthropic(model).bindTools([weatherTool]).stream('weather in Oslo?'));
      expect(acc.tool_calls).toEqual([
        expect.objectContaining({ id: 'call_w1', name: 'weather', args: { city: 'Oslo' } }),
      ]);
    });

    if (upstream === 'anthropic-messages') {
      it('a cache_control content block reaches Anthropic intact', async () => {
        mock.enqueue({ reply });
        const block = { type: 'text', text: 'a long shared prefix', cache_control: { type: 'ephemeral' } };
        await anthropic(model).invoke([
          new HumanMessage({ content: [block, { type: 'text', text: 'and the question' }] }),
        ]);
        expect(mock.requests[0]?.body.messages).toEqual([
          { role: 'user', content: [block, { type: 'text', text: 'and the question' }] },
        ]);
      });
    }
  });

  it('ChatAnthropic stream on a translated provider that counts the prompt up front (Gemini): input tokens in message_start', async () => {
    mock.enqueue({
      reply: { ...reply, usage: { prompt_tokens: 20, completion_tokens: 6, cached_tokens: 8 } },
    });
    const acc = await collect(await anthropic('test/gemini').stream('say hi'));
    expect(textOf(acc)).toBe(reply.text);
    expect(acc.usage_metadata).toMatchObject({
      input_tokens: 20,
      output_tokens: 6,
      total_tokens: 26,
      input_token_details: { cache_read: 8 },
    });
  });

  describe.each([
    { label: 'ChatOpenAI on test/gpt (pass-through)', make: () => openai('test/gpt') },
    { label: 'ChatOpenAI on test/claude (translated)', make: () => openai('test/claude') },
    {
      label: 'ChatOpenAI with useResponsesApi on test/claude (translated)',
      make: () => openai('test/claude', { useResponsesApi: true }),
    },
    { label: 'ChatAnthropic on test/claude (pass-through)', make: () => anthropic('test/claude') },
    { label: 'ChatAnthropic on test/gpt (translated)', make: () => anthropic('test/gpt') },
  ])('createAgent with $label', ({ make }) => {
    it('runs the tool loop: a tool call, its result upstream, the final answer', async () => {
      const runs: string[] = [];
      const weather = tool(
        async ({ city }: { city: string }) => {
          runs.push(city);
          return `sunny in ${city}`;
        },
        {
          name: 'weather',
          description: 'The weather of a city',
          schema: z.object({ city: z.string() }),
        },
      );
      mock.enqueue({ reply: { tool_calls: [weatherCall] } }, { reply: { text: 'It is sunny in Oslo.' } });
      const agent = createAgent({ model: make(), tools: [weather] });
      const result = await agent.invoke({ messages: [{ role: 'user', content: 'weather in Oslo?' }] });
      expect(runs).toEqual(['Oslo']);
      expect(mock.requests).toHaveLength(2);
      // The second request carries the call and the tool's result, in the upstream's own format.
      const turns = wireView(mock.requests[1]!).turns;
      expect(turns.map((t) => t.role)).toEqual(['user', 'assistant', 'user']);
      expect(turns[1]?.toolCalls).toEqual([
        expect.objectContaining({ id: 'call_w1', name: 'weather', args: { city: 'Oslo' } }),
      ]);
      expect(turns[2]?.toolResults).toEqual([expect.objectContaining({ id: 'call_w1' })]);
      expect(JSON.stringify(turns[2]?.toolResults[0]?.content)).toContain('sunny in Oslo');
      const last = result.messages.at(-1)!;
      expect(textOf(last)).toBe('It is sunny in Oslo.');
    });
  });

  it.each([
    { label: 'ChatOpenAI on test/claude', make: () => openai('test/claude') },
    { label: 'ChatAnthropic on test/gpt', make: () => anthropic('test/gpt') },
  ])('createAgent with a native responseFormat, $label: the structured response', async ({ make }) => {
    const report = { city: 'Oslo', weather: 'sunny' };
    mock.enqueue({ reply: { text: JSON.stringify(report) } });
    const schema = z.object({ city: z.string(), weather: z.string() });
    const agent = createAgent({ model: make(), tools: [], responseFormat: providerStrategy(schema) });
    const result = await agent.invoke({ messages: [{ role: 'user', content: 'weather in Oslo?' }] });
    expect(result.structuredResponse).toEqual(report);
    // The provider's own structured output: Anthropic's output_config.format, OpenAI's response_format.
    const body = mock.requests[0]!.body;
    expect(body.output_config?.format ?? body.response_format?.json_schema).toMatchObject({
      schema: { type: 'object', required: ['city', 'weather'] },
    });
  });

  describe("errors carry Gatehouse's message and status", () => {
    type Model = ChatOpenAI | ChatAnthropic;
    /** Every way a user calls a model: invoke, and a stream (its request is made when asked for). */
    const calls = (m: Model, input: string) => [
      () => m.invoke(input),
      async () => collect(await m.stream(input)),
    ];
    /** The clients of this page, on `model`, with `apiKey`. */
    const clients = (model: string, apiKey = gw.apiKey): Model[] => [
      openai(model, { apiKey }),
      openai(model, { apiKey, useResponsesApi: true }),
      anthropic(model, { apiKey }),
    ];

    it('an unknown model: a 404 naming it, nothing sent upstream', async () => {
      for (const m of clients('nobody/nothing-here')) {
        for (const call of calls(m, 'hi')) {
          const err = await call().then(
            () => null,
            (e: unknown) => e,
          );
          expect(err).toMatchObject({
            status: 404,
            message: expect.stringMatching(/Model nobody\/nothing-here not found/),
          });
        }
      }
      expect(mock.requests).toHaveLength(0);
    });

    it("a guardrail's content filter: a 403 naming the filter, nothing sent upstream", async () => {
      const mgmt = client(gw.url, gw.managementKey);
      const key = await mgmt('POST', '/keys', { name: 'langchain-guarded' });
      const g = await mgmt('POST', '/guardrails', {
        name: 'no codenames',
        content_filters: [{ pattern: 'project-nightingale', action: 'block', label: 'codename' }],
      });
      await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
        key_hashes: [key.body.data.hash],
      });
      for (const m of clients('test/claude', key.body.key)) {
        for (const call of calls(m, 'tell me about project-nightingale')) {
          const err = await call().then(
            () => null,
            (e: unknown) => e,
          );
          expect(err).toMatchObject({
            status: 403,
            message: expect.stringContaining('Blocked by content filter: codename'),
          });
        }
      }
      expect(mock.requests).toHaveLength(0);
    });
  });
});
