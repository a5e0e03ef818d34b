/**
 * `@openrouter/ai-sdk-provider` 3 — what `npm i ai @openrouter/ai-sdk-provider` installs today
 * (`ai` 7 with the provider's 3.x line) — through Gatehouse, on a model served by OpenAI (passed
 * through) and one served by Anthropic (translated). It drives generateText, streamText, a tool
 * loop, structured output, usage accounting, reasoning and its `reasoning_details` round-trip, an
 * image with a cache breakpoint and automatic caching, PDF and video inputs, a tool's
 * `eager_input_streaming`, a streamed `debug.echo_upstream_body`, embeddings, web search (the `web`
 * plugin and the provider's `webSearch` tool), OpenRouter's routing options (`provider`, `models`)
 * and errors with the real packages, and checks what the SDK reads back and what reached the mock
 * upstream. Its video model has no route (404); its image model is driven in media-image-apis.test.ts.
 * (The 2.x line with `ai` 6 is driven by clients-ai-sdk.test.ts.)
 */
import {
  APICallError,
  embed,
  embedMany,
  generateImage,
  generateObject,
  generateText,
  experimental_generateVideo as generateVideo,
  isStepCount,
  jsonSchema,
  Output,
  streamText,
  tool,
} from 'ai-v7';
import { createOpenRouter } from 'openrouter-ai-sdk-provider-v3';
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

