import { OpenRouter } from '@openrouter/sdk';
import type * as models from '@openrouter/sdk/models';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestGateway } from './support/gateway.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { gatewayWithUpstreams } from './support/upstreams.js';

/**
 * Every inference operation of the official `@openrouter/sdk` that Gatehouse serves, called with
 * the SDK itself and its response validation on: chat.send and responses.send (streaming and
 * not, beta.responses.send and callModel included), embeddings.generate and
 * generations.getGeneration. The SDK throws on a body that fails its schema; stream events and
 * output items that fail theirs arrive as `UNKNOWN` instead, so each test also asserts none did.
 * Targets: the development provider and, through the mock upstream, an OpenAI and an Anthropic
 * provider (their real wire formats).
 */

const script = (s: object) => `gatehouse:${JSON.stringify(s)}`;
/** Every priced model here costs $1 per million prompt tokens and $2 per million completion tokens. */
const costOf = (prompt: number, completion: number) => (prompt * 1 + completion * 2) / 1e6;

/** Events or items the SDK could not parse come back with this type instead of their own. */
const UNKNOWN = 'UNKNOWN';

/** The SDK types each send as "a JSON result or an event stream": the one the request asked for. */
const isStream = (r: unknown): boolean => typeof r === 'object' && r !== null && Symbol.asyncIterator in r;
function body<R>(r: R): Exclude<R, AsyncIterable<unknown>> {
  if (isStream(r)) throw new Error('expected a JSON body, got an event stream');
  return r as Exclude<R, AsyncIterable<unknown>>;
}
function events<R>(r: R): Extract<R, AsyncIterable<unknown>> {
  if (!isStream(r)) throw new Error('expected an event stream, got a JSON body');
  return r as Extract<R, AsyncIterable<unknown>>;
}

