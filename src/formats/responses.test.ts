import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import {
  type ChatChunk,
  type ChatRequest,
  type ChatResponse,
  type FinishReason,
  TranslationError,
  type Usage,
} from './chat.js';
import {
  chatResponseToResponses,
  chatStreamToResponses,
  type ResponsesResponse,
  type ResponsesSseEvent,
  responsesRequestToChat,
} from './responses.js';
import { sseJson } from './sse.js';

// ---- fixtures ---------------------------------------------------------------------------------

const ID = 'chatcmpl-abc123';
const CREATED = 1_700_000_000;
/** A fixed clock for `completed_at`, so whole responses compare equal. */
const AT = { now: () => (CREATED + 2) * 1000 };
type Delta = ChatChunk['choices'][number]['delta'];

const chunk = (delta: Delta, finish: FinishReason | null = null): ChatChunk => ({
  id: ID,
  object: 'chat.completion.chunk',
  created: CREATED,
  model: 'upstream-model',
  choices: [{ index: 0, delta, finish_reason: finish }],
});
const usageChunk = (usage: Usage): ChatChunk => ({
  id: ID,
  object: 'chat.completion.chunk',
  created: CREATED,
  model: 'upstream-model',
  choices: [],
  usage,
});
async function* from(chunks: ChatChunk[], failWith?: Error): AsyncGenerator<ChatChunk> {
  for (const c of chunks) yield c;
  if (failWith) throw failWith;
}
async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}
const response = (
  message: ChatResponse['choices'][number]['message'],
  finish: FinishReason,
  usage?: Usage,
): ChatResponse => ({
  id: ID,
  object: 'chat.completion',
  created: CREATED,
  model: 'upstream-model',
  choices: [{ index: 0, message, finish_reason: finish }],
  ...(usage ? { usage } : {}),
});

const USAGE: Usage = {
  prompt_tokens: 120,
  completion_tokens: 40,
  total_tokens: 160,
  prompt_tokens_details: { cached_tokens: 50 },
  completion_tokens_details: { reasoning_tokens: 12 },
};
const SMALL_USAGE: Usage = { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 };

