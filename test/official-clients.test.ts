import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import OpenAI7 from 'openai-v7';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestGateway } from './support/gateway.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { gatewayWithUpstreams } from './support/upstreams.js';

/**
 * The `openai` (its 6.x and 7.x lines) and `@anthropic-ai/sdk` clients through Gatehouse, with their own helpers
 * (`messages.stream().finalMessage()`, `responses.stream().finalResponse()`,
 * `chat.completions.stream().finalChatCompletion()`): what a user reads back — text, ids, stop
 * reasons, usage — on the development provider and the mock OpenAI, Anthropic and Gemini upstreams.
 * Streamed /messages reports the input tokens in message_start as Anthropic does whenever the
 * upstream told them before the answer (Anthropic, Gemini, the development provider; an OpenAI
 * upstream only reports usage at the end), and every count again, cumulative, in message_delta.
 */

const reply = {
  text: 'upstream says hi',
  usage: { prompt_tokens: 20, completion_tokens: 6, cached_tokens: 8 },
};

/**
 * The answer, the usage and whether the prompt count is known before the answer, per target; and
 * the model a /messages answer names: Anthropic's own answer (passed through) names its model.
 */
const targets = [
  { model: 'gatehouse/echo', text: 'count my words please', input: 4, cached: 0, output: 4, early: true },
  {
    model: 'test/claude',
    text: reply.text,
    input: 20,
    cached: 8,
    output: 6,
    early: true,
    messagesModel: 'claude-x',
  },
  { model: 'test/gemini', text: reply.text, input: 20, cached: 8, output: 6, early: true },
  { model: 'test/gpt', text: reply.text, input: 20, cached: 8, output: 6, early: false },
];
const prompt = 'count my words please';

describe('the openai and Anthropic clients read back what they expect', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  /** Both lines of the openai client, driven through the 6.x types (the calls are the same). */
  const clients: Record<string, OpenAI> = {};
  let anthropic: Anthropic;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ gw, mock, stop } = await gatewayWithUpstreams());
    const options = { baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 };
    clients['openai 6'] = new OpenAI(options);
    clients['openai 7'] = new OpenAI7(options) as unknown as OpenAI;
    anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(() => stop?.());
  beforeEach(() => {
    mock.reset();
    mock.enqueue({ reply, times: 2 });
  });

  describe.each(targets)('$model', (t) => {
    it('messages.stream: message_start carries the input count when known, finalMessage every count', async () => {
      const stream = anthropic.messages.stream({
        model: t.model,
        max_tokens: 64,
        messages: [{ role: 'user', content: prompt }],
      });
      const starts: Anthropic.Usage[] = [];
      const deltas: Anthropic.MessageDeltaUsage[] = [];
      stream.on('streamEvent', (e) => {
        // Copies: the client accumulates the rest of the stream into the message_start object.
        if (e.type === 'message_start') starts.push(structuredClone(e.message.usage));
        if (e.type === 'message_delta') deltas.push(structuredClone(e.usage));
      });
      const final = await stream.finalMessage();
      expect(final.id).toMatch(/^msg_/);
      expect(final.model).toBe(t.messagesModel ?? t.model);
      expect(final.stop_reason).toBe('end_turn');
      expect(final.content).toEqual([{ type: 'text', text: t.text }]);
      // As Anthropic counts: input_tokens excludes the cache reads.
      const counts = {
        input_tokens: t.input - t.cached,
        cache_read_input_tokens: t.cached,
        cache_creation_input_tokens: 0,
      };
      expect(starts).toHaveLength(1);
      // (Anthropic's own message_start, passed through, counts its first output token.)
      expect(starts[0]).toMatchObject(
        t.early
          ? { ...counts, output_tokens: t.messagesModel ? 1 : 0 }
          : { input_tokens: 0, output_tokens: 0 },
      );
      // Translated streams repeat every count in message_delta; Anthropic's own says what it says.
      const deltaCounts = t.messagesModel ? {} : counts;
      expect(deltas).toEqual([expect.objectContaining({ ...deltaCounts, output_tokens: t.output })]);
      expect(final.usage).toMatchObject({ ...counts, output_tokens: t.output });
    });

    it('messages.create: the same message and usage, not streamed', async () => {
      const msg = await anthropic.messages.create({
        model: t.model,
        max_tokens: 64,
        messages: [{ role: 'user', content: prompt }],
      });
      expect(msg.content).toEqual([{ type: 'text', text: t.text }]);
      expect(msg.usage).toMatchObject({
        input_tokens: t.input - t.cached,
        cache_read_input_tokens: t.cached,
        output_tokens: t.output,
      });
    });

    it.each([
      'openai 6',
      'openai 7',
    ])('%s chat.completions: create and the stream helper read text and usage; no internal field leaks', async (client) => {
      const openai = clients[client] as OpenAI;
      const res = await openai.chat.completions.create({
        model: t.model,
        messages: [{ role: 'user', content: prompt }],
      });
      expect(res.choices[0]?.message).toMatchObject({ role: 'assistant', content: t.text });
      expect(res.usage).toMatchObject({ prompt_tokens: t.input, completion_tokens: t.output });
      expect(res.usage?.prompt_tokens_details?.cached_tokens).toBe(t.cached);

      const stream = openai.chat.completions.stream({
        model: t.model,
        messages: [{ role: 'user', content: prompt }],
        stream_options: { include_usage: true },
      });
      const chunks: object[] = [];
      stream.on('chunk', (c) => chunks.push(c));
      const final = await stream.finalChatCompletion();
      expect(final.choices[0]?.message.content).toBe(t.text);
      expect(final.usage).toMatchObject({ prompt_tokens: t.input, completion_tokens: t.output });
      expect(chunks.some((c) => 'prompt_usage' in c)).toBe(false);
    });

    it.each([
      'openai 6',
      'openai 7',
    ])('%s responses: create and the stream helper read output_text and usage', async (client) => {
      const openai = clients[client] as OpenAI;
      const res = await openai.responses.create({ model: t.model, input: prompt });
      expect(res.status).toBe('completed');
      expect(res.output_text).toBe(t.text);
      expect(res.usage).toMatchObject({
        input_tokens: t.input,
        input_tokens_details: { cached_tokens: t.cached },
        output_tokens: t.output,
        total_tokens: t.input + t.output,
      });

      const final = await openai.responses.stream({ model: t.model, input: prompt }).finalResponse();
      expect(final.id).toMatch(/^resp_/);
      expect(final.output_text).toBe(t.text);
      expect(final.usage).toMatchObject({ input_tokens: t.input, output_tokens: t.output });
    });
  });
});