describe('the official OpenRouter SDK against Gatehouse, response validation on', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let sdk: OpenRouter;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    // Default settings: no credits are needed (GATEHOUSE_CREDITS=off).
    ({ gw, mock, stop } = await gatewayWithUpstreams());
    sdk = new OpenRouter({
      serverURL: `${gw.url}/api/v1`,
      apiKey: gw.apiKey,
      retryConfig: { strategy: 'none' },
    });
  });
  afterAll(() => stop?.());
  beforeEach(() => mock.reset());

  const reply = { text: 'upstream says hi', usage: { prompt_tokens: 20, completion_tokens: 6 } };
  /** What each target answers to the prompt 'say hi to the sdk', and the usage it reports. */
  /**
   * `chatLane`: /chat/completions to an OpenAI provider passes through — the answer is OpenAI's
   * own (its id and model), with OpenRouter's fields added.
   */
  const targets = [
    { model: 'gatehouse/echo', text: 'say hi to the sdk', prompt: 5, completion: 5, upstream: false },
    { model: 'test/gpt', text: reply.text, prompt: 20, completion: 6, upstream: true, chatLane: 'gpt-x' },
    { model: 'test/claude', text: reply.text, prompt: 20, completion: 6, upstream: true },
  ];
  const prompt = 'say hi to the sdk';

  describe.each(targets)('$model', (t) => {
    beforeEach(() => {
      if (t.upstream) mock.enqueue({ reply, times: 2 });
    });

    it('chat.send, not streamed: text, usage with cost, the generation id', async () => {
      const res = body(
        await sdk.chat.send({
          chatRequest: { model: t.model, messages: [{ role: 'user', content: prompt }] },
        }),
      );
      expect(res.id).toMatch(t.chatLane ? /^chatcmpl-/ : /^gen-/);
      expect(res.model).toBe(t.chatLane ?? t.model);
      // Whichever id the answer carries finds its generation.
      const gen = await sdk.generations.getGeneration({ id: res.id });
      expect(gen.data.id).toMatch(/^gen-/);
      expect(res.systemFingerprint === null || typeof res.systemFingerprint === 'string').toBe(true);
      expect(res.choices[0]?.message.content).toBe(t.text);
      expect(res.choices[0]?.finishReason).toBe('stop');
      expect(res.usage).toMatchObject({
        promptTokens: t.prompt,
        completionTokens: t.completion,
        totalTokens: t.prompt + t.completion,
        isByok: false,
      });
      expect(res.usage?.cost).toBeCloseTo(costOf(t.prompt, t.completion), 12);
    });

    it('chat.send, streamed: deltas join to the text, the last chunk carries usage with cost', async () => {
      const stream = events(
        await sdk.chat.send({
          chatRequest: { model: t.model, messages: [{ role: 'user', content: prompt }], stream: true },
        }),
      );
      let text = '';
      let usage: models.ChatUsage | undefined;
      const ids = new Set<string>();
      for await (const chunk of stream) {
        ids.add(chunk.id);
        text += chunk.choices[0]?.delta.content ?? '';
        if (chunk.usage) usage = chunk.usage;
        expect(chunk.error).toBeUndefined();
      }
      expect(text).toBe(t.text);
      expect([...ids]).toEqual([expect.stringMatching(t.chatLane ? /^chatcmpl-/ : /^gen-/)]);
      expect(usage).toMatchObject({ promptTokens: t.prompt, completionTokens: t.completion });
      expect(usage?.cost).toBeCloseTo(costOf(t.prompt, t.completion), 12);
    });

    it('responses.send, not streamed: output text, completion time, usage with cost', async () => {
      const before = Math.floor(Date.now() / 1000);
      const res = body(await sdk.responses.send({ responsesRequest: { model: t.model, input: prompt } }));
      expect(res.id).toMatch(/^resp_/);
      expect(res.status).toBe('completed');
      expect(res.completedAt).toBeGreaterThanOrEqual(before);
      expect(res.output.map((o) => o.type)).toEqual(['message']);
      expect(res.outputText).toBe(t.text);
      expect(res.usage).toMatchObject({
        inputTokens: t.prompt,
        outputTokens: t.completion,
        totalTokens: t.prompt + t.completion,
        isByok: false,
      });
      expect(res.usage?.cost).toBeCloseTo(costOf(t.prompt, t.completion), 12);
    });

    it('responses.send, streamed: every event parses, the final one carries usage with cost', async () => {
      const stream = events(
        await sdk.responses.send({ responsesRequest: { model: t.model, input: prompt, stream: true } }),
      );
      const seen: models.StreamEvents[] = [];
      for await (const e of stream) seen.push(e);
      const types = seen.map((e) => e.type);
      expect(types).not.toContain(UNKNOWN);
      expect(types.slice(0, 2)).toEqual(['response.created', 'response.in_progress']);
      const deltas = seen.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : []));
      expect(deltas.join('')).toBe(t.text);
      const last = seen.at(-1);
      expect(last?.type).toBe('response.completed');
      if (last?.type !== 'response.completed') return;
      expect(last.response.outputText).toBe(t.text);
      expect(last.response.completedAt).toEqual(expect.any(Number));
      expect(last.response.usage).toMatchObject({ inputTokens: t.prompt, outputTokens: t.completion });
      expect(last.response.usage?.cost).toBeCloseTo(costOf(t.prompt, t.completion), 12);
    });
  });

  it('chat.send with reasoning and tool calls, streamed and not', async () => {
    const content = script({
      reasoning: 'the user wants weather',
      tool_calls: [{ id: 'call_w', name: 'get_weather', arguments: { city: 'Paris' } }],
    });
    const tools = [
      {
        type: 'function' as const,
        function: { name: 'get_weather', parameters: { type: 'object', properties: {} } },
      },
    ];
    const messages = [{ role: 'user' as const, content }];
    const res = body(await sdk.chat.send({ chatRequest: { model: 'gatehouse/scripted', messages, tools } }));
    const message = res.choices[0]?.message;
    expect(res.choices[0]?.finishReason).toBe('tool_calls');
    expect(message?.reasoning).toBe('the user wants weather');
    expect(message?.toolCalls).toEqual([
      { id: 'call_w', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
    ]);
    expect(res.usage?.completionTokensDetails?.reasoningTokens).toBeGreaterThan(0);

    const stream = events(
      await sdk.chat.send({ chatRequest: { model: 'gatehouse/scripted', messages, tools, stream: true } }),
    );
    let reasoning = '';
    let args = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      reasoning += choice?.delta.reasoning ?? '';
      for (const tc of choice?.delta.toolCalls ?? []) args += tc.function?.arguments ?? '';
      finish = choice?.finishReason ?? finish;
    }
    expect(reasoning).toBe('the user wants weather');
    expect(JSON.parse(args)).toEqual({ city: 'Paris' });
    expect(finish).toBe('tool_calls');
  });

  it('chat.send, streamed: an upstream failing mid-way ends with an error chunk the SDK parses', async () => {
    const stream = events(
      await sdk.chat.send({
        chatRequest: {
          model: 'gatehouse/scripted',
          messages: [{ role: 'user', content: script({ text: 'one two three four', fail_after_chunks: 2 }) }],
          stream: true,
        },
      }),
    );
    const chunks: models.ChatStreamChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const last = chunks.at(-1);
    expect(last?.error).toMatchObject({ code: 502, message: expect.any(String) });
    expect(last?.choices[0]?.finishReason).toBe('error');
  });

  it('responses.send with reasoning and a function call: every item and event parses', async () => {
    const input = script({
      reasoning: 'look it up',
      text: 'Checking.',
      tool_calls: [{ id: 'call_t', name: 'get_time', arguments: {} }],
    });
    const tools = [{ type: 'function' as const, name: 'get_time', parameters: { type: 'object' } }];
    const res = body(
      await sdk.responses.send({ responsesRequest: { model: 'gatehouse/scripted', input, tools } }),
    );
    expect(res.output.map((o) => o.type)).toEqual(['reasoning', 'message', 'function_call']);
    const call = res.output[2] as models.OutputFunctionCallItem;
    expect(call).toMatchObject({ callId: 'call_t', name: 'get_time', arguments: '{}' });
    expect(res.usage?.outputTokensDetails.reasoningTokens).toBeGreaterThan(0);

    const stream = events(
      await sdk.responses.send({
        responsesRequest: { model: 'gatehouse/scripted', input, tools, stream: true },
      }),
    );
    const types: string[] = [];
    for await (const e of stream) types.push(e.type);
    expect(types).not.toContain(UNKNOWN);
    expect(types).toContain('response.reasoning_summary_text.delta');
    expect(types).toContain('response.function_call_arguments.done');
    expect(types.at(-1)).toBe('response.completed');
  });

  it('responses.send streams that end incomplete or fail parse too', async () => {
    const incomplete = events(
      await sdk.responses.send({
        responsesRequest: {
          model: 'gatehouse/scripted',
          input: script({ text: 'cut short', finish_reason: 'length' }),
          stream: true,
        },
      }),
    );
    const ends: models.StreamEvents[] = [];
    for await (const e of incomplete) ends.push(e);
    expect(ends.map((e) => e.type)).not.toContain(UNKNOWN);
    const last = ends.at(-1);
    expect(last?.type).toBe('response.incomplete');
    if (last?.type === 'response.incomplete') {
      expect(last.response.incompleteDetails?.reason).toBe('max_output_tokens');
      expect(last.response.completedAt).toBeNull();
    }

    const failing = events(
      await sdk.responses.send({
        responsesRequest: {
          model: 'gatehouse/scripted',
          input: script({ text: 'one two three four', fail_after_chunks: 2 }),
          stream: true,
        },
      }),
    );
    const failed: models.StreamEvents[] = [];
    for await (const e of failing) failed.push(e);
    expect(failed.map((e) => e.type)).not.toContain(UNKNOWN);
    expect(failed.map((e) => e.type).slice(-2)).toEqual(['response.failed', 'error']);
  });

  it('beta.responses.send (the deprecated alias) and callModel read the same answer', async () => {
    const beta = body(
      await sdk.beta.responses.send({
        responsesRequest: { model: 'gatehouse/echo', input: 'through the beta alias' },
      }),
    );
    expect(beta.outputText).toBe('through the beta alias');

    const result = sdk.callModel({ model: 'gatehouse/echo', input: 'through call model' });
    expect(await result.getText()).toBe('through call model');
    const response = await result.getResponse();
    expect(response.usage).toMatchObject({ inputTokens: 3, outputTokens: 3 });
    expect(response.usage?.cost).toBeCloseTo(costOf(3, 3), 12);
  });

  it('embeddings.generate: vectors, usage with cost, the generation id', async () => {
    const res = await sdk.embeddings.generate({
      requestBody: { model: 'gatehouse/embed', input: ['one two', 'three'] },
    });
    if (typeof res === 'string') throw new Error(`expected a JSON body, got ${res}`);
    expect(res.id).toMatch(/^gen-/);
    expect(res.data.map((d) => d.index)).toEqual([0, 1]);
    expect((res.data[0]?.embedding as number[]).length).toBe(8);
    expect(res.usage).toMatchObject({ promptTokens: 3, totalTokens: 3 });
    expect(res.usage?.cost).toBeCloseTo((3 * 0.1) / 1e6, 12);
  });

  it('generations.getGeneration: tokens, cost, provider and kind of a chat, a stream and an embedding', async () => {
    mock.enqueue({ reply });
    const chat = body(
      await sdk.chat.send({
        chatRequest: { model: 'test/claude', messages: [{ role: 'user', content: 'hi' }] },
      }),
    );
    const stream = events(
      await sdk.chat.send({
        chatRequest: {
          model: 'gatehouse/echo',
          messages: [{ role: 'user', content: 'a b c' }],
          stream: true,
        },
      }),
    );
    let streamId = '';
    for await (const chunk of stream) streamId = chunk.id;
    const embedding = await sdk.embeddings.generate({
      requestBody: { model: 'gatehouse/embed', input: 'x' },
    });
    if (typeof embedding === 'string') throw new Error('expected JSON');

    const served = (await sdk.generations.getGeneration({ id: chat.id })).data;
    expect(served).toMatchObject({
      id: chat.id,
      model: 'test/claude',
      providerName: 'anthropic',
      apiType: 'completions',
      streamed: false,
      cancelled: false,
      finishReason: 'stop',
      tokensPrompt: 20,
      tokensCompletion: 6,
      isByok: false,
      upstreamInferenceCost: null,
    });
    expect(served.totalCost).toBeCloseTo(costOf(20, 6), 12);
    expect(served.usage).toBeCloseTo(costOf(20, 6), 12);

    const streamed = (await sdk.generations.getGeneration({ id: streamId })).data;
    expect(streamed).toMatchObject({ model: 'gatehouse/echo', streamed: true, tokensPrompt: 3 });
    const embedded = (await sdk.generations.getGeneration({ id: embedding.id as string })).data;
    expect(embedded).toMatchObject({ apiType: 'embeddings', tokensPrompt: 1, tokensCompletion: 0 });
  });
  describe('openrouter:web_search on Claude (the provider runs its own search)', () => {
    const tools = [{ type: 'openrouter:web_search' as const, parameters: { maxResults: 3 } }];

    // The SDK's chat types keep no annotations (web-search.test.ts asserts them on the wire).
    it('chat.send: an answer with annotations parses, streamed and not', async () => {
      const res = body(
        await sdk.chat.send({
          chatRequest: { model: 'test/claude', messages: [{ role: 'user', content: 'news?' }], tools },
        }),
      );
      expect(mock.requests[0]?.body.tools).toEqual([{ type: 'web_search_20250305', name: 'web_search' }]);
      expect(res.choices[0]?.message.content).toBe('Hello from claude-x!');

      const stream = events(
        await sdk.chat.send({
          chatRequest: {
            model: 'test/claude',
            messages: [{ role: 'user', content: 'news?' }],
            tools,
            stream: true,
          },
        }),
      );
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      expect(text).toBe('Hello from claude-x!');
    });

    it('responses.send: the web_search_call item and every stream event parse', async () => {
      const res = body(
        await sdk.responses.send({ responsesRequest: { model: 'test/claude', input: 'news?', tools } }),
      );
      expect(res.output.map((o) => o.type)).toEqual(['web_search_call', 'message']);
      const stream = events(
        await sdk.responses.send({
          responsesRequest: { model: 'test/claude', input: 'news?', tools, stream: true },
        }),
      );
      const types: string[] = [];
      for await (const e of stream) types.push(e.type);
      expect(types).not.toContain(UNKNOWN);
      expect(types).toContain('response.web_search_call.completed');
      expect(types).toContain('response.output_text.annotation.added');
    });
  });
});
