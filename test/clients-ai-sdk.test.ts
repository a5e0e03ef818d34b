/**
 * The Vercel AI SDK's other providers through Gatehouse: `@ai-sdk/anthropic`, `@ai-sdk/openai`'s
 * chat model and embeddings, `@ai-sdk/openai-compatible` and `@openrouter/ai-sdk-provider`, each
 * on an Anthropic-format model (`test/claude`) and an OpenAI-format one (`test/gpt`), so every
 * provider is tried both passed through and translated. Each drives `generateText`, `streamText`,
 * a multi-step tool loop and structured output with the real package and its own response
 * parsing, and checks what the SDK reads back and what reached the mock upstream.
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { createOpenRouter } from '@openrouter/ai-sdk-provider';
import {
  APICallError,
  embed,
  embedMany,
  generateText,
  jsonSchema,
  type LanguageModel,
  Output,
  stepCountIs,
  streamText,
  tool,
} from 'ai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  CITY,
  CITY_SCHEMA,
  costOf,
  MODELS,
  type Model,
  PNG,
  PNG_BASE64,
  REPLY,
  STEP_1,
  STEP_2,
  UPSTREAM,
  USAGE,
  WEATHER_INPUT_SCHEMA,
} from './support/ai-sdk-fixtures.js';
import type { TestGateway } from './support/gateway.js';
import { type MockUpstream, type RecordedRequest, wireView } from './support/mock-upstream.js';
import { gatewayWithUpstreams } from './support/upstreams.js';

const citySchema = jsonSchema<{ name: string; population: number }>(CITY_SCHEMA);

describe('Vercel AI SDK providers through Gatehouse', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let stop: () => Promise<void>;
  /** The bodies the SDK sent to Gatehouse, in order, and their headers. */
  let sent: Record<string, any>[];
  let sentHeaders: Headers[];
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
    sentHeaders.push(new Headers(init?.headers));
    return fetch(url, init);
  };

  beforeAll(async () => {
    ({ gw, mock, stop } = await gatewayWithUpstreams());
  });
  afterAll(() => stop?.());
  beforeEach(() => {
    mock.reset();
    sent = [];
    sentHeaders = [];
    toolRuns.length = 0;
  });

  /** The one upstream request of a single-step call, in the model's own format and id. */
  function upstreamOf(model: Model): RecordedRequest {
    expect(mock.requests).toHaveLength(1);
    const req = mock.requests[0] as RecordedRequest;
    expect(req.format).toBe(UPSTREAM[model].format);
    expect(req.model).toBe(UPSTREAM[model].model);
    return req;
  }

  /** A two-step loop: the tool ran once, the upstream saw the call and its result. */
  function expectLoop(text: string, steps: number) {
    expect(text).toBe(STEP_2.text);
    expect(steps).toBe(2);
    expect(toolRuns).toEqual(['Oslo']);
    expect(mock.requests).toHaveLength(2);
    const first = wireView(mock.requests[0] as RecordedRequest);
    expect(first.tools.map((t) => t.name)).toEqual(['weather']);
    const turns = wireView(mock.requests[1] as RecordedRequest).turns;
    expect(turns.map((t) => t.role)).toEqual(['user', 'assistant', 'user']);
    expect(turns[1]?.text).toBe(STEP_1.text);
    expect(turns[1]?.toolCalls).toEqual([
      expect.objectContaining({ id: 'call_w1', name: 'weather', args: { city: 'Oslo' } }),
    ]);
    expect(JSON.stringify(turns[2]?.toolResults)).toContain('sunny in Oslo');
  }

  /** The checks every provider gets on both models: text, streaming, the tool loop, structured output. */
  function commonCases(modelOf: (id: Model) => LanguageModel) {
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
        expect(wireView(upstreamOf(id)).turns).toEqual([
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
        expect(upstreamOf(id).stream).toBe(true);
      });

      it('generateText tool loop: the call, its result, the final text, usage over both steps', async () => {
        mock.enqueue({ reply: STEP_1 }, { reply: STEP_2 });
        const result = await generateText({
          model: modelOf(id),
          tools: { weather },
          stopWhen: stepCountIs(5),
          prompt: 'What is the weather in Oslo?',
        });
        expectLoop(result.text, result.steps.length);
        const [first] = result.steps;
        expect(first?.finishReason).toBe('tool-calls');
        expect(first?.toolCalls).toEqual([
          expect.objectContaining({ toolCallId: 'call_w1', toolName: 'weather', input: { city: 'Oslo' } }),
        ]);
        expect(first?.toolResults).toEqual([
          expect.objectContaining({ toolCallId: 'call_w1', output: 'sunny in Oslo' }),
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
          stopWhen: stepCountIs(5),
          prompt: 'What is the weather in Oslo?',
          onError: ({ error }) => {
            errors.push(error);
          },
        });
        const text = await result.text;
        expect(errors).toEqual([]);
        expectLoop(text, (await result.steps).length);
        expect((await result.steps)[0]?.toolCalls).toEqual([
          expect.objectContaining({ toolCallId: 'call_w1', toolName: 'weather', input: { city: 'Oslo' } }),
        ]);
        expect(await result.totalUsage).toMatchObject({ inputTokens: 80, outputTokens: 15 });
      });
    });
  }

  /**
   * A stream the upstream cuts off half-way ends in an error the SDK reports, not a hang. (Gatehouse
   * ends it as OpenRouter does: an error chunk with `finish_reason: 'error'`; `@ai-sdk/openai`'s
   * chat model reads that chunk's choices and not its error, so it sees the finish reason only.)
   */
  function brokenStreamCase(modelOf: (id: Model) => LanguageModel, reads: 'error' | 'finish' = 'error') {
    it.each(MODELS)('%s: an upstream stream dying mid-way is an error the SDK reports', async (id) => {
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
      expect(parts.at(-1)).toBe('finish');
      if (reads === 'error') {
        expect(parts).toContain('error');
        expect(errors).toHaveLength(1);
      } else {
        expect(errors).toEqual([]);
        expect(await result.finishReason).toBe('other');
      }
    });
  }

  /** The JSON schema a structured-output call put in the upstream request, in that provider's field. */
  function upstreamSchema(id: Model): unknown {
    const body = upstreamOf(id).body;
    return id === 'test/claude' ? body.output_config?.format : body.response_format?.json_schema?.schema;
  }

  /**
   * An upstream refusal reaches the caller as the SDK's APICallError, its message parsed from the
   * error body by the SDK's own error schema (not the raw text), and the upstream is asked once.
   */
  function errorCase(modelOf: (id: Model) => LanguageModel) {
    it.each(MODELS)('%s: an upstream 400 is an APICallError with the provider message', async (id) => {
      mock.enqueue({ status: 400, error: { message: 'prompt is too long: 999999 tokens' } });
      const err = await generateText({ model: modelOf(id), prompt: 'Say hello.', maxRetries: 0 }).catch(
        (e: unknown) => e,
      );
      expect(APICallError.isInstance(err)).toBe(true);
      const e = err as APICallError;
      expect(e.statusCode).toBe(400);
      expect(e.message).toContain('prompt is too long');
      expect(e.message).not.toMatch(/^\{/);
      expect(e.responseBody).not.toContain('sk-operator');
      expect(mock.requests).toHaveLength(1);
    });
  }

  /** Structured output as a JSON-schema response format (Anthropic: `output_config.format`). */
  function structuredTextCases(modelOf: (id: Model) => LanguageModel) {
    it.each(MODELS)('%s: Output.object parses the JSON answer', async (id) => {
      mock.enqueue({ reply: { text: JSON.stringify(CITY) } });
      const result = await generateText({
        model: modelOf(id),
        output: Output.object({ schema: citySchema }),
        prompt: 'The largest city of Norway, with its population.',
      });
      expect(result.output).toEqual(CITY);
      expect(sent[0]?.response_format).toMatchObject({ type: 'json_schema' });
      expect(JSON.stringify(upstreamSchema(id))).toContain('"population"');
      if (id === 'test/claude') expect(upstreamSchema(id)).toMatchObject({ type: 'json_schema' });
    });
  }

  const sdkKey = () => gw.apiKey;

  // -------------------------------------------------------------------------------------------
  describe('@ai-sdk/anthropic', () => {
    const anthropic = () =>
      createAnthropic({ baseURL: `${gw.url}/api/v1`, apiKey: sdkKey(), fetch: recordingFetch });
    commonCases((id) => anthropic()(id));
    errorCase((id) => anthropic()(id));
    brokenStreamCase((id) => anthropic()(id));

    it.each(
      MODELS,
    )('%s: the SDK sends its key as x-api-key; the upstream gets the operator key', async (id) => {
      mock.enqueue({ reply: REPLY });
      await generateText({ model: anthropic()(id), prompt: 'Say hello.' });
      expect(sentHeaders[0]?.get('x-api-key')).toBe(gw.apiKey);
      expect(sentHeaders[0]?.get('authorization')).toBeNull();
      const up = upstreamOf(id);
      expect(wireView(up).auth?.key).toMatch(/^sk-operator-/);
      expect(JSON.stringify(up.headers)).not.toContain(gw.apiKey);
    });

    it.each(MODELS)('%s: structured output through the forced json tool', async (id) => {
      mock.enqueue({ reply: { tool_calls: [{ name: 'json', arguments: CITY }] } });
      const result = await generateText({
        model: anthropic()(id),
        output: Output.object({ schema: citySchema }),
        prompt: 'The largest city of Norway, with its population.',
      });
      expect(result.output).toEqual(CITY);
      // The SDK forces its `json` tool (`any` with that one tool).
      expect(sent[0]?.tool_choice).toMatchObject({ type: 'any' });
      expect(sent[0]?.tools.map((t: { name: string }) => t.name)).toEqual(['json']);
      const up = upstreamOf(id);
      expect(wireView(up).tools.map((t) => t.name)).toEqual(['json']);
    });

    it.each(MODELS)('%s: structured output as output_format', async (id) => {
      mock.enqueue({ reply: { text: JSON.stringify(CITY) } });
      const result = await generateText({
        model: anthropic()(id),
        output: Output.object({ schema: citySchema }),
        providerOptions: { anthropic: { structuredOutputMode: 'outputFormat' } },
        prompt: 'The largest city of Norway, with its population.',
      });
      expect(result.output).toEqual(CITY);
      expect(sent[0]?.output_config?.format).toMatchObject({ type: 'json_schema' });
      // Passed through to Anthropic as it was sent; translated to OpenAI's response_format.
      expect(JSON.stringify(upstreamSchema(id))).toContain('"population"');
      if (id === 'test/gpt')
        expect(upstreamOf(id).body.response_format).toMatchObject({ type: 'json_schema' });
    });

    it.each(
      MODELS,
    )('%s: providerMetadata.anthropic carries Anthropic usage, cache reads apart', async (id) => {
      mock.enqueue({ reply: REPLY });
      const result = await generateText({ model: anthropic()(id), prompt: 'Say hello.' });
      expect(result.providerMetadata?.anthropic?.usage).toMatchObject({
        input_tokens: USAGE.prompt_tokens - USAGE.cached_tokens,
        cache_read_input_tokens: USAGE.cached_tokens,
        output_tokens: USAGE.completion_tokens,
      });
      expect(result.usage.inputTokenDetails.noCacheTokens).toBe(USAGE.prompt_tokens - USAGE.cached_tokens);
    });

    it.each(MODELS)('%s: an image and a cache breakpoint from the prompt', async (id) => {
      mock.enqueue({ reply: REPLY });
      const result = await generateText({
        model: anthropic()(id),
        system: 'You describe images.',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'image', image: PNG, mediaType: 'image/png' },
              { type: 'text', text: 'What is this?' },
            ],
            providerOptions: { anthropic: { cacheControl: { type: 'ephemeral' } } },
          },
        ],
      });
      expect(result.text).toBe(REPLY.text);
      const view = wireView(upstreamOf(id));
      expect(view.system).toBe('You describe images.');
      expect(view.turns[0]?.images).toEqual([{ mediaType: 'image/png', data: PNG_BASE64 }]);
      expect(view.turns[0]?.text).toBe('What is this?');
      const body = JSON.stringify(upstreamOf(id).body);
      if (id === 'test/claude') expect(body).toContain('"cache_control":{"type":"ephemeral"}');
      else expect(body).not.toContain('cache_control');
    });

    it("a server tool reaches Claude as it is; an OpenAI model searches with OpenAI's own search", async () => {
      const tools = { web_search: anthropic().tools.webSearch_20250305({ maxUses: 2 }) };
      mock.enqueue({ reply: REPLY });
      const ok = await generateText({ model: anthropic()('test/claude'), tools, prompt: 'News?' });
      expect(ok.text).toBe(REPLY.text);
      expect(upstreamOf('test/claude').body.tools).toEqual([
        expect.objectContaining({ type: 'web_search_20250305', name: 'web_search', max_uses: 2 }),
      ]);
      mock.reset();
      mock.enqueue({ reply: REPLY });
      const translated = await generateText({
        model: anthropic()('test/gpt'),
        tools,
        prompt: 'News?',
        maxRetries: 0,
      });
      expect(translated.text).toBe(REPLY.text);
      expect(upstreamOf('test/gpt').body.web_search_options).toEqual({});
      // The AI SDK reads the search's pages as sources.
      expect(translated.sources.map((s) => (s.sourceType === 'url' ? s.url : null))).toContain(
        'https://example.com/release',
      );
    });

    describe.each(MODELS)('%s: thinking', (id) => {
      const thinking = { anthropic: { thinking: { type: 'enabled', budgetTokens: 1024 } } };
      const run = {
        generateText: async () => {
          const r = await generateText({
            model: anthropic()(id),
            tools: { weather },
            stopWhen: stepCountIs(5),
            providerOptions: thinking,
            prompt: 'What is the weather in Oslo?',
          });
          return { text: r.text, steps: r.steps };
        },
        streamText: async () => {
          const errors: unknown[] = [];
          const r = streamText({
            model: anthropic()(id),
            tools: { weather },
            stopWhen: stepCountIs(5),
            providerOptions: thinking,
            prompt: 'What is the weather in Oslo?',
            onError: ({ error }) => {
              errors.push(error);
            },
          });
          const out = { text: await r.text, steps: await r.steps };
          expect(errors).toEqual([]);
          return out;
        },
      };
      it.each(
        Object.keys(run) as (keyof typeof run)[],
      )('%s: the reasoning comes back, and goes back with its signature', async (how) => {
        mock.enqueue(
          { reply: { ...STEP_1, reasoning: 'The user wants the weather.', signature: 'sig-1' } },
          { reply: STEP_2 },
        );
        const { text, steps } = await run[how]();
        expect(sent[0]?.thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
        expect(steps[0]?.reasoningText).toBe('The user wants the weather.');
        expectLoop(text, steps.length);
        const [firstUp, secondUp] = mock.requests as RecordedRequest[];
        if (id === 'test/claude') {
          expect(firstUp?.body.thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
          expect(wireView(secondUp as RecordedRequest).turns[1]?.reasoning).toEqual([
            { text: 'The user wants the weather.', signature: 'sig-1' },
          ]);
        } else {
          // A 1024-token budget is OpenAI's low effort.
          expect(firstUp?.body.reasoning_effort).toBe('low');
        }
      });
    });
  });

  // -------------------------------------------------------------------------------------------
  describe('@ai-sdk/openai chat model', () => {
    const openai = () =>
      createOpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: sdkKey(), fetch: recordingFetch });
    commonCases((id) => openai().chat(id));
    errorCase((id) => openai().chat(id));
    brokenStreamCase((id) => openai().chat(id), 'finish');
    structuredTextCases((id) => openai().chat(id));

    it('embed and embedMany', async () => {
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

  // -------------------------------------------------------------------------------------------
  describe('@ai-sdk/openai-compatible', () => {
    const compatible = () =>
      createOpenAICompatible({
        baseURL: `${gw.url}/api/v1`,
        name: 'gatehouse',
        apiKey: sdkKey(),
        includeUsage: true,
        fetch: recordingFetch,
      });
    commonCases((id) => compatible().chatModel(id));
    errorCase((id) => compatible().chatModel(id));
    brokenStreamCase((id) => compatible().chatModel(id));
    structuredTextCases((id) =>
      createOpenAICompatible({
        baseURL: `${gw.url}/api/v1`,
        name: 'gatehouse',
        apiKey: sdkKey(),
        supportsStructuredOutputs: true,
        fetch: recordingFetch,
      }).chatModel(id),
    );

    it.each(MODELS)('%s: reasoning_effort asked, reasoning read back, sent back in the loop', async (id) => {
      mock.enqueue({ reply: { ...STEP_1, reasoning: 'The user wants the weather.' } }, { reply: STEP_2 });
      const result = await generateText({
        model: compatible().chatModel(id),
        tools: { weather },
        stopWhen: stepCountIs(5),
        providerOptions: { gatehouse: { reasoningEffort: 'low' } },
        prompt: 'What is the weather in Oslo?',
      });
      expect(sent[0]?.reasoning_effort).toBe('low');
      expect(result.steps[0]?.reasoningText).toBe('The user wants the weather.');
      expectLoop(result.text, result.steps.length);
      // The SDK sends the reasoning back as `reasoning_content` on its assistant message.
      expect(sent[1]?.messages[1]).toMatchObject({
        role: 'assistant',
        reasoning_content: 'The user wants the weather.',
      });
      const first = mock.requests[0] as RecordedRequest;
      if (id === 'test/claude') expect(first.body.thinking).toMatchObject({ type: 'enabled' });
      else expect(first.body.reasoning_effort).toBe('low');
    });

    it('embed and embedMany', async () => {
      mock.enqueue(
        { embeddings: [[0.5, 0.5]] },
        {
          embeddings: [
            [1, 0],
            [0, 1],
          ],
        },
      );
      const one = await embed({ model: compatible().embeddingModel('test/embed'), value: 'hello' });
      expect(one.embedding).toEqual([0.5, 0.5]);
      const many = await embedMany({ model: compatible().embeddingModel('test/embed'), values: ['a', 'b'] });
      expect(many.embeddings).toHaveLength(2);
      expect(mock.requests.map((r) => r.model)).toEqual(['emb-x', 'emb-x']);
    });
  });

  // -------------------------------------------------------------------------------------------
  describe('@openrouter/ai-sdk-provider', () => {
    const openrouter = () =>
      createOpenRouter({ baseURL: `${gw.url}/api/v1`, apiKey: sdkKey(), fetch: recordingFetch });
    commonCases((id) => openrouter().chat(id));
    errorCase((id) => openrouter().chat(id));
    brokenStreamCase((id) => openrouter().chat(id));
    structuredTextCases((id) => openrouter().chat(id));

    describe.each(MODELS)('%s', (id) => {
      it('usage accounting: providerMetadata.openrouter.usage carries tokens and cost', async () => {
        mock.enqueue({ reply: REPLY });
        const result = await generateText({
          model: openrouter().chat(id, { usage: { include: true } }),
          prompt: 'Say hello.',
        });
        expect(sent[0]?.usage).toEqual({ include: true });
        const usage = result.providerMetadata?.openrouter?.usage as Record<string, any>;
        expect(usage).toMatchObject({
          promptTokens: USAGE.prompt_tokens,
          completionTokens: USAGE.completion_tokens,
          totalTokens: USAGE.prompt_tokens + USAGE.completion_tokens,
          promptTokensDetails: { cachedTokens: USAGE.cached_tokens },
        });
        expect(usage.cost).toBeCloseTo(costOf(USAGE.prompt_tokens, USAGE.completion_tokens), 12);
        expect(result.providerMetadata?.openrouter?.provider).toBe(
          id === 'test/claude' ? 'anthropic' : 'openai',
        );
        // OpenRouter's own field is not passed on to the provider.
        expect(upstreamOf(id).body.usage).toBeUndefined();
      });

      it('usage accounting, streamed', async () => {
        mock.enqueue({ reply: REPLY });
        const result = streamText({
          model: openrouter().chat(id, { usage: { include: true } }),
          prompt: 'Say hello.',
        });
        expect(await result.text).toBe(REPLY.text);
        const usage = (await result.providerMetadata)?.openrouter?.usage as Record<string, any>;
        expect(usage).toMatchObject({
          promptTokens: USAGE.prompt_tokens,
          completionTokens: USAGE.completion_tokens,
          promptTokensDetails: { cachedTokens: USAGE.cached_tokens },
        });
        expect(usage.cost).toBeCloseTo(costOf(USAGE.prompt_tokens, USAGE.completion_tokens), 12);
      });

      it('reasoning: asked with a `reasoning` budget, read back as text (Claude) and tokens (OpenAI)', async () => {
        mock.enqueue({
          reply: {
            text: 'Sunny.',
            reasoning: 'Think about Oslo.',
            usage: { prompt_tokens: 10, completion_tokens: 20, reasoning_tokens: 12 },
          },
        });
        const result = await generateText({
          model: openrouter().chat(id, { reasoning: { max_tokens: 2048 }, usage: { include: true } }),
          prompt: 'Weather?',
        });
        expect(sent[0]?.reasoning).toEqual({ max_tokens: 2048 });
        expect(result.text).toBe('Sunny.');
        const up = upstreamOf(id);
        if (id === 'test/claude') {
          expect(up.body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
          expect(result.reasoningText).toBe('Think about Oslo.');
          expect(result.providerMetadata?.openrouter?.reasoning_details).toEqual([
            expect.objectContaining({
              type: 'reasoning.text',
              text: 'Think about Oslo.',
              signature: 'mock-signature',
            }),
          ]);
        } else {
          // OpenAI takes an effort, not a budget (and sends no reasoning text on Chat Completions).
          expect(up.body.reasoning_effort).toBe('medium');
          expect(up.body).not.toHaveProperty('reasoning');
          expect(result.usage.outputTokenDetails.reasoningTokens).toBe(12);
        }
      });

      it('reasoning streamed through a tool loop', async () => {
        mock.enqueue(
          { reply: { ...STEP_1, reasoning: 'The user wants the weather.', signature: 'sig-or' } },
          { reply: STEP_2 },
        );
        const errors: unknown[] = [];
        const result = streamText({
          model: openrouter().chat(id, { reasoning: { effort: 'high' } }),
          tools: { weather },
          stopWhen: stepCountIs(5),
          prompt: 'What is the weather in Oslo?',
          onError: ({ error }) => {
            errors.push(error);
          },
        });
        const text = await result.text;
        const steps = await result.steps;
        expect(errors).toEqual([]);
        expectLoop(text, steps.length);
        if (id === 'test/claude') {
          expect(steps[0]?.reasoningText).toBe('The user wants the weather.');
          // The SDK sends reasoning_details back; the signature reaches Anthropic again.
          expect(wireView(mock.requests[1] as RecordedRequest).turns[1]?.reasoning).toEqual([
            { text: 'The user wants the weather.', signature: 'sig-or' },
          ]);
        } else {
          expect(mock.requests[0]?.body.reasoning_effort).toBe('high');
        }
      });

      it('an image and a cache breakpoint (providerOptions.openrouter.cacheControl)', async () => {
        mock.enqueue({ reply: REPLY });
        const result = await generateText({
          model: openrouter().chat(id),
          messages: [
            { role: 'system', content: 'You describe images.' },
            {
              role: 'user',
              content: [
                { type: 'image', image: PNG, mediaType: 'image/png' },
                { type: 'text', text: 'What is this?' },
              ],
              providerOptions: { openrouter: { cacheControl: { type: 'ephemeral' } } },
            },
          ],
        });
        expect(result.text).toBe(REPLY.text);
        const view = wireView(upstreamOf(id));
        expect(view.system).toBe('You describe images.');
        expect(view.turns[0]?.images).toEqual([{ mediaType: 'image/png', data: PNG_BASE64 }]);
        const body = JSON.stringify(upstreamOf(id).body);
        if (id === 'test/claude') expect(body).toContain('"cache_control":{"type":"ephemeral"}');
        else expect(body).not.toContain('cache_control');
      });

      it('OpenRouter routing fields are accepted', async () => {
        mock.enqueue({ reply: REPLY });
        const result = await generateText({
          model: openrouter().chat(id, {
            models: [id],
            provider: { order: [id === 'test/claude' ? 'anthropic' : 'openai'], allow_fallbacks: false },
            plugins: [],
            user: 'user-42',
            extraBody: { transforms: ['middle-out'] },
          }),
          prompt: 'Say hello.',
        });
        expect(result.text).toBe(REPLY.text);
        expect(sent[0]).toMatchObject({ models: [id], transforms: ['middle-out'] });
        const up = upstreamOf(id).body;
        for (const f of ['models', 'provider', 'transforms', 'plugins']) expect(up).not.toHaveProperty(f);
      });
    });

    it('the legacy completion model: POST /completions, passed through, its text and usage back', async () => {
      mock.enqueue({ reply: { text: 'Hello there.' } }, { reply: { text: 'Streamed hello.' } });
      const { text, usage } = await generateText({
        model: openrouter().completion('test/gpt'),
        prompt: 'Say hello.',
        maxRetries: 0,
      });
      expect(text).toBe('Hello there.');
      expect(usage.inputTokens).toBeGreaterThan(0);
      expect(mock.requests[0]?.path).toBe('/openai/v1/completions');
      expect(mock.requests[0]?.body.prompt).toContain('Say hello.');
      // Streamed, this provider's completion model sends its text deltas without opening a text
      // part (no text-start), which AI SDK 6 leaves out of `text`: the deltas themselves arrive.
      const streamed = streamText({
        model: openrouter().completion('test/gpt'),
        prompt: 'Again.',
        maxRetries: 0,
      });
      const deltas: string[] = [];
      for await (const part of streamed.fullStream) if (part.type === 'text-delta') deltas.push(part.text);
      expect(deltas.join('')).toBe('Streamed hello.');
    });

    it('embed and embedMany', async () => {
      mock.enqueue(
        { embeddings: [[0.25, 0.75]] },
        {
          embeddings: [
            [1, 0],
            [0, 1],
          ],
        },
      );
      const model = openrouter().textEmbeddingModel('test/embed');
      const one = await embed({ model, value: 'hello' });
      expect(one.embedding).toEqual([0.25, 0.75]);
      expect(one.usage.tokens).toBeGreaterThan(0);
      const meta = one.providerMetadata?.openrouter as Record<string, any>;
      expect(meta.provider).toBe('openai');
      expect(meta.usage.promptTokens).toBe(one.usage.tokens);
      expect(meta.usage.cost).toBeCloseTo(costOf(one.usage.tokens, 0), 12);
      const many = await embedMany({ model, values: ['a', 'b'] });
      expect(many.embeddings).toEqual([
        [1, 0],
        [0, 1],
      ]);
      expect(mock.requests.map((r) => r.model)).toEqual(['emb-x', 'emb-x']);
    });
  });
});
