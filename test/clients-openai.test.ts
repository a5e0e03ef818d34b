/**
 * The `openai` client a user has installed — the 6.x line and the 7.x one `npm i openai` gives
 * today — through Gatehouse on a model served by OpenAI (passed through) and one served by
 * Anthropic (translated): chat completions (streamed and not, a tool loop, structured output with
 * `zodResponseFormat` and `chat.completions.parse`), responses (streamed and not, a function-tool
 * loop continued by `previous_response_id` on a stored response, `responses.parse`), embeddings,
 * models.list, and errors as the client's typed classes with Gatehouse's or the provider's message.
 */
import OpenAI6 from 'openai';
import * as zod6 from 'openai/helpers/zod';
import OpenAI7 from 'openai-v7';
import { ResponsesToolRunner } from 'openai-v7/helpers/responses-tool-runner';
import * as zod7 from 'openai-v7/helpers/zod';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { TestGateway } from './support/gateway.js';
import { type MockUpstream, type RecordedRequest, wireView } from './support/mock-upstream.js';
import { gatewayWithUpstreams } from './support/upstreams.js';

/**
 * Both lines, typed as the newest: the calls below are the same in each (what a user upgrading
 * keeps writing); a 6.x client is driven through 7.x's types.
 */
const CLIENTS = [
  { client: 'openai 6', OpenAI: OpenAI6 as unknown as typeof OpenAI7, zod: zod6 as unknown as typeof zod7 },
  { client: 'openai 7', OpenAI: OpenAI7, zod: zod7 },
];

/** Where each model lands upstream: its wire format for chat and for responses, and its id there. */
const TARGETS = [
  { model: 'test/gpt', chat: 'openai-chat', responses: 'openai-responses', upstream: 'gpt-x' },
  { model: 'test/claude', chat: 'anthropic-messages', responses: 'anthropic-messages', upstream: 'claude-x' },
] as const;

const USAGE = { prompt_tokens: 30, completion_tokens: 7, cached_tokens: 10 };
const REPLY = { text: 'Hello through the gateway.', usage: USAGE };
const CALL = {
  text: 'Let me look that up.',
  tool_calls: [{ id: 'call_w1', name: 'weather', arguments: { city: 'Oslo' } }],
  usage: { prompt_tokens: 25, completion_tokens: 9 },
};
const AFTER_CALL = { text: 'It is sunny in Oslo.', usage: { prompt_tokens: 45, completion_tokens: 6 } };
const CITY = { name: 'Oslo', population: 709037 };
/** A 1×1 PNG. */
const PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const City = z.object({ name: z.string(), population: z.number() });
const weatherParameters = {
  type: 'object',
  properties: { city: { type: 'string' } },
  required: ['city'],
  additionalProperties: false,
};

