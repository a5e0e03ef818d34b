/**
 * The Vercel AI SDK's default OpenAI model is the Responses API with `store` on, so from its second
 * step on it sends `item_reference` inputs for the items of earlier steps. Its multi-step tool
 * loop, `generateText` and `streamText`, must complete through Gatehouse on every provider: the
 * mock's OpenAI, Anthropic and Gemini providers, and the built-in development provider — with
 * the 6.x line (`ai` 6, `@ai-sdk/openai` 3) and the 7.x one (`ai` 7, `@ai-sdk/openai` 4).
 */
import { createOpenAI as createOpenAI3 } from '@ai-sdk/openai';
import * as ai6 from 'ai';
import { createOpenAI as createOpenAI4 } from 'ai-sdk-openai-v4';
import * as ai7 from 'ai-v7';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient } from './support/http.js';
import { type MockUpstream, wireView } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

const STEP_1 = {
  reasoning: 'The user wants the weather.',
  text: 'Let me look that up.',
  tool_calls: [{ id: 'call_w1', name: 'weather', arguments: { city: 'Oslo' } }],
};
const STEP_2 = { text: 'It is sunny in Oslo.' };
const PROMPT = 'What is the weather in Oslo?';

/** The scripted development model plays both steps from a directive in the user's message. */
const SCRIPTED_PROMPT = `${PROMPT} gatehouse:${JSON.stringify({ steps: [STEP_1, STEP_2] })}`;

/** Both lines, typed as the 6.x one: the calls below are the same in each. */
const SDKS = [
  { sdk: 'AI SDK 6', ai: ai6, createOpenAI: createOpenAI3 },
  {
    sdk: 'AI SDK 7',
    ai: ai7 as unknown as typeof ai6,
    createOpenAI: createOpenAI4 as unknown as typeof createOpenAI3,
  },
];

describe.each(SDKS)('$sdk default Responses model: multi-step tool loop', ({ ai, createOpenAI }) => {
  const { generateText, jsonSchema, stepCountIs, streamText, tool } = ai;
  let gw: TestGateway;
  let mock: MockUpstream;
  /** The bodies the SDK sent to Gatehouse. */
  let sent: { input: Record<string, unknown>[] }[];
  let openai: ReturnType<typeof createOpenAI>;
  const toolRuns: string[] = [];
  const weather = tool({
    description: 'The weather of a city',
    inputSchema: jsonSchema<{ city: string }>({
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    }),
    execute: async ({ city }) => {
      toolRuns.push(city);
      return `sunny in ${city}`;
    },
  });

  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway('sqlite', { env: up.env });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    openai = createOpenAI({
      baseURL: `${gw.url}/api/v1`,
      apiKey: gw.apiKey,
      fetch: async (url, init) => {
        if (typeof init?.body === 'string') sent.push(JSON.parse(init.body));
        return fetch(url, init);
      },
    });
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => {
    mock.reset();
    sent = [];
    toolRuns.length = 0;
  });

  const cases = [
    { provider: 'openai', model: 'test/gpt', upstream: true },
    { provider: 'anthropic', model: 'test/claude', upstream: true },
    { provider: 'google', model: 'test/gemini', upstream: true },
    { provider: 'development', model: 'gatehouse/scripted', upstream: false },
  ];

  /** What every loop must show: the final text, the tool run once, the second step sent by reference. */
  function expectCompletedLoop(text: string, steps: number, upstream: boolean) {
    expect(text).toBe(STEP_2.text);
    expect(steps).toBe(2);
    expect(toolRuns).toEqual(['Oslo']);
    expect(sent).toHaveLength(2);
    // The SDK's defaults: no `store` sent (OpenAI's default, true), earlier items named by id.
    expect(sent[0]).not.toHaveProperty('store');
    const second = sent[1]?.input ?? [];
    expect(second.filter((i) => i.type === 'item_reference').length).toBeGreaterThan(0);
    expect(second).toContainEqual(
      expect.objectContaining({
        type: 'function_call_output',
        output: expect.stringContaining('sunny in Oslo'),
      }),
    );
    if (!upstream) return;
    // The upstream got the whole loop: the question, the model's text and call, the tool's result.
    expect(mock.requests).toHaveLength(2);
    const turns = wireView(mock.requests[1]!).turns;
    expect(turns.map((t) => t.role)).toEqual(['user', 'assistant', 'user']);
    expect(turns[1]?.text).toBe(STEP_1.text);
    expect(turns[1]?.toolCalls).toEqual([
      expect.objectContaining({ name: 'weather', args: { city: 'Oslo' } }),
    ]);
    expect(JSON.stringify(turns[2]?.toolResults)).toContain('sunny in Oslo');
  }

  it.each([
    false,
    true,
  ])('Claude with thinking (streamed: %s): the reasoning goes back by reference, signed, and thinking stays on', async (streamed) => {
    mock.enqueue({ reply: { ...STEP_1, signature: 'sig-ai-sdk' } }, { reply: STEP_2 });
    const options = {
      model: openai('test/claude'),
      tools: { weather },
      stopWhen: stepCountIs(5),
      prompt: PROMPT,
      providerOptions: { openai: { reasoningEffort: 'low', forceReasoning: true } },
    };
    const text = streamed ? await streamText(options).text : (await generateText(options)).text;
    expect(text).toBe(STEP_2.text);
    // The SDK names the earlier reasoning item by id; Gatehouse restores it with its state.
    expect(sent[1]?.input).toContainEqual({ type: 'item_reference', id: expect.stringMatching(/^rs_/) });
    const second = mock.requests[1]!;
    expect(second.body.thinking).toMatchObject({ type: 'enabled' });
    expect(wireView(second).turns[1]?.reasoning).toEqual([
      { text: STEP_1.reasoning, signature: 'sig-ai-sdk' },
    ]);
  });

  describe.each(cases)('$provider ($model)', ({ model, upstream }) => {
    const prompt = upstream ? PROMPT : SCRIPTED_PROMPT;

    it('generateText', async () => {
      if (upstream) mock.enqueue({ reply: STEP_1 }, { reply: STEP_2 });
      const result = await generateText({
        model: openai(model),
        tools: { weather },
        stopWhen: stepCountIs(5),
        prompt,
      });
      expectCompletedLoop(result.text, result.steps.length, upstream);
    });

    it('streamText', async () => {
      if (upstream) mock.enqueue({ reply: STEP_1 }, { reply: STEP_2 });
      const errors: unknown[] = [];
      const result = streamText({
        model: openai(model),
        tools: { weather },
        stopWhen: stepCountIs(5),
        prompt,
        onError: ({ error }) => {
          errors.push(error);
        },
      });
      const text = await result.text;
      expect(errors).toEqual([]);
      expectCompletedLoop(text, (await result.steps).length, upstream);
    });
  });
});