const TEXT_STREAM = [
  chunk({ role: 'assistant', content: '' }),
  chunk({ content: 'Hel' }),
  chunk({ content: 'lo!' }),
  chunk({}, 'stop'),
  usageChunk(SMALL_USAGE),
];
const REASONING_STREAM = [
  chunk({ role: 'assistant', reasoning: 'Let me ' }),
  chunk({ reasoning: 'think.' }),
  chunk({ content: 'The answer' }),
  chunk({ content: ' is 4.' }),
  chunk({}, 'stop'),
  usageChunk(USAGE),
];
const TOOLS_STREAM = [
  chunk({ role: 'assistant', content: 'Checking both.' }),
  chunk({
    tool_calls: [
      { index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } },
    ],
  }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
  chunk({
    tool_calls: [
      { index: 1, id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{"tz"' } },
    ],
  }),
  chunk({ tool_calls: [{ index: 1, function: { arguments: ':"CET"}' } }] }),
  chunk({}, 'tool_calls'),
  usageChunk({ prompt_tokens: 30, completion_tokens: 25, total_tokens: 55 }),
];

const TEXT_RESPONSE = response({ role: 'assistant', content: 'Hello!' }, 'stop', SMALL_USAGE);
const REASONING_RESPONSE = response(
  { role: 'assistant', content: 'The answer is 4.', reasoning: 'Let me think.' },
  'stop',
  USAGE,
);
const TOOLS_RESPONSE = response(
  {
    role: 'assistant',
    content: 'Checking both.',
    tool_calls: [
      { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
      { id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{"tz":"CET"}' } },
    ],
  },
  'tool_calls',
  { prompt_tokens: 30, completion_tokens: 25, total_tokens: 55 },
);

// ---- official client over Gatehouse output ------------------------------------------------------

async function sseText(events: AsyncIterable<ResponsesSseEvent>): Promise<string> {
  let text = '';
  for await (const e of events) text += sseJson(e.data, e.event);
  return text;
}

function clientAnswering(body: string, contentType: string) {
  const sent: unknown[] = [];
  const client = new OpenAI({
    apiKey: 'test-key',
    baseURL: 'http://gatehouse.test/v1',
    maxRetries: 0,
    fetch: async (_url: string | URL | Request, init?: RequestInit) => {
      sent.push(JSON.parse(String(init?.body)));
      return new Response(body, { status: 200, headers: { 'content-type': contentType } });
    },
  });
  return { client, sent };
}

const PARAMS = { model: 'gpt-test', input: 'Hi' };

/** The stream helper adds `output_parsed`, `parsed` and `parsed_arguments` (all null here). */
function withoutSdkExtras(r: object): unknown {
  const { output_parsed: _p, ...rest } = r as Record<string, unknown>;
  return JSON.parse(
    JSON.stringify(rest, (k, v) => (k === 'parsed' || k === 'parsed_arguments' ? undefined : v)),
  );
}

// ---- request ------------------------------------------------------------------------------------

describe('responsesRequestToChat', () => {
  it('maps a full Responses request (golden)', () => {
    const req = responsesRequestToChat({
      model: 'openai/gpt-test',
      instructions: 'Be precise.',
      input: [
        { role: 'developer', content: 'Use metric units.' },
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: 'Weather here?' },
            { type: 'input_image', image_url: 'https://example.com/sky.png', detail: 'low' },
          ],
        },
        {
          type: 'reasoning',
          id: 'rs_1',
          summary: [{ type: 'summary_text', text: 'Need weather.' }],
          encrypted_content: 'x',
        },
        {
          type: 'message',
          role: 'assistant',
          id: 'msg_1',
          status: 'completed',
          content: [{ type: 'output_text', text: 'Checking.', annotations: [] }],
        },
        {
          type: 'function_call',
          id: 'fc_1',
          call_id: 'call_1',
          name: 'get_weather',
          arguments: '{"city":"Oslo"}',
        },
        { type: 'function_call', call_id: 'call_2', name: 'get_time', arguments: '{}' },
        { type: 'function_call_output', call_id: 'call_1', output: '12°C' },
        { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: '14:00' }] },
        { role: 'assistant', content: 'It is 12°C at 14:00.' },
        { role: 'user', content: 'Thanks' },
      ],
      max_output_tokens: 500,
      temperature: 0.5,
      top_p: 0.8,
      presence_penalty: 0.5,
      frequency_penalty: -0.25,
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          description: 'Weather',
          parameters: { type: 'object' },
          strict: true,
        },
        { type: 'function', name: 'get_time', parameters: null, strict: null },
      ],
      tool_choice: { type: 'function', name: 'get_weather' },
      parallel_tool_calls: false,
      text: {
        format: {
          type: 'json_schema',
          name: 'answer',
          schema: { type: 'object' },
          strict: true,
          description: 'An answer',
        },
      },
      reasoning: { effort: 'low', summary: 'auto' },
      include: ['message.output_text.logprobs', 'reasoning.encrypted_content'],
      top_logprobs: 3,
      user: 'user-7',
      stream: true,
      store: false,
      metadata: { k: 'v' },
      truncation: 'disabled',
      provider: { sort: 'price' },
    });
    expect(req).toEqual({
      model: 'openai/gpt-test',
      messages: [
        { role: 'system', content: 'Be precise.' },
        { role: 'developer', content: 'Use metric units.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather here?' },
            { type: 'image_url', image_url: { url: 'https://example.com/sky.png', detail: 'low' } },
          ],
        },
        {
          role: 'assistant',
          content: 'Checking.',
          reasoning: 'Need weather.',
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
            },
            { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '12°C' },
        { role: 'tool', tool_call_id: 'call_2', content: '14:00' },
        { role: 'assistant', content: 'It is 12°C at 14:00.' },
        { role: 'user', content: 'Thanks' },
      ],
      max_tokens: 500,
      temperature: 0.5,
      top_p: 0.8,
      presence_penalty: 0.5,
      frequency_penalty: -0.25,
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'Weather',
            parameters: { type: 'object' },
            strict: true,
          },
        },
        { type: 'function', function: { name: 'get_time' } },
      ],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: false,
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'answer', description: 'An answer', schema: { type: 'object' }, strict: true },
      },
      reasoning: { effort: 'low' },
      logprobs: true,
      top_logprobs: 3,
      user: 'user-7',
      stream: true,
      stream_options: { include_usage: true },
      metadata: { k: 'v' },
    });
  });

  it('carries every effort OpenAI takes, max included; none asks for no reasoning', () => {
    for (const effort of ['minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const)
      expect(responsesRequestToChat({ model: 'm', input: 'hi', reasoning: { effort } }).reasoning).toEqual({
        effort,
      });
    expect(
      responsesRequestToChat({ model: 'm', input: 'hi', reasoning: { effort: 'none' } }).reasoning,
    ).toBeUndefined();
  });

  it("reads OpenAI's prompt_cache_breakpoint as a breakpoint on its part", () => {
    const req = responsesRequestToChat({
      model: 'm',
      input: [
        {
          role: 'user',
          content: [{ type: 'input_text', text: 'Doc', prompt_cache_breakpoint: { mode: 'explicit' } }],
        },
      ],
    });
    expect(req.messages[0]?.content).toEqual([
      { type: 'text', text: 'Doc', cache_control: { type: 'ephemeral' } },
    ]);
  });

  it("takes OpenAI's allowed_tools choice as the listed tools alone, with its mode", () => {
    const fn = (name: string) => ({ type: 'function', name, parameters: { type: 'object' } });
    const req = responsesRequestToChat({
      model: 'm',
      input: 'hi',
      tools: [fn('a'), fn('b'), { type: 'custom', name: 'c' }],
      tool_choice: {
        type: 'allowed_tools',
        mode: 'auto',
        tools: [
          { type: 'custom', name: 'c' },
          { type: 'function', name: 'b' },
        ],
      },
    });
    expect(req.tools?.map((t) => t.function.name)).toEqual(['b', 'c']);
    expect(req.tool_choice).toBe('auto');
    expect(() =>
      responsesRequestToChat({
        model: 'm',
        input: 'hi',
        tools: [fn('a')],
        tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'web_search' }] },
      }),
    ).toThrow(/^tool_choice\.tools\[0\]\.type: 'web_search' tools cannot be allowed/);
  });

  it("takes OpenAI's original image detail", () => {
    const req = responsesRequestToChat({
      model: 'm',
      input: [
        {
          role: 'user',
          content: [{ type: 'input_image', image_url: 'https://x/a.png', detail: 'original' }],
        },
      ],
    });
    expect(req.messages[0]?.content).toEqual([
      { type: 'image_url', image_url: { url: 'https://x/a.png', detail: 'original' } },
    ]);
  });

  it('drops and lists context truncation and the built-in tool-call cap (no built-in tools run here)', () => {
    const req = responsesRequestToChat({ model: 'm', input: 'hi', truncation: 'auto', max_tool_calls: 3 });
    expect(req.dropped).toEqual(['truncation', 'max_tool_calls']);
    expect(
      responsesRequestToChat({ model: 'm', input: 'hi', truncation: 'disabled' }).dropped,
    ).toBeUndefined();
  });

  it('drops and lists background: the response is served in the foreground', () => {
    expect(responsesRequestToChat({ model: 'm', input: 'hi', background: true }).dropped).toEqual([
      'background',
    ]);
    expect(responsesRequestToChat({ model: 'm', input: 'hi', background: false }).dropped).toBeUndefined();
  });

  it('accepts exactly what the official client sends, and a plain string input', async () => {
    const wire = chatResponseToResponses(TEXT_RESPONSE, 'gpt-test');
    const { client, sent } = clientAnswering(JSON.stringify(wire), 'application/json');
    await client.responses.create({
      model: 'gpt-test',
      input: 'Hello',
      text: { format: { type: 'json_object' } },
      tool_choice: 'required',
      tools: [{ type: 'function', name: 'f', parameters: { type: 'object' }, strict: false }],
    });
    expect(responsesRequestToChat(sent[0])).toEqual({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'Hello' }],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' }, strict: false } }],
      tool_choice: 'required',
      response_format: { type: 'json_object' },
    });
    expect(
      responsesRequestToChat({ model: 'm', input: 'x', text: { format: { type: 'text' } } }).response_format,
    ).toEqual({
      type: 'text',
    });
  });

  const ok = { model: 'm', input: 'hi' };
  const item = (i: unknown) => ({ ...ok, input: [i] });
  it.each([
    ['body', 'nope'],
    ['model', { input: 'hi' }],
    ['input', { model: 'm' }],
    ['input', { model: 'm', instructions: 'only instructions', input: [] }],
    ['previous_response_id', { ...ok, previous_response_id: 'resp_1' }],
    ['conversation', { ...ok, conversation: 'conv_1' }],
    ['prompt', { ...ok, prompt: { id: 'pmpt_1' } }],
    ['tools[0].type', { ...ok, tools: [{ type: 'file_search', vector_store_ids: ['vs'] }] }],
    ['tools[0].name', { ...ok, tools: [{ type: 'function' }] }],
    ['tool_choice.type', { ...ok, tool_choice: { type: 'file_search' } }],
    ['tool_choice', { ...ok, tool_choice: 'sometimes' }],
    ['text.format.type', { ...ok, text: { format: { type: 'yaml' } } }],
    ['text.format.name', { ...ok, text: { format: { type: 'json_schema', schema: {} } } }],
    ['reasoning.effort', { ...ok, reasoning: { effort: 'extreme' } }],
    ['max_output_tokens', { ...ok, max_output_tokens: 0 }],
    ['temperature', { ...ok, temperature: 3 }],
    ['presence_penalty', { ...ok, presence_penalty: 2.5 }],
    ['frequency_penalty', { ...ok, frequency_penalty: '1' }],
    [
      'input[0].content[0].file_id',
      item({ role: 'user', content: [{ type: 'input_image', file_id: 'file_1', detail: 'auto' }] }),
    ],
    ['input[0].content[0]', item({ role: 'user', content: [{ type: 'input_file', filename: 'a.pdf' }] })],
    [
      'input[0].content[0].file_url',
      item({ role: 'user', content: [{ type: 'input_file', file_url: 'ftp://x/a.pdf' }] }),
    ],
    [
      'input[0].content[0].type',
      item({ role: 'system', content: [{ type: 'input_image', image_url: 'https://x' }] }),
    ],
    [
      'input[0].content[0].type',
      item({ role: 'assistant', content: [{ type: 'input_image', image_url: 'https://x' }] }),
    ],
    ['input[0].type', item({ type: 'item_reference', id: 'msg_1' })],
    ['input[0].role', item({ type: 'message', role: 'tool', content: 'x' })],
    ['input[0].call_id', item({ type: 'function_call', name: 'f', arguments: '{}' })],
    ['input[0].arguments', item({ type: 'function_call', call_id: 'c', name: 'f', arguments: {} })],
    [
      'input[0].output[0]',
      item({ type: 'function_call_output', call_id: 'c', output: [{ type: 'input_file' }] }),
    ],
  ])('refuses %s', (field, body) => {
    expect(() => responsesRequestToChat(body)).toThrow(TranslationError);
    expect(() => responsesRequestToChat(body)).toThrow(new RegExp(`^${field.replace(/[[\].]/g, '\\$&')}:`));
  });

  it('leaves stored state to POST /responses: references that reach it unexpanded are refused, store is not its to act on', () => {
    expect(() => responsesRequestToChat({ ...ok, previous_response_id: 'resp_1' })).toThrow(
      /referenced only on POST \/responses/,
    );
    expect(responsesRequestToChat({ ...ok, store: true })).toEqual({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
    });
  });
});