describe.each(CLIENTS)('$client through Gatehouse', ({ OpenAI, zod }) => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let openai: OpenAI7;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ gw, mock, stop } = await gatewayWithUpstreams());
    openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(() => stop?.());
  beforeEach(() => mock.reset());

  /** The upstream request `i`, checked to be in the format and model the target expects. */
  function upstream(i: number, format: string, model: string): RecordedRequest {
    const req = mock.requests[i];
    if (!req) throw new Error(`no upstream request ${i}`);
    expect(req.format).toBe(format);
    expect(req.model).toBe(model);
    return req;
  }

  /** The second request of a tool loop carried the question, the call and its result. */
  function expectToolTurns(req: RecordedRequest) {
    const turns = wireView(req).turns;
    expect(turns.map((t) => t.role)).toEqual(['user', 'assistant', 'user']);
    expect(turns[1]?.toolCalls).toEqual([
      expect.objectContaining({ id: 'call_w1', name: 'weather', args: { city: 'Oslo' } }),
    ]);
    expect(JSON.stringify(turns[2]?.toolResults)).toContain('sunny in Oslo');
  }

  describe.each(TARGETS)('$model', (t) => {
    it('chat.completions.create: text, finish reason and usage with cached tokens', async () => {
      mock.enqueue({ reply: REPLY });
      const res = await openai.chat.completions.create({
        model: t.model,
        messages: [{ role: 'user', content: 'Say hello.' }],
      });
      expect(res.object).toBe('chat.completion');
      expect(res.choices[0]).toMatchObject({
        finish_reason: 'stop',
        message: { role: 'assistant', content: REPLY.text },
      });
      expect(res.usage).toMatchObject({
        prompt_tokens: USAGE.prompt_tokens,
        completion_tokens: USAGE.completion_tokens,
        total_tokens: USAGE.prompt_tokens + USAGE.completion_tokens,
        prompt_tokens_details: { cached_tokens: USAGE.cached_tokens },
      });
      upstream(0, t.chat, t.upstream);
    });

    it('chat.completions.create streamed: the chunks join to the text, usage in the last one', async () => {
      mock.enqueue({ reply: REPLY });
      const stream = await openai.chat.completions.create({
        model: t.model,
        messages: [{ role: 'user', content: 'Say hello.' }],
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      let finish: string | null = null;
      let usage: OpenAI7.CompletionUsage | null | undefined;
      for await (const chunk of stream) {
        expect(chunk.object).toBe('chat.completion.chunk');
        text += chunk.choices[0]?.delta.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
        if (chunk.usage) usage = chunk.usage;
      }
      expect(text).toBe(REPLY.text);
      expect(finish).toBe('stop');
      expect(usage).toMatchObject({
        prompt_tokens: USAGE.prompt_tokens,
        completion_tokens: USAGE.completion_tokens,
      });
      expect(upstream(0, t.chat, t.upstream).stream).toBe(true);
    });

    it('chat.completions tool loop: the call comes back, its result goes up, then the answer', async () => {
      mock.enqueue({ reply: CALL }, { reply: AFTER_CALL });
      const tools: OpenAI7.ChatCompletionTool[] = [
        { type: 'function', function: { name: 'weather', parameters: weatherParameters } },
      ];
      const messages: OpenAI7.ChatCompletionMessageParam[] = [
        { role: 'user', content: 'What is the weather in Oslo?' },
      ];
      const first = await openai.chat.completions.create({ model: t.model, messages, tools });
      const choice = first.choices[0];
      expect(choice?.finish_reason).toBe('tool_calls');
      const call = choice?.message.tool_calls?.[0];
      if (call?.type !== 'function') throw new Error('no function call');
      expect(call).toMatchObject({ id: 'call_w1', function: { name: 'weather' } });
      expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Oslo' });

      messages.push(choice!.message, { role: 'tool', tool_call_id: call.id, content: 'sunny in Oslo' });
      const second = await openai.chat.completions.create({ model: t.model, messages, tools });
      expect(second.choices[0]?.message.content).toBe(AFTER_CALL.text);
      expect(wireView(upstream(0, t.chat, t.upstream)).tools.map((x) => x.name)).toEqual(['weather']);
      expectToolTurns(upstream(1, t.chat, t.upstream));
    });

    it('chat.completions.stream with a tool: the helper assembles the call', async () => {
      mock.enqueue({ reply: { ...CALL, argPieces: 4 } });
      const stream = openai.chat.completions.stream({
        model: t.model,
        messages: [{ role: 'user', content: 'What is the weather in Oslo?' }],
        tools: [{ type: 'function', function: { name: 'weather', parameters: weatherParameters } }],
      });
      const final = await stream.finalChatCompletion();
      const call = final.choices[0]?.message.tool_calls?.[0];
      if (call?.type !== 'function') throw new Error('no function call');
      expect(call.function.name).toBe('weather');
      expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Oslo' });
      expect(final.choices[0]?.finish_reason).toBe('tool_calls');
    });

    it('chat.completions.runTools runs a zod function to the final answer, streamed and not', async () => {
      const tools = () => [
        zod.zodFunction({
          name: 'weather',
          parameters: z.object({ city: z.string() }),
          function: async ({ city }: { city: string }) => `sunny in ${city}`,
        }),
      ];
      const messages: OpenAI7.ChatCompletionMessageParam[] = [
        { role: 'user', content: 'What is the weather in Oslo?' },
      ];
      mock.enqueue({ reply: CALL }, { reply: AFTER_CALL });
      expect(
        await openai.chat.completions.runTools({ model: t.model, messages, tools: tools() }).finalContent(),
      ).toBe(AFTER_CALL.text);
      expectToolTurns(upstream(1, t.chat, t.upstream));
      mock.enqueue({ reply: CALL }, { reply: AFTER_CALL });
      const streamed = openai.chat.completions.runTools({
        model: t.model,
        messages,
        tools: tools(),
        stream: true,
      });
      expect(await streamed.finalContent()).toBe(AFTER_CALL.text);
    });

    it('structured output: chat.completions.parse with zodResponseFormat', async () => {
      mock.enqueue({ reply: { text: JSON.stringify(CITY) } });
      const res = await openai.chat.completions.parse({
        model: t.model,
        messages: [{ role: 'user', content: 'The largest city of Norway.' }],
        response_format: zod.zodResponseFormat(City, 'city'),
      });
      expect(res.choices[0]?.message.parsed).toEqual(CITY);
      const up = upstream(0, t.chat, t.upstream).body;
      const schema =
        t.chat === 'openai-chat' ? up.response_format?.json_schema?.schema : up.output_config?.format?.schema;
      expect(JSON.stringify(schema)).toContain('"population"');
    });

    it('responses.create: output_text, usage, a stored response to retrieve', async () => {
      mock.enqueue({ reply: REPLY });
      const res = await openai.responses.create({ model: t.model, input: 'Say hello.' });
      expect(res).toMatchObject({ object: 'response', status: 'completed', store: true });
      expect(res.id).toMatch(/^resp_/);
      expect(res.output_text).toBe(REPLY.text);
      expect(res.usage).toMatchObject({
        input_tokens: USAGE.prompt_tokens,
        input_tokens_details: { cached_tokens: USAGE.cached_tokens },
        output_tokens: USAGE.completion_tokens,
        total_tokens: USAGE.prompt_tokens + USAGE.completion_tokens,
      });
      const again = await openai.responses.retrieve(res.id);
      expect(again.output_text).toBe(REPLY.text);
      upstream(0, t.responses, t.upstream);
    });

    it('responses streamed: every event in order, the deltas join to the text', async () => {
      mock.enqueue({ reply: REPLY }, { reply: REPLY });
      const stream = await openai.responses.create({ model: t.model, input: 'Say hello.', stream: true });
      const types: string[] = [];
      let text = '';
      let completed: OpenAI7.Responses.Response | undefined;
      for await (const e of stream) {
        types.push(e.type);
        if (e.type === 'response.output_text.delta') text += e.delta;
        if (e.type === 'response.completed') completed = e.response;
      }
      expect(types.slice(0, 2)).toEqual(['response.created', 'response.in_progress']);
      expect(types.at(-1)).toBe('response.completed');
      expect(text).toBe(REPLY.text);
      expect(completed?.usage).toMatchObject({
        input_tokens: USAGE.prompt_tokens,
        output_tokens: USAGE.completion_tokens,
      });

      const final = await openai.responses.stream({ model: t.model, input: 'Say hello.' }).finalResponse();
      expect(final.output_text).toBe(REPLY.text);
    });

    it.each([
      false,
      true,
    ])('responses function-tool loop continued by previous_response_id (streamed: %s)', async (streamed) => {
      mock.enqueue({ reply: CALL }, { reply: AFTER_CALL });
      const tools: OpenAI7.Responses.Tool[] = [
        { type: 'function', name: 'weather', parameters: weatherParameters, strict: true },
      ];
      const body = { model: t.model, tools, store: true } as const;
      const first = streamed
        ? await openai.responses.stream({ ...body, input: 'What is the weather in Oslo?' }).finalResponse()
        : await openai.responses.create({ ...body, input: 'What is the weather in Oslo?' });
      const call = first.output.find((o) => o.type === 'function_call');
      if (call?.type !== 'function_call') throw new Error('no function call');
      expect(call).toMatchObject({ call_id: 'call_w1', name: 'weather' });
      expect(JSON.parse(call.arguments)).toEqual({ city: 'Oslo' });

      const input: OpenAI7.Responses.ResponseInput = [
        { type: 'function_call_output', call_id: call.call_id, output: 'sunny in Oslo' },
      ];
      const second = streamed
        ? await openai.responses.stream({ ...body, previous_response_id: first.id, input }).finalResponse()
        : await openai.responses.create({ ...body, previous_response_id: first.id, input });
      expect(second).toMatchObject({ status: 'completed', previous_response_id: first.id });
      expect(second.output_text).toBe(AFTER_CALL.text);
      expectToolTurns(upstream(1, t.responses, t.upstream));
    });

    it('structured output: responses.parse with zodTextFormat', async () => {
      mock.enqueue({ reply: { text: JSON.stringify(CITY) } });
      const res = await openai.responses.parse({
        model: t.model,
        input: 'The largest city of Norway.',
        text: { format: zod.zodTextFormat(City, 'city') },
      });
      expect(res.output_parsed).toEqual(CITY);
      upstream(0, t.responses, t.upstream);
    });

    it('an upstream 4xx is the typed error with the provider message, the operator key nowhere', async () => {
      mock.enqueue({ status: 400, error: { message: 'prompt is too long: 999999 tokens' } });
      const err = await openai.chat.completions
        .create({ model: t.model, messages: [{ role: 'user', content: 'Say hello.' }] })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      const e = err as InstanceType<typeof OpenAI.BadRequestError>;
      expect(e.status).toBe(400);
      expect(e.message).toContain('prompt is too long');
      expect(JSON.stringify(e.error)).not.toContain('sk-operator');
      expect(mock.requests).toHaveLength(1);

      mock.enqueue({ status: 400, error: { message: 'prompt is too long: 999999 tokens' } });
      const rerr = await openai.responses
        .create({ model: t.model, input: 'Say hello.' })
        .catch((x: unknown) => x);
      expect(rerr).toBeInstanceOf(OpenAI.BadRequestError);
      expect((rerr as Error).message).toContain('prompt is too long');
    });
  });

  it.each(
    TARGETS,
  )('$model: the max effort and an original image detail (values openai 7 added)', async (t) => {
    mock.enqueue({ reply: REPLY }, { reply: REPLY });
    const image = { url: `data:image/png;base64,${PNG_BASE64}`, detail: 'original' as const };
    const chat = await openai.chat.completions.create({
      model: t.model,
      reasoning_effort: 'max',
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: image }] }],
    });
    expect(chat.choices[0]?.message.content).toBe(REPLY.text);
    const res = await openai.responses.create({
      model: t.model,
      reasoning: { effort: 'max' },
      input: [{ role: 'user', content: [{ type: 'input_image', image_url: image.url, detail: 'original' }] }],
    });
    expect(res.output_text).toBe(REPLY.text);
    const [first, second] = [upstream(0, t.chat, t.upstream).body, upstream(1, t.responses, t.upstream).body];
    if (t.model === 'test/claude') {
      // The largest thinking budget Gatehouse asks for.
      expect(first.thinking).toEqual({ type: 'enabled', budget_tokens: 32768 });
      expect(second.thinking).toEqual({ type: 'enabled', budget_tokens: 32768 });
    } else {
      expect(first.reasoning_effort).toBe('max');
      expect(second.reasoning).toEqual({ effort: 'max' });
    }
  });

  it.each(TARGETS)('$model: an allowed_tools choice leaves the model the listed tools only', async (t) => {
    mock.enqueue({ reply: CALL });
    const res = await openai.chat.completions.create({
      model: t.model,
      messages: [{ role: 'user', content: 'What is the weather in Oslo?' }],
      tools: [
        { type: 'function', function: { name: 'weather', parameters: weatherParameters } },
        { type: 'function', function: { name: 'clock', parameters: { type: 'object' } } },
      ],
      tool_choice: {
        type: 'allowed_tools',
        allowed_tools: { mode: 'required', tools: [{ type: 'function', function: { name: 'weather' } }] },
      },
    });
    expect(res.choices[0]?.finish_reason).toBe('tool_calls');
    const up = upstream(0, t.chat, t.upstream);
    const offered = wireView(up).tools.map((x) => x.name);
    expect(offered).toEqual(t.model === 'test/claude' ? ['weather'] : ['weather', 'clock']);
    if (t.model === 'test/claude') expect(up.body.tool_choice).toEqual({ type: 'any' });
  });

  it('a request Anthropic cannot answer as asked is a BadRequestError naming the field; nothing is sent', async () => {
    const err = await openai.chat.completions
      .create({ model: 'test/claude', messages: [{ role: 'user', content: 'Say hello.' }], logprobs: true })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as Error).message).toContain('logprobs');
    expect(mock.requests).toHaveLength(0);
  });

  it('an unknown model is a NotFoundError', async () => {
    const err = await openai.chat.completions
      .create({ model: 'test/nope', messages: [{ role: 'user', content: 'Say hello.' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as Error).message).toContain('test/nope');
  });

  it('a wrong key is an AuthenticationError', async () => {
    const other = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: 'sk-gh-v1-wrong', maxRetries: 0 });
    const err = await other.chat.completions
      .create({ model: 'test/gpt', messages: [{ role: 'user', content: 'Say hello.' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(mock.requests).toHaveLength(0);
  });

  it('embeddings.create: vectors in order, usage', async () => {
    mock.enqueue({
      embeddings: [
        [1, 0, 0],
        [0, 1, 0],
      ],
    });
    const res = await openai.embeddings.create({ model: 'test/embed', input: ['a', 'b'] });
    expect(res.data.map((d) => d.embedding)).toEqual([
      [1, 0, 0],
      [0, 1, 0],
    ]);
    expect(res.data.map((d) => d.index)).toEqual([0, 1]);
    expect(res.usage.prompt_tokens).toBeGreaterThan(0);
    expect(mock.requests.map((r) => [r.format, r.model, r.body.input])).toEqual([
      ['openai-embeddings', 'emb-x', ['a', 'b']],
    ]);
  });

  it('models.list: the catalog, read through the auto-paginating iterator', async () => {
    const models: OpenAI7.Model[] = [];
    for await (const m of openai.models.list()) models.push(m);
    expect(models.map((m) => m.id)).toEqual(
      expect.arrayContaining(['test/gpt', 'test/claude', 'test/embed']),
    );
    expect(models.find((m) => m.id === 'test/claude')).toMatchObject({
      object: 'model',
      owned_by: 'test',
      created: expect.any(Number),
    });
  });

  it('models.retrieve: one model by its id (the slash sent encoded), a typed 404 for an unknown one', async () => {
    expect(await openai.models.retrieve('test/claude')).toMatchObject({
      id: 'test/claude',
      object: 'model',
      owned_by: 'test',
    });
    const err = await openai.models.retrieve('test/no-such-model').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as Error).message).toContain('test/no-such-model');
  });
});

