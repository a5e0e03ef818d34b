/**
 * The `@anthropic-ai/sdk` client's own helpers through Gatehouse, on Claude (the call passed
 * through) and on models other providers serve (translated): structured output read back by
 * `messages.parse` with `zodOutputFormat`, and a tool loop run to its answer by
 * `beta.messages.toolRunner` with a `betaZodTool` (its message thread passed through to Anthropic,
 * held by Gatehouse for the others). What the client parses and sends, and what reached each
 * upstream, are checked.
 */
import Anthropic from '@anthropic-ai/sdk';
import { betaZodTool } from '@anthropic-ai/sdk/helpers/beta/zod';
import { zodOutputFormat } from '@anthropic-ai/sdk/helpers/zod';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { TestGateway } from './support/gateway.js';
import { type MockUpstream, wireView } from './support/mock-upstream.js';
import { recordingClient } from './support/threads.js';
import { gatewayWithUpstreams } from './support/upstreams.js';

/** Each target and where the schema of a structured answer sits in what its upstream received. */
const targets = [
  {
    model: 'test/claude',
    path: '/anthropic/v1/messages',
    schemaOf: (body: any) => body.output_config?.format?.schema,
  },
  {
    model: 'test/gpt',
    path: '/openai/v1/chat/completions',
    schemaOf: (body: any) => body.response_format?.json_schema?.schema,
  },
  {
    model: 'test/gemini',
    path: '/google/v1beta/models/gemini-x:generateContent',
    schemaOf: (body: any) =>
      body.generationConfig?.responseJsonSchema ?? body.generationConfig?.responseSchema,
  },
] as const;

const Answer = z.object({ city: z.string(), degrees: z.number() });

describe('the Anthropic client’s helpers', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let stop: () => Promise<void>;
  let anthropic: Anthropic;
  beforeAll(async () => {
    ({ gw, mock, stop } = await gatewayWithUpstreams());
    anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(() => stop?.());
  beforeEach(() => mock.reset());

  describe.each(targets)('$model', (t) => {
    it('messages.parse with zodOutputFormat: the schema reaches the upstream, parsed_output is typed', async () => {
      mock.enqueue({ reply: { text: JSON.stringify({ city: 'Oslo', degrees: 21 }) } });
      const msg = await anthropic.messages.parse({
        model: t.model,
        max_tokens: 256,
        messages: [{ role: 'user', content: 'The weather in Oslo, as JSON.' }],
        output_config: { format: zodOutputFormat(Answer) },
      });
      expect(msg.parsed_output).toEqual({ city: 'Oslo', degrees: 21 });
      expect(mock.requests.map((r) => r.path)).toEqual([t.path]);
      // (Gemini's schema dialect spells the types in capitals.)
      const schema = JSON.parse(JSON.stringify(t.schemaOf(mock.requests[0]?.body)).toLowerCase());
      expect(schema).toMatchObject({
        type: 'object',
        properties: { city: { type: 'string' }, degrees: { type: 'number' } },
      });
    });

    it('beta.messages.toolRunner with a betaZodTool: the tool runs and the loop ends with the answer', async () => {
      mock.enqueue(
        { reply: { tool_calls: [{ id: 'toolu_w1', name: 'weather', arguments: { city: 'Bergen' } }] } },
        { reply: { text: 'Bergen: 12 degrees and rain.' } },
      );
      const asked: string[] = [];
      const weather = betaZodTool({
        name: 'weather',
        description: 'The weather of a city',
        inputSchema: z.object({ city: z.string() }),
        run: async ({ city }) => {
          asked.push(city);
          return `${city}: 12 degrees, rain`;
        },
      });
      const { client: recording, sent } = recordingClient(`${gw.url}/api`, gw.apiKey);
      const final = await recording.beta.messages.toolRunner({
        model: t.model,
        max_tokens: 256,
        messages: [{ role: 'user', content: 'Weather in Bergen?' }],
        tools: [weather],
      });
      expect(asked).toEqual(['Bergen']);
      expect(final.content).toEqual([
        expect.objectContaining({ type: 'text', text: 'Bergen: 12 degrees and rain.' }),
      ]);
      const [first, second] = mock.requests;
      expect(mock.requests).toHaveLength(2);
      if (t.model === 'test/claude') {
        // Passed through: the client's message thread reaches Anthropic, which holds the
        // conversation; the second turn sends only the tool's result, continuing the first answer.
        expect(first?.body.thread).toEqual({ type: 'create' });
        expect(String(first?.headers['anthropic-beta'])).toContain('message-threads');
        expect(second?.body.thread).toEqual({
          type: 'continue',
          previous_message_id: expect.stringMatching(/^msg_/),
        });
        expect(second?.body.messages).toEqual([
          {
            role: 'user',
            content: [expect.objectContaining({ type: 'tool_result', tool_use_id: 'toolu_w1' })],
          },
        ]);
        return;
      }
      // Translated: Gatehouse holds the thread. The client still sent only the tool's result on
      // the second turn (Gemini's calls carry no ids: Gatehouse names them); the provider got the
      // whole conversation, without `thread`.
      expect(sent.map((b) => b.thread?.type)).toEqual(['create', 'continue']);
      expect(sent[1].messages).toEqual([
        {
          role: 'user',
          content: [expect.objectContaining({ type: 'tool_result', content: 'Bergen: 12 degrees, rain' })],
        },
      ]);
      for (const r of mock.requests) expect(JSON.stringify(r.body)).not.toContain('"thread"');
      const view = wireView(second as never);
      expect(view.tools.map((tool) => tool.name)).toEqual(['weather']);
      expect(JSON.stringify(view.turns)).toContain('Weather in Bergen?');
      expect(JSON.stringify(view.turns.at(-1))).toContain('12 degrees, rain');
    });
  });
});