// ---- non-streamed response ------------------------------------------------------------------------

const REQUEST: ChatRequest = {
  model: 'gpt-test',
  messages: [{ role: 'user', content: 'Hi' }],
  max_tokens: 300,
  temperature: 0.2,
  top_p: 0.9,
  presence_penalty: 0.1,
  frequency_penalty: 0.2,
  tools: [
    { type: 'function', function: { name: 'get_weather', parameters: { type: 'object' }, strict: true } },
  ],
  tool_choice: { type: 'function', function: { name: 'get_weather' } },
  parallel_tool_calls: false,
  response_format: {
    type: 'json_schema',
    json_schema: { name: 'a', schema: { type: 'object' }, strict: true },
  },
  reasoning: { effort: 'medium' },
  user: 'u1',
};

describe('chatResponseToResponses', () => {
  it('maps reasoning, text and tool calls (golden)', () => {
    const r = chatResponseToResponses(
      response(
        {
          role: 'assistant',
          content: 'Weather coming up.',
          reasoning: 'Need the tool.',
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
            },
          ],
        },
        'tool_calls',
        USAGE,
      ),
      'openai/gpt-test',
      undefined,
      AT,
    );
    expect(r).toEqual({
      id: 'resp_abc123',
      object: 'response',
      created_at: CREATED,
      completed_at: CREATED + 2,
      status: 'completed',
      background: false,
      error: null,
      frequency_penalty: null,
      incomplete_details: null,
      instructions: null,
      max_output_tokens: null,
      metadata: {},
      model: 'openai/gpt-test',
      output_text: 'Weather coming up.',
      output: [
        { type: 'reasoning', id: 'rs_abc123_0', summary: [{ type: 'summary_text', text: 'Need the tool.' }] },
        {
          type: 'message',
          id: 'msg_abc123_1',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: 'Weather coming up.', annotations: [], logprobs: [] }],
        },
        {
          type: 'function_call',
          id: 'fc_abc123_2',
          call_id: 'call_1',
          name: 'get_weather',
          arguments: '{"city":"Oslo"}',
          status: 'completed',
        },
      ],
      parallel_tool_calls: true,
      presence_penalty: null,
      previous_response_id: null,
      reasoning: { effort: null, summary: null },
      store: false,
      temperature: null,
      text: { format: { type: 'text' } },
      tool_choice: 'auto',
      tools: [],
      top_p: null,
      truncation: 'disabled',
      usage: {
        input_tokens: 120,
        input_tokens_details: { cached_tokens: 50 },
        output_tokens: 40,
        output_tokens_details: { reasoning_tokens: 12 },
        total_tokens: 160,
      },
    } satisfies ResponsesResponse);
    // Everything the official type requires is there ('minimal' effort makes `reasoning` wider;
    // `output` may hold custom_tool_call items, and `tools` an echoed `openrouter:web_search`, which
    // this SDK version does not know).
    const typed: Omit<OpenAI.Responses.Response, 'reasoning' | 'output' | 'tools'> = r;
    expect(typed.object).toBe('response');
  });

  it('echoes the request parameters when given the canonical request', () => {
    const r = chatResponseToResponses(TEXT_RESPONSE, 'gpt-test', REQUEST);
    expect(r).toMatchObject({
      max_output_tokens: 300,
      temperature: 0.2,
      top_p: 0.9,
      presence_penalty: 0.1,
      frequency_penalty: 0.2,
      parallel_tool_calls: false,
      tool_choice: { type: 'function', name: 'get_weather' },
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          description: null,
          parameters: { type: 'object' },
          strict: true,
        },
      ],
      text: { format: { type: 'json_schema', name: 'a', schema: { type: 'object' }, strict: true } },
      reasoning: { effort: 'medium', summary: null },
      user: 'u1',
    });
  });

  it('adds the cost fields to usage when given a pricing of the final usage', () => {
    const cost = (u: Usage) => ({
      cost: u.prompt_tokens * 1e-6,
      is_byok: false,
      cost_details: {
        upstream_inference_cost: null,
        upstream_inference_input_cost: u.prompt_tokens * 1e-6,
        upstream_inference_output_cost: 0,
      },
    });
    const r = chatResponseToResponses(TEXT_RESPONSE, 'gpt-test', undefined, { cost });
    expect(r.usage).toMatchObject({ input_tokens: SMALL_USAGE.prompt_tokens, is_byok: false });
    expect(r.usage?.cost).toBeCloseTo(SMALL_USAGE.prompt_tokens * 1e-6, 12);
    expect(r.usage?.cost_details?.upstream_inference_input_cost).toBe(r.usage?.cost);
  });

  it('marks length and content_filter as incomplete, maps refusals and logprobs', () => {
    const truncated = chatResponseToResponses(
      response({ role: 'assistant', content: 'Trunc' }, 'length'),
      'm',
    );
    expect(truncated.status).toBe('incomplete');
    expect(truncated.completed_at).toBeNull();
    expect(truncated.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(truncated.output[0]).toMatchObject({ type: 'message', status: 'incomplete' });
    expect(truncated.usage).toEqual({
      input_tokens: 0,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 0,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 0,
    });

    const refused = chatResponseToResponses(
      response({ role: 'assistant', content: 'Partial', refusal: 'No.' }, 'content_filter'),
      'm',
    );
    expect(refused.incomplete_details).toEqual({ reason: 'content_filter' });
    expect(refused.output).toEqual([
      {
        type: 'message',
        id: 'msg_abc123_0',
        role: 'assistant',
        status: 'incomplete',
        content: [
          { type: 'output_text', text: 'Partial', annotations: [], logprobs: [] },
          { type: 'refusal', refusal: 'No.' },
        ],
      },
    ]);

    const withLogprobs = response({ role: 'assistant', content: 'Hi' }, 'stop');
    (withLogprobs.choices[0] as { logprobs: unknown }).logprobs = {
      content: [
        {
          token: 'Hi',
          logprob: -0.1,
          bytes: null,
          top_logprobs: [{ token: 'Hi', logprob: -0.1, bytes: [72, 105] }],
        },
      ],
    };
    expect(chatResponseToResponses(withLogprobs, 'm').output[0]).toMatchObject({
      content: [
        {
          logprobs: [
            {
              token: 'Hi',
              logprob: -0.1,
              bytes: [],
              top_logprobs: [{ token: 'Hi', logprob: -0.1, bytes: [72, 105] }],
            },
          ],
        },
      ],
    });
  });

  it('parses in the official client', async () => {
    const wire = chatResponseToResponses(TOOLS_RESPONSE, 'gpt-test');
    const { client } = clientAnswering(JSON.stringify(wire), 'application/json');
    const r = await client.responses.create(PARAMS);
    expect(r.output_text).toBe('Checking both.');
    expect(withoutSdkExtras(r)).toEqual(wire);
  });
});

