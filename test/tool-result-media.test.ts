/**
 * Images in tool results reach every provider on a translated call: Anthropic and Bedrock in the
 * tool result itself; OpenAI-format providers and Gemini, whose tool results take text (JSON) only,
 * in the user turn right after the tool results, introduced by a line naming the call. Real
 * gateway, real sockets, the mock upstream behind startUpstreams' providers.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

const PNG_DATA =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const PNG = `data:image/png;base64,${PNG_DATA}`;
const INTRO = (id: string, name: string) => `Attached to the result of tool call ${id} (${name}):`;

/** An OpenAI-compatible model (groq speaks no Responses API, so `/responses` is translated to it). */
const EXTRA = [
  {
    id: 'test/llama',
    endpoints: [{ provider: 'groq', upstream_model: 'llama-x', pricing: { prompt: 1, completion: 2 } }],
  },
];

let gw: TestGateway;
let mock: MockUpstream;
let call: ReturnType<typeof client>;
beforeAll(async () => {
  const up = await startUpstreams(EXTRA);
  mock = up.mock;
  gw = await startTestGateway('sqlite', { env: up.env });
  await adminClient(gw.url)('POST', '/admin/credits', {
    organization_id: gw.organizationId,
    amount_usd: 100,
  });
  call = client(gw.url, gw.apiKey);
});
afterAll(async () => {
  await gw?.stop();
  await mock?.close();
});
beforeEach(() => mock.reset());

/** Claude Code's turn after its Read tool returned a screenshot (an image block in the tool_result). */
const readScreenshot = (model: string) => ({
  model,
  max_tokens: 100,
  messages: [
    { role: 'user', content: 'What is on /tmp/shot.png?' },
    {
      role: 'assistant',
      content: [{ type: 'tool_use', id: 'toolu_1', name: 'Read', input: { file_path: '/tmp/shot.png' } }],
    },
    {
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'toolu_1',
          content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_DATA } }],
        },
      ],
    },
  ],
});

describe('/messages: an image in a tool_result', () => {
  it('reaches an OpenAI model in a user message after the tool message', async () => {
    const res = await call('POST', '/messages', readScreenshot('test/gpt'));
    expect(res.status).toBe(200);
    expect(res.body.type).toBe('message');
    expect(mock.requests).toHaveLength(1);
    expect(mock.requests[0]?.path).toMatch(/\/openai\/v1\/chat\/completions$/);
    expect(mock.requests[0]?.body.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'toolu_1',
            type: 'function',
            function: { name: 'Read', arguments: JSON.stringify({ file_path: '/tmp/shot.png' }) },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_1', content: '(image attached below)' },
      {
        role: 'user',
        content: [
          { type: 'text', text: INTRO('toolu_1', 'Read') },
          { type: 'image_url', image_url: { url: PNG } },
        ],
      },
    ]);
  });

  it('reaches Gemini as inline data after the function response, in the same user turn', async () => {
    const res = await call('POST', '/messages', readScreenshot('test/gemini'));
    expect(res.status).toBe(200);
    expect(res.body.type).toBe('message');
    expect(mock.requests).toHaveLength(1);
    expect(mock.requests[0]?.path).toMatch(/\/google\/v1beta\/models\/gemini-x:generateContent$/);
    expect(mock.requests[0]?.body.contents.at(-1)).toEqual({
      role: 'user',
      parts: [
        { functionResponse: { name: 'Read', response: { result: '(image attached below)' } } },
        { text: INTRO('toolu_1', 'Read') },
        { inlineData: { mimeType: 'image/png', data: PNG_DATA } },
      ],
    });
  });
});

describe('/responses: a function_call_output whose output is an input_image', () => {
  const body = (model: string) => ({
    model,
    input: [
      { role: 'user', content: 'Take a screenshot' },
      { type: 'function_call', call_id: 'call_1', name: 'screenshot', arguments: '{}' },
      {
        type: 'function_call_output',
        call_id: 'call_1',
        output: [
          { type: 'input_text', text: 'Screen 1' },
          { type: 'input_image', image_url: PNG },
        ],
      },
    ],
    tools: [{ type: 'function', name: 'screenshot', parameters: { type: 'object', properties: {} } }],
  });

  it('reaches an OpenAI-compatible model (translated) with its text in the tool message, as a string', async () => {
    const res = await call('POST', '/responses', body('test/llama'));
    expect(res.status).toBe(200);
    expect(res.body.object).toBe('response');
    expect(mock.requests[0]?.path).toMatch(/\/groq\/v1\/chat\/completions$/);
    expect(mock.requests[0]?.body.messages.slice(2)).toEqual([
      { role: 'tool', tool_call_id: 'call_1', content: 'Screen 1' },
      {
        role: 'user',
        content: [
          { type: 'text', text: INTRO('call_1', 'screenshot') },
          { type: 'image_url', image_url: { url: PNG } },
        ],
      },
    ]);
  });

  it('reaches Gemini as inline data after the function response', async () => {
    const res = await call('POST', '/responses', body('test/gemini'));
    expect(res.status).toBe(200);
    expect(mock.requests[0]?.body.contents.at(-1)).toEqual({
      role: 'user',
      parts: [
        { functionResponse: { name: 'screenshot', response: { result: 'Screen 1' } } },
        { text: INTRO('call_1', 'screenshot') },
        { inlineData: { mimeType: 'image/png', data: PNG_DATA } },
      ],
    });
  });
});

describe('/chat/completions: a tool message with text and an image', () => {
  const body = (model: string) => ({
    model,
    messages: [
      { role: 'user', content: 'Look' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'shot', arguments: '{}' } }],
      },
      {
        role: 'tool',
        tool_call_id: 'call_1',
        content: [
          { type: 'text', text: 'the screen' },
          { type: 'image_url', image_url: { url: PNG } },
        ],
      },
    ],
    tools: [{ type: 'function', function: { name: 'shot', parameters: { type: 'object' } } }],
  });

  it('reaches Anthropic in the tool_result block, as Anthropic carries images there', async () => {
    const res = await call('POST', '/chat/completions', body('test/claude'));
    expect(res.status).toBe(200);
    expect(res.body.object).toBe('chat.completion');
    expect(mock.requests[0]?.path).toMatch(/\/anthropic\/v1\/messages$/);
    expect(mock.requests[0]?.body.messages.at(-1)).toEqual({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'call_1',
          content: [
            { type: 'text', text: 'the screen' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_DATA } },
          ],
        },
      ],
    });
  });

  it('passes through to OpenAI as sent (a lane does not rewrite the tool message)', async () => {
    const res = await call('POST', '/chat/completions', body('test/gpt'));
    expect(res.status).toBe(200);
    expect(mock.requests[0]?.body.messages.at(-1)).toEqual(body('test/gpt').messages.at(-1));
  });
});
