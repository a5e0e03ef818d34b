/**
 * AI SDK 7 — what `npm i ai @ai-sdk/openai @ai-sdk/anthropic` installs today (`ai` 7,
 * `@ai-sdk/openai` 4, `@ai-sdk/anthropic` 4) — through Gatehouse: `@ai-sdk/openai`'s default
 * Responses model and its `.chat()` model, and `@ai-sdk/anthropic` (Messages), each on a model
 * served by OpenAI and one served by Anthropic, so every provider is tried passed through and
 * translated. Each drives generateText, streamText, a multi-step tool loop (`isStepCount`),
 * structured output (`Output.object`, `generateObject`) and the top-level `reasoning` option with
 * the real packages, and checks what the SDK reads back and what reached the mock upstream.
 * (The 6.x line is driven by clients-ai-sdk.test.ts and stored-responses-ai-sdk.test.ts.)
 */

import { createAnthropic } from 'ai-sdk-anthropic-v4';
import { createOpenAI } from 'ai-sdk-openai-v4';
import {
  APICallError,
  embed,
  embedMany,
  generateObject,
  generateText,
  isStepCount,
  jsonSchema,
  type LanguageModel,
  Output,
  streamText,
  tool,
} from 'ai-v7';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  CITY,
  CITY_SCHEMA,
  MODELS,
  type Model,
  PNG,
  REPLY,
  STEP_1,
  STEP_2,
  USAGE,
  WEATHER_INPUT_SCHEMA,
} from './support/ai-sdk-fixtures.js';
import type { TestGateway } from './support/gateway.js';
import {
  type MockFormat,
  type MockUpstream,
  type RecordedRequest,
  wireView,
} from './support/mock-upstream.js';
import { gatewayWithUpstreams } from './support/upstreams.js';

const citySchema = jsonSchema<{ name: string; population: number }>(CITY_SCHEMA);
/** Which API the SDK model calls Gatehouse with. */
type Api = 'responses' | 'chat' | 'messages';
/** The upstream wire format a call lands in: OpenAI's model takes /responses as it is. */
const upstreamFormat = (api: Api, model: Model): MockFormat =>
  model === 'test/claude' ? 'anthropic-messages' : api === 'responses' ? 'openai-responses' : 'openai-chat';
const upstreamModel = (model: Model) => (model === 'test/claude' ? 'claude-x' : 'gpt-x');