describe('@openrouter/ai-sdk-provider 3 with AI SDK 7 through Gatehouse', () => {
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

  const openrouter = () =>
    createOpenRouter({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, fetch: recordingFetch });

  /** The x-gatehouse-dropped-fields of a call, as a list. */
  const droppedOf = (headers: Record<string, string> | undefined) =>
    (headers?.['x-gatehouse-dropped-fields'] ?? '').split(',').filter(Boolean);

  /** The upstream request `i`, in the model's own format and id. */
  function upstreamOf(id: Model, i = 0): RecordedRequest {
    const req = mock.requests[i];
    if (!req) throw new Error(`no upstream request ${i}`);
    expect(req.format).toBe(UPSTREAM[id].format);
    expect(req.model).toBe(UPSTREAM[id].model);
    return req;
  }

  /** A two-step loop: the tool ran once, the upstream saw the call and its result. */
  function expectLoop(id: Model, text: string, steps: number) {
    expect(text).toBe(STEP_2.text);
    expect(steps).toBe(2);
    expect(toolRuns).toEqual(['Oslo']);
    expect(mock.requests).toHaveLength(2);
    expect(wireView(upstreamOf(id, 0)).tools.map((t) => t.name)).toEqual(['weather']);
    const turns = wireView(upstreamOf(id, 1)).turns;
    expect(turns.map((t) => t.role)).toEqual(['user', 'assistant', 'user']);
    expect(turns[1]?.text).toBe(STEP_1.text);
    expect(turns[1]?.toolCalls).toEqual([
      expect.objectContaining({ id: 'call_w1', name: 'weather', args: { city: 'Oslo' } }),
    ]);
    expect(JSON.stringify(turns[2]?.toolResults)).toContain('sunny in Oslo');
  }

  describe.each(MODELS)('%s', (id) => {
    it('generateText: text, finish reason, usage with cached input', async () => {
      mock.enqueue({ reply: REPLY });
      const result = await generateText({ model: openrouter()(id), prompt: 'Say hello.' });
      expect(result.text).toBe(REPLY.text);
      expect(result.finishReason).toBe('stop');
      // Nothing the provider sends by default is lost on the way.
      expect(droppedOf(result.response.headers)).toEqual([]);
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

    it('streamText: deltas join to the text; usage comes without stream_options', async () => {
      mock.enqueue({ reply: REPLY });
      const errors: unknown[] = [];
      const result = streamText({
        model: openrouter()(id),
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
      // The provider's default ("compatible") asks for no stream_options: usage still comes, as on OpenRouter.
      expect(sent[0]).not.toHaveProperty('stream_options');
      expect(await result.finishReason).toBe('stop');
      expect(await result.usage).toMatchObject({
        inputTokens: USAGE.prompt_tokens,
        outputTokens: USAGE.completion_tokens,
        inputTokenDetails: { cacheReadTokens: USAGE.cached_tokens },
      });
      expect(upstreamOf(id).stream).toBe(true);
    });

    it('debug.echo_upstream_body on a stream: a first chunk with what was sent upstream', async () => {
      mock.enqueue({ reply: REPLY });
      const errors: unknown[] = [];
      const result = streamText({
        model: openrouter()(id, { debug: { echo_upstream_body: true } }),
        prompt: 'Say hello.',
        includeRawChunks: true,
        onError: ({ error }) => {
          errors.push(error);
        },
      });
      const raw: Record<string, any>[] = [];
      for await (const p of result.fullStream)
        if (p.type === 'raw') raw.push(p.rawValue as Record<string, any>);
      expect(errors).toEqual([]);
      expect(await result.text).toBe(REPLY.text);
      expect(raw[0]?.choices).toEqual([]);
      expect(raw[0]?.debug?.echo_upstream_body).toMatchObject({ model: UPSTREAM[id].model, stream: true });
      expect(raw.slice(1).some((c) => c.debug)).toBe(false);
      expect(upstreamOf(id).body).not.toHaveProperty('debug');
    });

    it('generateText tool loop (isStepCount): the call, its result, the final text', async () => {
      mock.enqueue({ reply: STEP_1 }, { reply: STEP_2 });
      const result = await generateText({
        model: openrouter()(id),
        tools: { weather },
        stopWhen: isStepCount(5),
        prompt: 'What is the weather in Oslo?',
      });
      expectLoop(id, result.text, result.steps.length);
      expect(result.steps[0]?.finishReason).toBe('tool-calls');
      expect(result.steps[0]?.toolCalls).toEqual([
        expect.objectContaining({ toolCallId: 'call_w1', toolName: 'weather', input: { city: 'Oslo' } }),
      ]);
      expect(result.totalUsage).toMatchObject({ inputTokens: 80, outputTokens: 15 });
    });

    it('streamText tool loop', async () => {
      mock.enqueue({ reply: STEP_1 }, { reply: STEP_2 });
      const errors: unknown[] = [];
      const result = streamText({
        model: openrouter()(id),
        tools: { weather },
        stopWhen: isStepCount(5),
        prompt: 'What is the weather in Oslo?',
        onError: ({ error }) => {
          errors.push(error);
        },
      });
      const text = await result.text;
      expect(errors).toEqual([]);
      expectLoop(id, text, (await result.steps).length);
      expect(await result.totalUsage).toMatchObject({ inputTokens: 80, outputTokens: 15 });
    });

    it("a tool's eager_input_streaming reaches Claude; OpenAI gets the tool without it, listed", async () => {
      mock.enqueue({ reply: STEP_1 }, { reply: STEP_2 });
      const eager = tool({ ...weather, providerOptions: { openrouter: { eager_input_streaming: true } } });
      const result = await generateText({
        model: openrouter()(id),
        tools: { weather: eager },
        stopWhen: isStepCount(5),
        prompt: 'What is the weather in Oslo?',
      });
      expectLoop(id, result.text, result.steps.length);
      expect(sent[0]?.tools[0]).toMatchObject({ eager_input_streaming: true });
      const [tool0] = upstreamOf(id).body.tools;
      if (id === 'test/claude') {
        expect(tool0).toMatchObject({ name: 'weather', eager_input_streaming: true });
        expect(droppedOf(result.steps[0]?.response.headers)).toEqual([]);
      } else {
        expect(tool0).not.toHaveProperty('eager_input_streaming');
        expect(droppedOf(result.steps[0]?.response.headers)).toEqual(['tools[0].eager_input_streaming']);
      }
    });

    it('structured output: Output.object and generateObject send a JSON schema and parse the answer', async () => {
      mock.enqueue({ reply: { text: JSON.stringify(CITY) } }, { reply: { text: JSON.stringify(CITY) } });
      const result = await generateText({
        model: openrouter()(id),
        output: Output.object({ schema: citySchema }),
        prompt: 'The largest city of Norway, with its population.',
      });
      expect(result.output).toEqual(CITY);
      const object = await generateObject({
        model: openrouter()(id),
        schema: citySchema,
        prompt: 'The largest city of Norway, with its population.',
      });
      expect(object.object).toEqual(CITY);
      expect(sent[1]?.response_format).toMatchObject({ type: 'json_schema', json_schema: { strict: true } });
      for (const i of [0, 1]) expect(JSON.stringify(upstreamOf(id, i).body)).toContain('"population"');
      if (id === 'test/claude') {
        expect(upstreamOf(id).body.output_config?.format).toMatchObject({ type: 'json_schema' });
      } else {
        expect(upstreamOf(id).body.response_format).toEqual(sent[0]?.response_format);
      }
    });

    it('usage accounting: providerMetadata.openrouter.usage carries tokens, cached tokens and cost', async () => {
      mock.enqueue({ reply: REPLY }, { reply: REPLY });
      const result = await generateText({
        model: openrouter()(id, { usage: { include: true } }),
        prompt: 'Say hello.',
      });
      expect(sent[0]?.usage).toEqual({ include: true });
      const cost = costOf(USAGE.prompt_tokens, USAGE.completion_tokens);
      const meta = result.providerMetadata?.openrouter as Record<string, any>;
      expect(meta.provider).toBe(UPSTREAM[id].provider);
      expect(meta.usage).toMatchObject({
        promptTokens: USAGE.prompt_tokens,
        completionTokens: USAGE.completion_tokens,
        totalTokens: USAGE.prompt_tokens + USAGE.completion_tokens,
        promptTokensDetails: { cachedTokens: USAGE.cached_tokens },
      });
      expect(meta.usage.cost).toBeCloseTo(cost, 12);
      // OpenRouter's own field is not passed on to the provider.
      expect(upstreamOf(id).body.usage).toBeUndefined();

      const streamed = streamText({
        model: openrouter()(id, { usage: { include: true } }),
        prompt: 'Say hello.',
      });
      expect(await streamed.text).toBe(REPLY.text);
      const streamedMeta = (await streamed.providerMetadata)?.openrouter as Record<string, any>;
      expect(streamedMeta.provider).toBe(UPSTREAM[id].provider);
      expect(streamedMeta.usage).toMatchObject({
        promptTokens: USAGE.prompt_tokens,
        completionTokens: USAGE.completion_tokens,
        promptTokensDetails: { cachedTokens: USAGE.cached_tokens },
      });
      expect(streamedMeta.usage.cost).toBeCloseTo(cost, 12);
    });

    it('cache writes are counted apart from cache reads', async () => {
      mock.enqueue({ reply: { text: 'ok', usage: { ...USAGE, cache_write_tokens: 8 } } });
      const result = await generateText({ model: openrouter()(id), prompt: 'Say hello.' });
      expect(result.usage.inputTokens).toBe(USAGE.prompt_tokens);
      expect(result.usage.inputTokenDetails).toMatchObject({
        cacheReadTokens: USAGE.cached_tokens,
        // Anthropic reports cache writes; OpenAI has none to report.
        cacheWriteTokens: id === 'test/claude' ? 8 : 0,
      });
    });

    it('reasoning (providerOptions.openrouter.reasoning): a thinking budget on Claude, an effort on OpenAI', async () => {
      mock.enqueue({
        reply: {
          text: 'Sunny.',
          reasoning: 'Think about Oslo.',
          usage: { prompt_tokens: 10, completion_tokens: 20, reasoning_tokens: 12 },
        },
      });
      const result = await generateText({
        model: openrouter()(id),
        providerOptions: { openrouter: { reasoning: { max_tokens: 2048 } } },
        prompt: 'Weather?',
      });
      expect(sent[0]?.reasoning).toEqual({ max_tokens: 2048 });
      expect(result.text).toBe('Sunny.');
      const up = upstreamOf(id).body;
      if (id === 'test/claude') {
        expect(up.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
        expect(result.reasoningText).toBe('Think about Oslo.');
        expect(result.providerMetadata?.openrouter?.reasoning_details).toEqual([
          expect.objectContaining({
            type: 'reasoning.text',
            text: 'Think about Oslo.',
            signature: 'mock-signature',
          }),
        ]);
      } else {
        expect(up.reasoning_effort).toBe('medium');
        expect(up).not.toHaveProperty('reasoning');
        expect(result.usage.outputTokenDetails.reasoningTokens).toBe(12);
      }
    });

    it('reasoning streamed through a tool loop: reasoning_details go back signed', async () => {
      mock.enqueue(
        { reply: { ...STEP_1, reasoning: 'The user wants the weather.', signature: 'sig-or3' } },
        { reply: STEP_2 },
      );
      const errors: unknown[] = [];
      const result = streamText({
        model: openrouter()(id, { reasoning: { effort: 'high' } }),
        tools: { weather },
        stopWhen: isStepCount(5),
        prompt: 'What is the weather in Oslo?',
        onError: ({ error }) => {
          errors.push(error);
        },
      });
      const text = await result.text;
      const steps = await result.steps;
      expect(errors).toEqual([]);
      expectLoop(id, text, steps.length);
      if (id === 'test/claude') {
        expect(steps[0]?.reasoningText).toBe('The user wants the weather.');
        const assistant = sent[1]?.messages?.find((m: { role: string }) => m.role === 'assistant');
        expect(assistant?.reasoning_details).toEqual([
          expect.objectContaining({ type: 'reasoning.text', signature: 'sig-or3' }),
        ]);
        expect(wireView(upstreamOf(id, 1)).turns[1]?.reasoning).toEqual([
          { text: 'The user wants the weather.', signature: 'sig-or3' },
        ]);
      } else {
        expect(upstreamOf(id).body.reasoning_effort).toBe('high');
      }
    });

    it('an image with a cache breakpoint, and automatic caching (cache_control on the call)', async () => {
      mock.enqueue({ reply: REPLY });
      const result = await generateText({
        model: openrouter()(id, { cache_control: { type: 'ephemeral' } }),
        instructions: 'You describe images.',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'file', mediaType: 'image/png', data: PNG },
              { type: 'text', text: 'What is this?' },
            ],
            providerOptions: { openrouter: { cacheControl: { type: 'ephemeral', ttl: '1h' } } },
          },
        ],
      });
      expect(result.text).toBe(REPLY.text);
      expect(sent[0]?.cache_control).toEqual({ type: 'ephemeral' });
      const up = upstreamOf(id);
      const view = wireView(up);
      expect(view.system).toBe('You describe images.');
      expect(view.turns[0]?.images).toEqual([{ mediaType: 'image/png', data: PNG_BASE64 }]);
      const body = JSON.stringify(up.body);
      if (id === 'test/claude') {
        expect(body).toContain('"cache_control":{"type":"ephemeral","ttl":"1h"}');
        expect(up.body.cache_control).toEqual({ type: 'ephemeral' });
      } else {
        // OpenAI caches by itself and takes no breakpoints: left out, listed.
        expect(body).not.toContain('cache_control');
        expect(droppedOf(result.response.headers)).toEqual(['cache_control']);
      }
    });

    it("the web plugin and the provider's webSearch tool search with the provider's own search", async () => {
      mock.enqueue({ reply: { text: 'Gatehouse 2 is out.' } }, { reply: { text: 'Gatehouse 2 is out.' } });
      const viaPlugin = await generateText({
        model: openrouter()(id, { plugins: [{ id: 'web', max_results: 2 }] }),
        prompt: 'What is new in Gatehouse?',
      });
      const viaTool = await generateText({
        model: openrouter()(id),
        tools: { web_search: openrouter().tools.webSearch({ maxResults: 2, engine: 'native' }) },
        prompt: 'What is new in Gatehouse?',
      });
      // The provider puts the tool's arguments beside its type (not under `parameters`).
      expect(sent[1]?.tools).toEqual([{ type: 'openrouter:web_search', max_results: 2, engine: 'native' }]);
      // No provider search takes a result count: listed as dropped, not silently lost.
      expect(droppedOf(viaTool.response.headers)).toContain('tools[0].max_results');
      for (const [i, result] of [viaPlugin, viaTool].entries()) {
        expect(result.text).toBe('Gatehouse 2 is out.');
        expect(result.sources.map((s) => (s.sourceType === 'url' ? s.url : ''))).toContain(
          'https://example.com/release',
        );
        const up = upstreamOf(id, i).body;
        if (id === 'test/claude') {
          expect(up.tools).toEqual([expect.objectContaining({ type: expect.stringMatching(/^web_search/) })]);
        } else {
          expect(up.web_search_options).toBeDefined();
        }
        expect(up).not.toHaveProperty('plugins');
      }
    });

    it('a PDF file part reaches the provider as a document', async () => {
      mock.enqueue({ reply: REPLY });
      const pdf = Buffer.from('%PDF-1.4 a tiny document');
      const result = await generateText({
        model: openrouter()(id),
        messages: [
          {
            role: 'user',
            content: [
              { type: 'file', mediaType: 'application/pdf', data: pdf, filename: 'doc.pdf' },
              { type: 'text', text: 'Summarise it.' },
            ],
          },
        ],
      });
      expect(result.text).toBe(REPLY.text);
      expect(sent[0]?.messages[0].content[0]).toMatchObject({ type: 'file', file: { filename: 'doc.pdf' } });
      const body = upstreamOf(id).body;
      const part = body.messages[0].content[0];
      if (id === 'test/claude') {
        expect(part).toMatchObject({
          type: 'document',
          source: { type: 'base64', media_type: 'application/pdf', data: pdf.toString('base64') },
        });
      } else {
        expect(part).toMatchObject({ type: 'file', file: { filename: 'doc.pdf' } });
      }
    });

    it('an upstream stream dying mid-way is an error the SDK reports, not a hang', async () => {
      mock.enqueue({ reply: { text: 'one two three four five six' }, dieAfterEvents: 3 });
      const errors: unknown[] = [];
      const result = streamText({
        model: openrouter()(id),
        prompt: 'Count.',
        maxRetries: 0,
        onError: ({ error }) => {
          errors.push(error);
        },
      });
      const parts: string[] = [];
      for await (const p of result.fullStream) parts.push(p.type);
      expect(parts).toContain('error');
      expect(errors.length).toBeGreaterThan(0);
      expect(parts.at(-1)).toBe('finish');
    });

    it("a video input: passed to OpenAI as sent (its answer is the provider's), a clear 400 for Claude", async () => {
      const result = await generateText({
        model: openrouter()(id),
        messages: [
          {
            role: 'user',
            content: [
              { type: 'file', mediaType: 'video/mp4', data: Buffer.from('not really a video') },
              { type: 'text', text: 'What happens?' },
            ],
          },
        ],
        maxRetries: 0,
      }).catch((e: unknown) => e);
      if (id === 'test/gpt') {
        expect(upstreamOf(id).body.messages[0].content[0]).toMatchObject({ type: 'video_url' });
        return;
      }
      expect(APICallError.isInstance(result)).toBe(true);
      expect((result as APICallError).statusCode).toBe(400);
      expect((result as APICallError).message).toContain('video input is not available');
      expect(mock.requests).toHaveLength(0);
    });

    it('an upstream 400 is an APICallError with the provider message, asked once', async () => {
      mock.enqueue({ status: 400, error: { message: 'prompt is too long: 999999 tokens' } });
      const err = await generateText({ model: openrouter()(id), prompt: 'Say hello.', maxRetries: 0 }).catch(
        (e: unknown) => e,
      );
      expect(APICallError.isInstance(err)).toBe(true);
      const e = err as APICallError;
      expect(e.statusCode).toBe(400);
      expect(e.message).toContain('prompt is too long');
      expect(e.responseBody).not.toContain('sk-operator');
      expect(mock.requests).toHaveLength(1);
    });
  });

  it("provider routing: provider.order picks the endpoint, models falls back, Gatehouse's errors are typed", async () => {
    mock.enqueue({ reply: REPLY });
    const ordered = await generateText({
      model: openrouter()('test/multi', { provider: { order: ['groq'], allow_fallbacks: false } }),
      prompt: 'Say hello.',
    });
    expect(ordered.text).toBe(REPLY.text);
    expect(ordered.providerMetadata?.openrouter?.provider).toBe('groq');
    expect(mock.requests.map((r) => r.model)).toEqual(['llama-multi']);
    expect(mock.requests[0]?.body).not.toHaveProperty('provider');

    // A price cap as a numeric string (the SDK types prices as number | string): only groq is cheap enough.
    mock.reset();
    mock.enqueue({ reply: REPLY });
    const capped = await generateText({
      model: openrouter()('test/multi', { provider: { max_price: { prompt: '0.75' } } }),
      prompt: 'Say hello.',
    });
    expect(capped.providerMetadata?.openrouter?.provider).toBe('groq');
    expect(mock.requests.map((r) => r.model)).toEqual(['llama-multi']);

    // `models`: the first model fails upstream, the next one answers.
    mock.reset();
    mock.enqueue({ status: 503, error: { message: 'overloaded' } }, { reply: REPLY });
    const fallback = await generateText({
      model: openrouter()('test/gpt'),
      // Per call: every key of providerOptions.openrouter goes into the body.
      providerOptions: { openrouter: { models: ['test/gpt', 'test/claude'] } },
      prompt: 'Say hello.',
      maxRetries: 0,
    });
    expect(fallback.text).toBe(REPLY.text);
    expect(fallback.response.modelId).toBe('test/claude');
    expect(mock.requests.map((r) => r.model)).toEqual(['gpt-x', 'claude-x']);

    // A routing preference no endpoint meets: Gatehouse's own refusal, as the SDK's typed error.
    mock.reset();
    const err = await generateText({
      model: openrouter()('test/gpt', { provider: { only: ['groq'] } }),
      prompt: 'Say hello.',
      maxRetries: 0,
    }).catch((e: unknown) => e);
    expect(APICallError.isInstance(err)).toBe(true);
    expect((err as APICallError).statusCode).toBeGreaterThanOrEqual(400);
    expect((err as APICallError).statusCode).toBeLessThan(500);
    expect((err as APICallError).message).toMatch(/groq|provider/i);
    expect(mock.requests).toHaveLength(0);
  });

  it('embed and embedMany report the provider and the cost', async () => {
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
    expect(mock.requests.map((r) => [r.format, r.model, r.body.input])).toEqual([
      ['openai-embeddings', 'emb-x', ['hello']],
      ['openai-embeddings', 'emb-x', ['a', 'b']],
    ]);
  });

  // Images are forwarded to the media service (test/media-image-apis.test.ts), which this gateway runs without.
  it('the image model without a media service, and the video model: a clean 404, nothing sent upstream', async () => {
    const image = await generateImage({
      model: openrouter().imageModel('test/gpt'),
      prompt: 'A lighthouse.',
      maxRetries: 0,
    }).catch((e: unknown) => e);
    const video = await generateVideo({
      model: openrouter().videoModel('test/gpt'),
      prompt: 'A lighthouse at dusk.',
      maxRetries: 0,
    }).catch((e: unknown) => e);
    for (const err of [image, video]) {
      expect(APICallError.isInstance(err)).toBe(true);
      expect((err as APICallError).statusCode).toBe(404);
    }
    expect(mock.requests).toHaveLength(0);
  });
});