// ---- streams ---------------------------------------------------------------------------------------

describe('chatStreamToResponses', () => {
  it('emits the real event sequence for a text stream (golden)', async () => {
    const events = await collect(chatStreamToResponses(from(TEXT_STREAM), 'gpt-test', undefined, AT));
    expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
    for (const e of events) expect(e.data.type).toBe(e.event);
    const item = {
      type: 'message',
      id: 'msg_abc123_0',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: 'Hello!', annotations: [], logprobs: [] }],
    };
    const ids = { item_id: 'msg_abc123_0', output_index: 0, content_index: 0 };
    expect(events.slice(2, -1).map((e) => e.data)).toEqual([
      {
        type: 'response.output_item.added',
        sequence_number: 2,
        output_index: 0,
        item: { ...item, status: 'in_progress', content: [] },
      },
      {
        type: 'response.content_part.added',
        sequence_number: 3,
        ...ids,
        part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
      },
      { type: 'response.output_text.delta', sequence_number: 4, ...ids, delta: 'Hel', logprobs: [] },
      { type: 'response.output_text.delta', sequence_number: 5, ...ids, delta: 'lo!', logprobs: [] },
      { type: 'response.output_text.done', sequence_number: 6, ...ids, text: 'Hello!', logprobs: [] },
      {
        type: 'response.content_part.done',
        sequence_number: 7,
        ...ids,
        part: { type: 'output_text', text: 'Hello!', annotations: [], logprobs: [] },
      },
      { type: 'response.output_item.done', sequence_number: 8, output_index: 0, item },
    ]);
    const created = events[0]?.data as { type: string; response: ResponsesResponse };
    expect(created.type).toBe('response.created');
    expect(created.response).toMatchObject({
      id: 'resp_abc123',
      status: 'in_progress',
      completed_at: null,
      output: [],
      model: 'gpt-test',
    });
    expect(created.response.usage).toBeUndefined();
    expect(events[1]?.event).toBe('response.in_progress');
    expect(events.at(-1)?.data).toEqual({
      type: 'response.completed',
      sequence_number: 9,
      response: chatResponseToResponses(TEXT_RESPONSE, 'gpt-test', undefined, AT),
    });
  });

  it('streams reasoning as summary events, then text', async () => {
    const events = await collect(chatStreamToResponses(from(REASONING_STREAM), 'gpt-test'));
    const ids = { item_id: 'rs_abc123_0', output_index: 0, summary_index: 0 };
    expect(events.slice(2, 9).map(({ data: { sequence_number: _s, ...d } }) => d)).toEqual([
      {
        type: 'response.output_item.added',
        output_index: 0,
        item: { type: 'reasoning', id: 'rs_abc123_0', summary: [] },
      },
      { type: 'response.reasoning_summary_part.added', ...ids, part: { type: 'summary_text', text: '' } },
      { type: 'response.reasoning_summary_text.delta', ...ids, delta: 'Let me ' },
      { type: 'response.reasoning_summary_text.delta', ...ids, delta: 'think.' },
      { type: 'response.reasoning_summary_text.done', ...ids, text: 'Let me think.' },
      {
        type: 'response.reasoning_summary_part.done',
        ...ids,
        part: { type: 'summary_text', text: 'Let me think.' },
      },
      {
        type: 'response.output_item.done',
        output_index: 0,
        item: {
          type: 'reasoning',
          id: 'rs_abc123_0',
          summary: [{ type: 'summary_text', text: 'Let me think.' }],
        },
      },
    ]);
    expect(events[9]?.data).toMatchObject({ type: 'response.output_item.added', output_index: 1 });
  });

  it('names the response and every item after the id it is given (the generation), not the upstream chunk id', async () => {
    const events = await collect(
      chatStreamToResponses(from(TOOLS_STREAM), 'gpt-test', undefined, { id: 'gen-7-ab' }),
    );
    const ids = events.flatMap(({ data }) => [
      ...('response' in data ? [data.response.id] : []),
      ...('item' in data ? [data.item.id] : []),
      ...('item_id' in data ? [data.item_id] : []),
    ]);
    expect(new Set(ids)).toEqual(new Set(['resp_7-ab', 'msg_7-ab_0', 'fc_7-ab_1', 'fc_7-ab_2']));
  });

  it('streams two parallel tool calls as function_call items with argument deltas', async () => {
    const events = await collect(chatStreamToResponses(from(TOOLS_STREAM), 'gpt-test'));
    const toolEvents = events
      .map(({ data: { sequence_number: _s, ...d } }) => d)
      .filter((d) => 'output_index' in d && (d.output_index as number) >= 1);
    expect(toolEvents).toEqual([
      {
        type: 'response.output_item.added',
        output_index: 1,
        item: {
          type: 'function_call',
          id: 'fc_abc123_1',
          call_id: 'call_a',
          name: 'get_weather',
          arguments: '',
          status: 'in_progress',
        },
      },
      {
        type: 'response.function_call_arguments.delta',
        item_id: 'fc_abc123_1',
        output_index: 1,
        delta: '{"city":',
      },
      {
        type: 'response.function_call_arguments.delta',
        item_id: 'fc_abc123_1',
        output_index: 1,
        delta: '"Paris"}',
      },
      {
        type: 'response.function_call_arguments.done',
        item_id: 'fc_abc123_1',
        output_index: 1,
        name: 'get_weather',
        arguments: '{"city":"Paris"}',
      },
      {
        type: 'response.output_item.done',
        output_index: 1,
        item: {
          type: 'function_call',
          id: 'fc_abc123_1',
          call_id: 'call_a',
          name: 'get_weather',
          arguments: '{"city":"Paris"}',
          status: 'completed',
        },
      },
      {
        type: 'response.output_item.added',
        output_index: 2,
        item: {
          type: 'function_call',
          id: 'fc_abc123_2',
          call_id: 'call_b',
          name: 'get_time',
          arguments: '',
          status: 'in_progress',
        },
      },
      {
        type: 'response.function_call_arguments.delta',
        item_id: 'fc_abc123_2',
        output_index: 2,
        delta: '{"tz"',
      },
      {
        type: 'response.function_call_arguments.delta',
        item_id: 'fc_abc123_2',
        output_index: 2,
        delta: ':"CET"}',
      },
      {
        type: 'response.function_call_arguments.done',
        item_id: 'fc_abc123_2',
        output_index: 2,
        name: 'get_time',
        arguments: '{"tz":"CET"}',
      },
      {
        type: 'response.output_item.done',
        output_index: 2,
        item: {
          type: 'function_call',
          id: 'fc_abc123_2',
          call_id: 'call_b',
          name: 'get_time',
          arguments: '{"tz":"CET"}',
          status: 'completed',
        },
      },
    ]);
  });

  it.each([
    ['text', TEXT_STREAM, TEXT_RESPONSE],
    ['reasoning + text', REASONING_STREAM, REASONING_RESPONSE],
    ['parallel tool calls', TOOLS_STREAM, TOOLS_RESPONSE],
  ])('%s: the official ResponseStream ends with exactly the non-streamed response', async (_name, chunks, res) => {
    const text = await sseText(chatStreamToResponses(from(chunks), 'gpt-test', REQUEST, AT));
    const { client } = clientAnswering(text, 'text/event-stream');
    const stream = client.responses.stream(PARAMS);
    const deltas: string[] = [];
    stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
    const final = await stream.finalResponse();
    const expected = chatResponseToResponses(res, 'gpt-test', REQUEST, AT);
    expect(withoutSdkExtras(final)).toEqual(expected);
    expect(final.output_text).toBe(deltas.join(''));
  });

  it('raw events parse in the official client (responses.create with stream: true)', async () => {
    const text = await sseText(chatStreamToResponses(from(TOOLS_STREAM), 'gpt-test'));
    const { client } = clientAnswering(text, 'text/event-stream');
    const stream = await client.responses.create({ ...PARAMS, stream: true });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types.slice(0, 2)).toEqual(['response.created', 'response.in_progress']);
    expect(types.at(-1)).toBe('response.completed');
    expect(types.filter((t) => t === 'response.output_item.done')).toHaveLength(3);
  });

  it('ends a truncated stream with response.incomplete', async () => {
    const events = await collect(
      chatStreamToResponses(from([chunk({ content: 'Trunc' }), chunk({}, 'length')]), 'm'),
    );
    expect(events.at(-2)?.data).toMatchObject({
      type: 'response.output_item.done',
      item: { status: 'incomplete' },
    });
    expect(events.at(-1)?.data).toMatchObject({
      type: 'response.incomplete',
      response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } },
    });
  });

  it('ends with response.failed and an error event (not a throw) when the input fails; the client sees it', async () => {
    const failing = () => from([...TOOLS_STREAM.slice(0, 4)], new Error('upstream reset'));
    const events = await collect(chatStreamToResponses(failing(), 'gpt-test'));
    const failed = events.at(-2)?.data as { type: string; response: ResponsesResponse };
    expect(failed.type).toBe('response.failed');
    expect(failed.response.status).toBe('failed');
    expect(failed.response.error).toEqual({ code: 'server_error', message: 'upstream reset' });
    expect(failed.response.output.map((o) => o.type)).toEqual(['message']);
    expect(events.at(-1)?.data).toEqual({
      type: 'error',
      sequence_number: events.length - 1,
      code: 'server_error',
      message: 'upstream reset',
      param: null,
    });

    const text = await sseText(chatStreamToResponses(failing(), 'gpt-test'));
    const { client } = clientAnswering(text, 'text/event-stream');
    await expect(client.responses.stream(PARAMS).finalResponse()).rejects.toThrow(/upstream reset/);
  });

  it('reports an error (no response.failed) for an empty stream', async () => {
    const events = await collect(chatStreamToResponses(from([]), 'm'));
    expect(events.map((e) => e.event)).toEqual(['error']);
  });
});