/** openai 7's own Responses tool loop, which checks every item of every turn it is given. */
describe('openai 7 ResponsesToolRunner through Gatehouse', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let openai: OpenAI7;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ gw, mock, stop } = await gatewayWithUpstreams());
    openai = new OpenAI7({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(() => stop?.());
  beforeEach(() => mock.reset());

  describe.each(TARGETS)('$model', (t) => {
    it.each([
      false,
      true,
    ])('runs the function and returns the final answer (streamed: %s)', async (stream) => {
      mock.enqueue({ reply: CALL }, { reply: AFTER_CALL });
      const runs: unknown[] = [];
      const runner = new ResponsesToolRunner({
        functions: [
          {
            tool: { type: 'function', name: 'weather', parameters: weatherParameters, strict: true },
            execute: (args) => {
              runs.push(args);
              return `sunny in ${String(args.city)}`;
            },
          },
        ],
      });
      const final = await runner.run(
        openai,
        { model: t.model, input: 'What is the weather in Oslo?' },
        { stream, maxSteps: 4 },
      );
      expect(runs).toEqual([{ city: 'Oslo' }]);
      expect(final.output_text).toBe(AFTER_CALL.text);
      expect(mock.requests).toHaveLength(2);
      const req = mock.requests[1] as RecordedRequest;
      expect(req.format).toBe(t.responses);
      const turns = wireView(req).turns;
      expect(turns.at(-1)?.toolResults.length).toBe(1);
      expect(JSON.stringify(turns.at(-1)?.toolResults)).toContain('sunny in Oslo');
    });
  });
});