describe('AI SDK 7 through Gatehouse', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let stop: () => Promise<void>;
  /** The bodies the SDK sent to Gatehouse, in order. */
  let sent: Record<string, any>[];
  const toolRuns: string[] = [];
  const weather = tool({
    description: 'The weather of a city',
    inputSchema: jsonSchema<{ city: string }>(WEATHER_INPUT_SCHEMA),
    execute: async ({ city }) => {
      toolRuns.push(city);
      return `sunny in ${city}`;
    },
  });
  const recordingFetch: typeof fetch = async (url, init) => {
    if (typeof init?.body === 'string') sent.push(JSON.parse(init.body));
    return fetch(url, init);
  };

  beforeAll(async () => {
    ({ gw, mock, stop } = await gatewayWithUpstreams());
  });
  afterAll(() => stop?.());
  beforeEach(() => {
    mock.reset();
    sent = [];
    toolRuns.length = 0;
  });

  const openai = () =>
    createOpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, fetch: recordingFetch });
  const anthropic = () =>
    createAnthropic({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, fetch: recordingFetch });
  const PROVIDERS: { name: string; api: Api; modelOf: (id: Model) => LanguageModel }[] = [
    { name: '@ai-sdk/openai 4 (Responses, the default)', api: 'responses', modelOf: (id) => openai()(id) },
    { name: '@ai-sdk/openai 4 .chat()', api: 'chat', modelOf: (id) => openai().chat(id) },
    { name: '@ai-sdk/anthropic 4', api: 'messages', modelOf: (id) => anthropic()(id) },
  ];

  /** The upstream request `i`, in the format and model the call should land in. */
  function upstreamOf(api: Api, id: Model, i = 0): RecordedRequest {
    const req = mock.requests[i];
    if (!req) throw new Error(`no upstream request ${i}`);
    expect(req.format).toBe(upstreamFormat(api, id));
    expect(req.model).toBe(upstreamModel(id));
    return req;
  }

  /** A two-step loop: the tool ran once, the upstream saw the call and its result. */
  function expectLoop(api: Api, id: Model, text: string, steps: number) {
    expect(text).toBe(STEP_2.text);
    expect(steps).toBe(2);
    expect(toolRuns).toEqual(['Oslo']);
    expect(mock.requests).toHaveLength(2);
    expect(wireView(upstreamOf(api, id, 0)).tools.map((t) => t.name)).toEqual(['weather']);
    const turns = wireView(upstreamOf(api, id, 1)).turns;
    expect(turns.map((t) => t.role)).toEqual(['user', 'assistant', 'user']);
    expect(turns[1]?.text).toBe(STEP_1.text);
    expect(turns[1]?.toolCalls).toEqual([
      expect.objectContaining({ id: 'call_w1', name: 'weather', args: { city: 'Oslo' } }),
    ]);
    expect(JSON.stringify(turns[2]?.toolResults)).toContain('sunny in Oslo');
  }

  describe.each(PROVIDERS)('$name', ({ api, modelOf }) => {
    describe.each(MODELS)('%s', (id) => {
      it('generateText: text, finish reason, usage with cached input', async () => {
        mock.enqueue({ reply: REPLY });
        const result = await generateText({ model: modelOf(id), prompt: 'Say hello.' });
        expect(result.text).toBe(REPLY.text);
        expect(result.finishReason).toBe('stop');
        expect(result.usage).toMatchObject({
          inputTokens: USAGE.prompt_tokens,
          outputTokens: USAGE.completion_tokens,
          totalTokens: USAGE.prompt_tokens + USAGE.completion_tokens,
          inputTokenDetails: { cacheReadTokens: USAGE.cached_tokens },
        });
        expect(wireView(upstreamOf(api, id)).turns).toEqual([
          expect.objectContaining({ role: 'user', text: 'Say hello.' }),
        ]);
      });

      it('streamText: deltas join to the text, usage and finish reason at the end', async () => {
        mock.enqueue({ reply: REPLY });
        const errors: unknown[] = [];
        const result = streamText({
          model: modelOf(id),
          prompt: 'Say hello.',
          onError: ({ error }) => {
            errors.push(error);
          },
        });
        const deltas: string[] = [];
        for await (const d of result.textStream) deltas.push(d);
        expect(errors).toEqual([]);
        expect(deltas.length).toBeGreaterThan(1);
        expect(deltas.join('')).toBe(REPLY.text);
        expect(await result.finishReason).toBe('stop');
        expect(await result.usage).toMatchObject({
          inputTokens: USAGE.prompt_tokens,
          outputTokens: USAGE.completion_tokens,
          inputTokenDetails: { cacheReadTokens: USAGE.cached_tokens },
        });
        expect(upstreamOf(api, id).stream).toBe(true);
      });

      it('generateText tool loop: the call, its result, the final text, usage over both steps', async () => {
        mock.enqueue({ reply: STEP_1 }, { reply: STEP_2 });
        const result = await generateText({
          model: modelOf(id),
          tools: { weather },
          stopWhen: isStepCount(5),
          prompt: 'What is the weather in Oslo?',
        });
        expectLoop(api, id, result.text, result.steps.length);
        const [first] = result.steps;
        expect(first?.finishReason).toBe('tool-calls');
        expect(first?.toolCalls).toEqual([
          expect.objectContaining({ toolCallId: 'call_w1', toolName: 'weather', input: { city: 'Oslo' } }),
        ]);
        expect(result.finishReason).toBe('stop');
        expect(result.totalUsage).toMatchObject({ inputTokens: 80, outputTokens: 15 });
      });

      it('streamText tool loop', async () => {
        mock.enqueue({ reply: STEP_1 }, { reply: STEP_2 });
        const errors: unknown[] = [];
        const result = streamText({
          model: modelOf(id),
          tools: { weather },
          stopWhen: isStepCount(5),
          prompt: 'What is the weather in Oslo?',
          onError: ({ error }) => {
            errors.push(error);
          },
        });
        const text = await result.text;
        expect(errors).toEqual([]);
        expectLoop(api, id, text, (await result.steps).length);
        expect(await result.totalUsage).toMatchObject({ inputTokens: 80, outputTokens: 15 });
      });

      it('structured output: Output.object and generateObject parse the JSON answer', async () => {
        // @ai-sdk/anthropic forces its `json` tool unless told otherwise; the OpenAI models ask for
        // a JSON-schema response format.
        const answer =
          api === 'messages'
            ? { tool_calls: [{ name: 'json', arguments: CITY }] }
            : { text: JSON.stringify(CITY) };
        mock.enqueue({ reply: answer }, { reply: answer });
        const result = await generateText({
          model: modelOf(id),
          output: Output.object({ schema: citySchema }),
          prompt: 'The largest city of Norway, with its population.',
        });
        expect(result.output).toEqual(CITY);
        const object = await generateObject({
          model: modelOf(id),
          schema: citySchema,
          prompt: 'The largest city of Norway, with its population.',
        });
        expect(object.object).toEqual(CITY);
        expect(object.usage.inputTokens).toBeGreaterThan(0);
        upstreamOf(api, id, 1);
        expect(JSON.stringify(mock.requests[0]?.body)).toContain('"population"');
      });

      it('an upstream 400 is an APICallError with the provider message, asked once', async () => {
        mock.enqueue({ status: 400, error: { message: 'prompt is too long: 999999 tokens' } });
        const err = await generateText({ model: modelOf(id), prompt: 'Say hello.', maxRetries: 0 }).catch(
          (e: unknown) => e,
        );
        expect(APICallError.isInstance(err)).toBe(true);
        const e = err as APICallError;
        expect(e.statusCode).toBe(400);
        expect(e.message).toContain('prompt is too long');
        expect(e.responseBody).not.toContain('sk-operator');
        expect(mock.requests).toHaveLength(1);
      });

      it('the top-level reasoning option reaches the provider as its own setting', async () => {
        mock.enqueue({
          reply: {
            text: 'Sunny.',
            reasoning: 'Think about Oslo.',
            usage: { prompt_tokens: 10, completion_tokens: 20, reasoning_tokens: 12 },
          },
        });
        const result = await generateText({
          model: modelOf(id),
          reasoning: 'high',
          // The OpenAI provider sends reasoning only for ids it knows as reasoning models.
          providerOptions: { openai: { forceReasoning: true } },
          prompt: 'Weather?',
        });
        expect(result.text).toBe('Sunny.');
        const asked = sent[0] ?? {};
        const up = upstreamOf(api, id).body;
        if (api === 'messages') {
          // The SDK turns the level into a thinking budget; OpenAI takes it as an effort.
          expect(asked.thinking).toMatchObject({ type: 'enabled', budget_tokens: expect.any(Number) });
          if (id === 'test/claude') expect(up.thinking).toEqual(asked.thinking);
          else expect(up.reasoning_effort).toEqual(expect.any(String));
        } else {
          const effort = api === 'responses' ? asked.reasoning?.effort : asked.reasoning_effort;
          expect(effort).toBe('high');
          if (id === 'test/claude') expect(up.thinking).toMatchObject({ type: 'enabled' });
          else if (api === 'responses') expect(up.reasoning).toMatchObject({ effort: 'high' });
          else expect(up.reasoning_effort).toBe('high');
        }
        // The chat model reads no reasoning text (OpenAI's Chat Completions sends none).
        if (api !== 'chat') expect(result.reasoningText).toBe('Think about Oslo.');
        if (id === 'test/gpt') expect(result.usage.outputTokenDetails.reasoningTokens).toBe(12);
      });
    });
  });

  describe.each(PROVIDERS)('$name: failures and reasoning state', ({ api, modelOf }) => {
    it.each(MODELS)('%s: an upstream stream dying mid-way ends the stream, not a hang', async (id) => {
      mock.enqueue({ reply: { text: 'one two three four five six' }, dieAfterEvents: 3 });
      const errors: unknown[] = [];
      const result = streamText({
        model: modelOf(id),
        prompt: 'Count.',
        maxRetries: 0,
        onError: ({ error }) => {
          errors.push(error);
        },
      });
      const parts: string[] = [];
      for await (const p of result.fullStream) parts.push(p.type);
      // The chat model reads the error chunk's finish reason, not its error (as in AI SDK 6).
      if (api === 'chat') {
        expect(parts.at(-1)).toBe('finish');
        expect(await result.finishReason).toBe('other');
        return;
      }
      expect(parts).toContain('error');
      // The Responses model reports both closing events (response.failed, then error), each with
      // the upstream's message: neither fails the SDK's event schema. (Before any output it throws
      // instead, for its retries: then the stream ends at that error.)
      expect(errors.length).toBeGreaterThan(0);
      for (const e of errors) expect((e as Error).message).toMatch(/^upstream connection failed/);
      if (api === 'messages') expect(parts.at(-1)).toBe('finish');
    });

    it.each(MODELS)('%s: thinking in a tool loop comes back and goes back signed', async (id) => {
      mock.enqueue(
        { reply: { ...STEP_1, reasoning: 'The user wants the weather.', signature: 'sig-7' } },
        { reply: STEP_2 },
      );
      const result = await generateText({
        model: modelOf(id),
        tools: { weather },
        stopWhen: isStepCount(5),
        reasoning: 'low',
        providerOptions: { openai: { forceReasoning: true } },
        prompt: 'What is the weather in Oslo?',
      });
      expectLoop(api, id, result.text, result.steps.length);
      // OpenAI's Chat Completions carries no reasoning text, so the chat model has none to send back.
      if (id !== 'test/claude' || api === 'chat') return;
      expect(result.steps[0]?.reasoningText).toBe('The user wants the weather.');
      const second = upstreamOf(api, id, 1);
      expect(second.body.thinking).toMatchObject({ type: 'enabled' });
      expect(wireView(second).turns[1]?.reasoning).toEqual([
        { text: 'The user wants the weather.', signature: 'sig-7' },
      ]);
    });
  });

  /** The x-gatehouse-dropped-fields of a call, as a list. */
  const droppedOf = (headers: Record<string, string> | undefined) =>
    (headers?.['x-gatehouse-dropped-fields'] ?? '').split(',').filter(Boolean);

  // What the 7.x providers send that the 6.x ones did not.
  describe.each(PROVIDERS)('$name: the new settings', ({ api, modelOf }) => {
    describe.each(MODELS)('%s', (id) => {
      it.each(['none', 'max'] as const)('reasoning: %s', async (level) => {
        mock.enqueue({ reply: REPLY });
        const result = await generateText({
          model: modelOf(id),
          reasoning: level,
          providerOptions: {
            openai: { forceReasoning: true },
            // @ai-sdk/anthropic sends a thinking budget unless it knows the model takes an effort.
            ...(level === 'max' ? { anthropic: { effort: 'max' } } : {}),
          },
          prompt: 'Say hello.',
        });
        expect(result.text).toBe(REPLY.text);
        const up = upstreamOf(api, id).body;
        if (level === 'none') {
          expect(up.reasoning_effort ?? up.reasoning?.effort ?? 'none').toBe('none');
          expect(up.thinking?.type ?? 'disabled').toBe('disabled');
        } else if (id === 'test/claude') {
          // Claude takes max natively on /messages, else as the largest thinking budget.
          if (api === 'messages') expect(up.output_config).toEqual({ effort: 'max' });
          else expect(up.thinking).toEqual({ type: 'enabled', budget_tokens: 32768 });
        } else {
          expect(api === 'responses' ? up.reasoning?.effort : up.reasoning_effort).toBe('max');
        }
      });

      it("an image with OpenAI's original detail", async () => {
        mock.enqueue({ reply: REPLY });
        const result = await generateText({
          model: modelOf(id),
          messages: [
            {
              role: 'user',
              content: [
                {
                  type: 'file',
                  mediaType: 'image/png',
                  data: PNG,
                  providerOptions: { openai: { imageDetail: 'original' } },
                },
                { type: 'text', text: 'What is this?' },
              ],
            },
          ],
        });
        expect(result.text).toBe(REPLY.text);
        expect(wireView(upstreamOf(api, id)).turns[0]?.images).toHaveLength(1);
      });
    });
  });

  describe.each(PROVIDERS.filter((p) => p.api !== 'messages'))('$name: explicit prompt caching', ({
    api,
    modelOf,
  }) => {
    it.each(MODELS)('%s: the breakpoint caches on Claude, reaches OpenAI as it is', async (id) => {
      mock.enqueue({ reply: REPLY });
      const result = await generateText({
        model: modelOf(id),
        messages: [
          {
            role: 'user',
            content: [
              {
                type: 'text',
                text: 'A long document.',
                providerOptions: { openai: { promptCacheBreakpoint: { mode: 'explicit' } } },
              },
            ],
          },
          { role: 'user', content: 'Summarise it.' },
        ],
        providerOptions: { openai: { promptCacheOptions: { mode: 'explicit', ttl: '30m' } } },
      });
      expect(result.text).toBe(REPLY.text);
      const body = JSON.stringify(upstreamOf(api, id).body);
      if (id === 'test/claude') {
        expect(body).toContain('"cache_control":{"type":"ephemeral"}');
        expect(droppedOf(result.response.headers)).toEqual(['prompt_cache_options']);
      } else {
        expect(body).toContain('"prompt_cache_breakpoint":{"mode":"explicit"}');
        expect(body).toContain('"prompt_cache_options":{"mode":"explicit","ttl":"30m"}');
      }
    });
  });

  it.each(
    MODELS,
  )('@ai-sdk/openai 4 Responses on %s: allowedTools leaves the model the listed tools only', async (id) => {
    mock.enqueue({ reply: STEP_1 }, { reply: STEP_2 });
    const clock = tool({
      description: 'The time in a city',
      inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } } }),
      execute: async () => 'noon',
    });
    const result = await generateText({
      model: openai()(id),
      tools: { weather, clock },
      stopWhen: isStepCount(5),
      providerOptions: { openai: { allowedTools: { toolNames: ['weather'], mode: 'required' } } },
      prompt: 'What is the weather in Oslo?',
    });
    expect(result.steps[0]?.toolCalls.map((c) => c.toolName)).toEqual(['weather']);
    expect(sent[0]?.tool_choice).toEqual({
      type: 'allowed_tools',
      mode: 'required',
      tools: [{ type: 'function', name: 'weather' }],
    });
    const up = upstreamOf('responses', id).body;
    if (id === 'test/claude') {
      // Claude gets the allowed tool alone, and must call one.
      expect(wireView(upstreamOf('responses', id)).tools.map((t) => t.name)).toEqual(['weather']);
      expect(up.tool_choice).toEqual({ type: 'any' });
    } else {
      expect(up.tools.map((t: { name: string }) => t.name)).toEqual(['weather', 'clock']);
      expect(up.tool_choice).toEqual(sent[0]?.tool_choice);
    }
  });

  it.each(
    MODELS,
  )('@ai-sdk/anthropic 4 on %s: fallbacks, compaction and a task budget are passed to Claude, listed elsewhere', async (id) => {
    mock.enqueue({ reply: REPLY });
    const result = await generateText({
      model: anthropic()(id),
      providerOptions: {
        anthropic: {
          fallbacks: 'default',
          compaction: { type: 'summarize' },
          taskBudget: { type: 'tokens', total: 50000, remaining: 40000 },
        },
      },
      prompt: 'Say hello.',
    });
    expect(result.text).toBe(REPLY.text);
    const up = upstreamOf('messages', id).body;
    if (id === 'test/claude') {
      expect(up).toMatchObject({ fallbacks: 'default', compaction: { type: 'summarize' } });
      expect(up.output_config?.task_budget).toMatchObject({ total: 50000 });
    } else {
      expect(droppedOf(result.response.headers)).toEqual(
        expect.arrayContaining(['compaction', 'fallbacks', 'output_config.task_budget']),
      );
    }
  });

  it.each(
    MODELS,
  )('@ai-sdk/anthropic 4 message threads on %s: a continue sends only the new turn', async (id) => {
    mock.enqueue({ reply: { text: 'first answer' } }, { reply: { text: 'second answer' } });
    const first = await generateText({
      model: anthropic()(id),
      system: 'Be brief.',
      prompt: 'first question',
      providerOptions: { anthropic: { thread: { type: 'create' } } },
    });
    const second = await generateText({
      model: anthropic()(id),
      messages: [{ role: 'user', content: 'second question' }],
      providerOptions: { anthropic: { thread: { type: 'continue', previousMessageId: first.response.id } } },
    });
    expect(second.text).toBe('second answer');
    expect(sent[1]?.thread).toEqual({ type: 'continue', previous_message_id: first.response.id });
    expect(sent[1]?.messages).toHaveLength(1);
    const upstream = JSON.stringify(mock.requests[1]?.body);
    if (id === 'test/claude') {
      // Anthropic's API holds it: the continue goes as sent.
      expect(mock.requests[1]?.body.thread).toEqual(sent[1]?.thread);
      expect(upstream).not.toContain('first question');
    } else {
      // Gatehouse holds it: the provider gets the whole conversation.
      for (const text of ['Be brief.', 'first question', 'first answer', 'second question'])
        expect(upstream).toContain(text);
      expect(upstream).not.toContain('"thread"');
    }
  });

  it('@ai-sdk/openai 4: embed and embedMany', async () => {
    mock.enqueue(
      { embeddings: [[0.1, 0.2, 0.3]] },
      {
        embeddings: [
          [1, 0, 0],
          [0, 1, 0],
        ],
      },
    );
    const one = await embed({ model: openai().embedding('test/embed'), value: 'hello' });
    expect(one.embedding).toEqual([0.1, 0.2, 0.3]);
    expect(one.usage.tokens).toBeGreaterThan(0);
    const many = await embedMany({ model: openai().embedding('test/embed'), values: ['a', 'b'] });
    expect(many.embeddings).toEqual([
      [1, 0, 0],
      [0, 1, 0],
    ]);
    expect(mock.requests.map((r) => [r.format, r.model, r.body.input])).toEqual([
      ['openai-embeddings', 'emb-x', ['hello']],
      ['openai-embeddings', 'emb-x', ['a', 'b']],
    ]);
  });
});
