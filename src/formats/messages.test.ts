import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import {
  type ChatChunk,
  type ChatResponse,
  type FinishReason,
  TranslationError,
  type Usage,
} from './chat.js';
import {
  type AnthropicMessage,
  type AnthropicSseEvent,
  chatResponseToMessages,
  chatStreamToMessages,
  messagesRequestToChat,
  THINKING_SIGNATURE,
} from './messages.js';
import { decodeReasoningState } from './reasoning-state.js';
import { sseJson } from './sse.js';

// ---- fixtures ---------------------------------------------------------------------------------

const ID = 'chatcmpl-abc123';
const CREATED = 1_700_000_000;
type Delta = ChatChunk['choices'][number]['delta'];

const chunk = (delta: Delta, finish: FinishReason | null = null, native?: string): ChatChunk => ({
  id: ID,
  object: 'chat.completion.chunk',
  created: CREATED,
  model: 'upstream-model',
  choices: [{ index: 0, delta, finish_reason: finish, ...(native ? { native_finish_reason: native } : {}) }],
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
  prompt_tokens_details: { cached_tokens: 50, cache_write_tokens: 20 },
  completion_tokens_details: { reasoning_tokens: 12 },
};

const TEXT_STREAM = [
  chunk({ role: 'assistant', content: '' }),
  chunk({ content: 'Hel' }),
  chunk({ content: 'lo!' }),
  chunk({}, 'stop'),
  usageChunk({ prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 }),
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

/** Reasoning from an Anthropic upstream: two signed thinking blocks around a redacted one. */
const A = 'anthropic-claude-v1';
const SIGNED_STREAM = [
  chunk({ role: 'assistant', content: '' }),
  chunk({
    reasoning: 'Let me ',
    reasoning_details: [{ type: 'reasoning.text', text: 'Let me ', format: A, index: 0 }],
  }),
  chunk({
    reasoning: 'think.',
    reasoning_details: [{ type: 'reasoning.text', text: 'think.', format: A, index: 0 }],
  }),
  chunk({
    reasoning_details: [{ type: 'reasoning.text', text: '', signature: 'real-sig-1', format: A, index: 0 }],
  }),
  chunk({ reasoning_details: [{ type: 'reasoning.encrypted', data: 'REDACTED==', format: A, index: 1 }] }),
  chunk({
    reasoning: 'Again.',
    reasoning_details: [{ type: 'reasoning.text', text: 'Again.', format: A, index: 2 }],
  }),
  chunk({
    reasoning_details: [{ type: 'reasoning.text', text: '', signature: 'real-sig-2', format: A, index: 2 }],
  }),
  chunk({ content: 'The answer is 4.' }),
  chunk({}, 'stop'),
  usageChunk(USAGE),
];

/** Reasoning from a Gemini upstream: its signatures are not Anthropic's to give. */
const GEMINI_STREAM = [
  chunk({ role: 'assistant', content: '' }),
  chunk({
    reasoning: 'Hmm.',
    reasoning_details: [
      { type: 'reasoning.text', text: 'Hmm.', signature: 'g-sig', format: 'google-gemini-v1', index: 0 },
    ],
  }),
  chunk({
    content: 'Done.',
    reasoning_details: [
      { type: 'reasoning.encrypted', data: 'g-data', format: 'google-gemini-v1', index: 1 },
    ],
  }),
  chunk({}, 'stop'),
  usageChunk(USAGE),
];

/** The non-streamed equivalents of the streams above. */
const TEXT_RESPONSE = response({ role: 'assistant', content: 'Hello!' }, 'stop', {
  prompt_tokens: 10,
  completion_tokens: 2,
  total_tokens: 12,
});
const REASONING_RESPONSE = response(
  { role: 'assistant', content: 'The answer is 4.', reasoning: 'Let me think.' },
  'stop',
  USAGE,
);
const SIGNED_RESPONSE = response(
  {
    role: 'assistant',
    content: 'The answer is 4.',
    reasoning: 'Let me think.Again.',
    reasoning_details: [
      { type: 'reasoning.text', text: 'Let me think.', signature: 'real-sig-1', format: A, index: 0 },
      { type: 'reasoning.encrypted', data: 'REDACTED==', format: A, index: 1 },
      { type: 'reasoning.text', text: 'Again.', signature: 'real-sig-2', format: A, index: 2 },
    ],
  },
  'stop',
  USAGE,
);
const GEMINI_RESPONSE = response(
  {
    role: 'assistant',
    content: 'Done.',
    reasoning: 'Hmm.',
    reasoning_details: [
      { type: 'reasoning.text', text: 'Hmm.', signature: 'g-sig', format: 'google-gemini-v1', index: 0 },
      { type: 'reasoning.encrypted', data: 'g-data', format: 'google-gemini-v1', index: 1 },
    ],
  },
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

async function sseText(events: AsyncIterable<AnthropicSseEvent>): Promise<string> {
  let text = '';
  for await (const e of events) text += sseJson(e.data, e.event);
  return text;
}

/** An Anthropic client whose every request is answered with `body`; records what it sent. */
function clientAnswering(body: string, contentType: string) {
  const sent: unknown[] = [];
  const client = new Anthropic({
    apiKey: 'test-key',
    baseURL: 'http://gatehouse.test',
    maxRetries: 0,
    fetch: async (_url: string | URL | Request, init?: RequestInit) => {
      sent.push(JSON.parse(String(init?.body)));
      return new Response(body, { status: 200, headers: { 'content-type': contentType } });
    },
  });
  return { client, sent };
}

const PARAMS = {
  model: 'claude-test',
  max_tokens: 256,
  messages: [{ role: 'user' as const, content: 'Hi' }],
};

/** What the SDK adds on top of the wire message. */
const withoutSdkExtras = (m: object) => {
  const { parsed_output: _ignored, ...rest } = m as Record<string, unknown>;
  return JSON.parse(JSON.stringify(rest));
};

// ---- request ------------------------------------------------------------------------------------

describe('messagesRequestToChat', () => {
  it('maps a full Anthropic request (golden)', () => {
    const req = messagesRequestToChat({
      model: 'anthropic/claude-sonnet',
      max_tokens: 1024,
      system: [
        { type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Answer in French.' },
      ],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in these?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Two images.', signature: 'sig-from-anthropic' },
            { type: 'redacted_thinking', data: 'opaque' },
            { type: 'text', text: 'Let me look ' },
            { type: 'text', text: 'closer.' },
            { type: 'tool_use', id: 'toolu_1', name: 'zoom', input: { factor: 2 } },
            { type: 'tool_use', id: 'toolu_2', name: 'ocr', input: {} },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'zoomed' },
            {
              type: 'tool_result',
              tool_use_id: 'toolu_2',
              is_error: true,
              content: [{ type: 'text', text: 'no text found' }],
            },
            { type: 'text', text: 'Go on.' },
          ],
        },
        { role: 'assistant', content: 'Un chat.' },
      ],
      temperature: 0.3,
      top_p: 0.9,
      stop_sequences: ['END'],
      tools: [
        {
          name: 'zoom',
          description: 'Zooms in',
          input_schema: { type: 'object', properties: { factor: { type: 'number' } } },
          cache_control: { type: 'ephemeral' },
        },
        { type: 'custom', name: 'ocr', input_schema: { type: 'object' }, strict: true },
      ],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      thinking: { type: 'enabled', budget_tokens: 2048 },
      metadata: { user_id: 'user-42' },
      stream: true,
      cache_control: { type: 'ephemeral' },
      service_tier: 'auto',
      provider: { order: ['anthropic'] },
    });
    expect(req).toEqual({
      model: 'anthropic/claude-sonnet',
      max_tokens: 1024,
      messages: [
        {
          role: 'system',
          content: [
            { type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } },
            { type: 'text', text: 'Answer in French.' },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in these?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          ],
        },
        {
          role: 'assistant',
          content: 'Let me look closer.',
          reasoning: 'Two images.',
          reasoning_details: [
            {
              type: 'reasoning.text',
              text: 'Two images.',
              signature: 'sig-from-anthropic',
              format: 'anthropic-claude-v1',
              index: 0,
            },
            { type: 'reasoning.encrypted', data: 'opaque', format: 'anthropic-claude-v1', index: 1 },
          ],
          tool_calls: [
            { id: 'toolu_1', type: 'function', function: { name: 'zoom', arguments: '{"factor":2}' } },
            { id: 'toolu_2', type: 'function', function: { name: 'ocr', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'toolu_1', content: 'zoomed' },
        { role: 'tool', tool_call_id: 'toolu_2', content: 'Error: no text found' },
        { role: 'user', content: [{ type: 'text', text: 'Go on.' }] },
        { role: 'assistant', content: 'Un chat.' },
      ],
      temperature: 0.3,
      top_p: 0.9,
      stop: ['END'],
      tools: [
        {
          type: 'function',
          function: {
            name: 'zoom',
            description: 'Zooms in',
            parameters: { type: 'object', properties: { factor: { type: 'number' } } },
          },
          cache_control: { type: 'ephemeral' },
        },
        { type: 'function', function: { name: 'ocr', parameters: { type: 'object' }, strict: true } },
      ],
      tool_choice: 'required',
      parallel_tool_calls: false,
      reasoning: { max_tokens: 2048 },
      user: 'user-42',
      stream: true,
      stream_options: { include_usage: true },
      cache_control: { type: 'ephemeral' },
      service_tier: 'auto',
    });
  });

  it('carries cache breakpoints on turns, top_k and service_tier; drops and lists context hints', () => {
    const cc = { type: 'ephemeral' } as const;
    const req = messagesRequestToChat(
      {
        model: 'm',
        max_tokens: 10,
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'go', cache_control: cc }] },
          {
            role: 'assistant',
            content: [
              { type: 'text', text: 'ok' },
              { type: 'tool_use', id: 't1', name: 'f', input: {}, cache_control: cc },
            ],
          },
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: 't1', content: 'done', cache_control: cc }],
          },
        ],
        tools: [
          { name: 'f', input_schema: { type: 'object' }, eager_input_streaming: true },
          { name: 'later', input_schema: { type: 'object' }, defer_loading: true },
        ],
        top_k: 8,
        service_tier: 'standard_only',
        context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] },
        speed: 'fast',
        diagnostics: { previous_message_id: 'msg_1' },
        compaction: { type: 'summarize' },
        fallbacks: 'default',
        output_config: { task_budget: { type: 'tokens', total: 50000 } },
      },
      { 'anthropic-beta': 'context-management-2025-06-27' },
    );
    expect(req.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'go', cache_control: cc }] },
      {
        role: 'assistant',
        content: 'ok',
        tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } }],
        cache_control: cc,
      },
      { role: 'tool', tool_call_id: 't1', content: 'done', cache_control: cc },
    ]);
    expect(req.top_k).toBe(8);
    expect(req.service_tier).toBe('default');
    expect(req.dropped).toEqual([
      'context_management',
      'speed',
      'diagnostics',
      'compaction',
      'fallbacks',
      'output_config.task_budget',
      'tools[0].eager_input_streaming',
      'tools[1].defer_loading',
    ]);
    // The header rides along: an Anthropic-format provider sends it, another lists it as dropped.
    expect(req.anthropic_beta).toBe('context-management-2025-06-27');
    // A deferred tool is offered up front: no other provider loads tools on demand.
    expect(req.tools?.map((t) => t.function.name)).toEqual(['f', 'later']);
    // Nothing to drop: no list at all.
    expect(
      messagesRequestToChat({ model: 'm', max_tokens: 1, messages: [{ role: 'user', content: 'x' }] }),
    ).not.toHaveProperty('dropped');
  });

  it('accepts exactly what the official client sends', async () => {
    const { client, sent } = clientAnswering(
      JSON.stringify(chatResponseToMessages(TEXT_RESPONSE, 'm')),
      'application/json',
    );
    const params: Anthropic.MessageCreateParams = {
      model: 'claude-test',
      max_tokens: 100,
      system: 'Be brief.',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
      tool_choice: { type: 'tool', name: 'lookup' },
      tools: [{ name: 'lookup', input_schema: { type: 'object', properties: {} } }],
      thinking: { type: 'adaptive', display: 'omitted' },
      output_config: { effort: 'high', format: { type: 'json_schema', schema: { type: 'object' } } },
    };
    await client.messages.create(params);
    expect(messagesRequestToChat(sent[0])).toEqual({
      model: 'claude-test',
      max_tokens: 100,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
      ],
      tools: [
        { type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } } },
      ],
      tool_choice: { type: 'function', function: { name: 'lookup' } },
      reasoning: { exclude: true, effort: 'high' },
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'output', schema: { type: 'object' }, strict: true },
      },
    });
  });

  it('maps the remaining tool_choice kinds, thinking modes and string content', () => {
    const base = { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
    expect(messagesRequestToChat({ ...base, tool_choice: { type: 'auto' } }).tool_choice).toBe('auto');
    expect(messagesRequestToChat({ ...base, tool_choice: { type: 'none' } }).tool_choice).toBe('none');
    expect(messagesRequestToChat({ ...base, thinking: { type: 'disabled' } }).reasoning).toBeUndefined();
    expect(messagesRequestToChat({ ...base, thinking: { type: 'adaptive' } }).reasoning).toEqual({});
    const plain = messagesRequestToChat({ ...base, system: 'sys', stream: false });
    expect(plain).toEqual({
      model: 'm',
      max_tokens: 10,
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'hi' },
      ],
    });
  });

  it('keeps images in tool results as parts and marks errors without text', () => {
    const req = messagesRequestToChat({
      model: 'm',
      max_tokens: 10,
      messages: [
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'shot', input: {} }] },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 't1',
              content: [
                { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: 'AAAA' } },
              ],
              is_error: true,
            },
            { type: 'tool_result', tool_use_id: 't1' },
          ],
        },
      ],
    });
    expect(req.messages.slice(1)).toEqual([
      {
        role: 'tool',
        tool_call_id: 't1',
        content: [
          { type: 'text', text: 'Error' },
          { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,AAAA' } },
        ],
      },
      { role: 'tool', tool_call_id: 't1', content: '' },
    ]);
  });

  const ok = { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
  it('carries the max effort (OpenAI has it too)', () => {
    expect(messagesRequestToChat({ ...ok, output_config: { effort: 'max' } }).reasoning).toEqual({
      effort: 'max',
    });
  });
  const user = (content: unknown) => ({ ...ok, messages: [{ role: 'user', content }] });
  const assistant = (content: unknown) => ({
    ...ok,
    messages: [...ok.messages, { role: 'assistant', content }],
  });
  it.each([
    ['body', null],
    ['model', { ...ok, model: '' }],
    ['max_tokens', { ...ok, max_tokens: undefined }],
    ['max_tokens', { ...ok, max_tokens: 0 }],
    ['messages', { ...ok, messages: [] }],
    ['messages[0].role', { ...ok, messages: [{ role: 'tool', content: 'x' }] }],
    ['top_k', { ...ok, top_k: 1.5 }],
    ['service_tier', { ...ok, service_tier: 'priority' }],
    ['cache_control.type', { ...ok, cache_control: { type: 'forever' } }],
    ['container', { ...ok, container: 'cntr_1' }],
    ['mcp_servers', { ...ok, mcp_servers: [{ type: 'url', url: 'https://mcp', name: 'x' }] }],
    ['inference_geo', { ...ok, inference_geo: 'eu' }],
    ['temperature', { ...ok, temperature: 1.5 }],
    ['stop_sequences[0]', { ...ok, stop_sequences: [1] }],
    [
      'messages[0].content[0].source.media_type',
      user([{ type: 'document', source: { type: 'base64', data: 'x' } }]),
    ],
    [
      'messages[0].content[0].source.type',
      user([{ type: 'document', source: { type: 'file', file_id: 'file_1' } }]),
    ],
    [
      'messages[0].content[0].citations',
      user([
        {
          type: 'document',
          source: { type: 'text', media_type: 'text/plain', data: 'x' },
          citations: { enabled: true },
        },
      ]),
    ],
    ['messages[0].content[0].type', user([{ type: 'search_result', content: [] }])],
    [
      'messages[0].content[0].source.type',
      user([{ type: 'image', source: { type: 'file', file_id: 'f1' } }]),
    ],
    [
      'messages[0].content[0].source.media_type',
      user([{ type: 'image', source: { type: 'base64', media_type: 'image/bmp', data: 'x' } }]),
    ],
    ['messages[0].content', user([])],
    [
      'messages[0].content[0].content[0].source',
      user([{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'document' }] }]),
    ],
    [
      'messages[1].content[0].type',
      assistant([{ type: 'image', source: { type: 'url', url: 'https://x' } }]),
    ],
    [
      'messages[1].content[0].caller.type',
      assistant([
        {
          type: 'tool_use',
          id: 't',
          name: 'n',
          input: {},
          caller: { type: 'code_execution_20250825', tool_id: 'x' },
        },
      ]),
    ],
    ['messages[1].content[0].input', assistant([{ type: 'tool_use', id: 't', name: 'n', input: 'x' }])],
    ['tools[0].type', { ...ok, tools: [{ type: 'code_execution_20250825', name: 'code_execution' }] }],
    ['tools[0].input_schema', { ...ok, tools: [{ name: 'x' }] }],
    ['tools[0].input_examples', { ...ok, tools: [{ name: 'x', input_schema: {}, input_examples: [{}] }] }],
    ['tool_choice.type', { ...ok, tool_choice: { type: 'some' } }],
    ['tool_choice.name', { ...ok, tool_choice: { type: 'tool' } }],
    ['thinking.type', { ...ok, thinking: { type: 'between_tools' } }],
    ['thinking.budget_tokens', { ...ok, thinking: { type: 'enabled' } }],
    ['output_config.effort', { ...ok, output_config: { effort: 'extreme' } }],
    ['output_config.format.type', { ...ok, output_config: { format: { type: 'xml' } } }],
    ['system[0].type', { ...ok, system: [{ type: 'image' }] }],
    ['metadata.user_id', { ...ok, metadata: { user_id: 7 } }],
  ])('refuses %s', (field, body) => {
    expect(() => messagesRequestToChat(body)).toThrow(TranslationError);
    expect(() => messagesRequestToChat(body)).toThrow(new RegExp(`^${field.replace(/[[\].]/g, '\\$&')}:`));
  });
});

// ---- non-streamed response ------------------------------------------------------------------------

describe('chatResponseToMessages', () => {
  it('maps reasoning, text and tool calls with usage split the Anthropic way (golden)', () => {
    const msg = chatResponseToMessages(
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
      'anthropic/claude-sonnet',
    );
    expect(msg).toEqual({
      id: 'msg_abc123',
      type: 'message',
      role: 'assistant',
      model: 'anthropic/claude-sonnet',
      content: [
        { type: 'thinking', thinking: 'Need the tool.', signature: THINKING_SIGNATURE },
        { type: 'text', text: 'Weather coming up.' },
        {
          type: 'tool_use',
          id: 'call_1',
          name: 'get_weather',
          input: { city: 'Oslo' },
          caller: { type: 'direct' },
        },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      stop_details: null,
      usage: {
        input_tokens: 50,
        output_tokens: 40,
        cache_creation_input_tokens: 20,
        cache_read_input_tokens: 50,
        cache_creation: null,
        server_tool_use: null,
        service_tier: null,
        inference_geo: null,
        speed: null,
        output_tokens_details: { thinking_tokens: 12 },
      },
      container: null,
      diagnostics: null,
    } satisfies AnthropicMessage);
    // The wire shape satisfies the official client's type — but for text blocks' `citations`, which
    // the SDK types as always there and Anthropic's API leaves out when there are none (as we do).
    const typed: Omit<Anthropic.Message, 'content'> = msg;
    expect(typed.id).toBe('msg_abc123');
  });

  it.each<[FinishReason, string | undefined, string]>([
    ['stop', undefined, 'end_turn'],
    ['stop', 'stop_sequence', 'stop_sequence'],
    ['length', undefined, 'max_tokens'],
    ['tool_calls', undefined, 'tool_use'],
    ['content_filter', undefined, 'refusal'],
  ])('maps finish_reason %s (native %s) to %s', (finish, native, expected) => {
    const res = response({ role: 'assistant', content: 'x' }, finish);
    if (native && res.choices[0]) res.choices[0].native_finish_reason = native;
    const msg = chatResponseToMessages(res, 'm');
    expect(msg.stop_reason).toBe(expected);
    expect(msg.stop_details).toEqual(
      expected === 'refusal' ? { type: 'refusal', category: null, explanation: null } : null,
    );
  });

  it('reports tool_use when tool calls come with finish_reason stop, and {} for unparsable arguments', () => {
    const msg = chatResponseToMessages(
      response(
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'a', arguments: '{not json' } },
            { id: 'c2', type: 'function', function: { name: 'b', arguments: '[1,2]' } },
            { id: 'c3', type: 'function', function: { name: 'c', arguments: '' } },
          ],
        },
        'stop',
      ),
      'm',
    );
    expect(msg.stop_reason).toBe('tool_use');
    expect(msg.content.map((b) => (b.type === 'tool_use' ? b.input : null))).toEqual([{}, {}, {}]);
    expect(msg.usage.input_tokens).toBe(0);
  });

  it('turns a refusal into text and handles an empty choice list', () => {
    const refused = chatResponseToMessages(
      response({ role: 'assistant', content: null, refusal: 'I cannot help with that.' }, 'content_filter'),
      'm',
    );
    expect(refused.content).toEqual([{ type: 'text', text: 'I cannot help with that.' }]);
    const empty = chatResponseToMessages({ ...TEXT_RESPONSE, choices: [] }, 'm');
    expect(empty.content).toEqual([]);
    expect(empty.stop_reason).toBe('end_turn');
  });

  it('answers real Anthropic signatures and redacted_thinking, the placeholder for other providers (Gemini’s signatures sealed after the answer)', () => {
    expect(chatResponseToMessages(SIGNED_RESPONSE, 'claude-test').content).toEqual([
      { type: 'thinking', thinking: 'Let me think.', signature: 'real-sig-1' },
      { type: 'redacted_thinking', data: 'REDACTED==' },
      { type: 'thinking', thinking: 'Again.', signature: 'real-sig-2' },
      { type: 'text', text: 'The answer is 4.' },
    ]);
    const gemini = chatResponseToMessages(GEMINI_RESPONSE, 'claude-test').content;
    expect(gemini).toEqual([
      { type: 'thinking', thinking: 'Hmm.', signature: THINKING_SIGNATURE },
      { type: 'text', text: 'Done.' },
      { type: 'redacted_thinking', data: expect.stringMatching(/^gatehouse\.rd1\./) },
    ]);
    expect(decodeReasoningState((gemini[2] as { data: string }).data)).toEqual(
      GEMINI_RESPONSE.choices[0]!.message.reasoning_details,
    );
  });

  it('round-trips real signatures: answered blocks sent back become the same reasoning_details', () => {
    const answered = chatResponseToMessages(SIGNED_RESPONSE, 'claude-test');
    const req = messagesRequestToChat({
      ...PARAMS,
      messages: [...PARAMS.messages, { role: 'assistant', content: answered.content }],
    });
    expect(req.messages.at(-1)).toEqual({
      role: 'assistant',
      content: 'The answer is 4.',
      reasoning: 'Let me think.\n\nAgain.',
      reasoning_details: SIGNED_RESPONSE.choices[0]!.message.reasoning_details,
    });
    // The placeholder is Gatehouse's, not a signature: that thinking gives only `reasoning`; the
    // sealed block gives Gemini's own entries back.
    const placeholder = messagesRequestToChat({
      ...PARAMS,
      messages: [
        ...PARAMS.messages,
        { role: 'assistant', content: chatResponseToMessages(GEMINI_RESPONSE, 'claude-test').content },
      ],
    });
    expect(placeholder.messages.at(-1)).toEqual({
      role: 'assistant',
      content: 'Done.',
      reasoning: 'Hmm.',
      reasoning_details: GEMINI_RESPONSE.choices[0]!.message.reasoning_details,
    });
  });

  it('parses in the official client', async () => {
    const wire = chatResponseToMessages(REASONING_RESPONSE, 'claude-test');
    const { client } = clientAnswering(JSON.stringify(wire), 'application/json');
    const msg = await client.messages.create(PARAMS);
    expect(JSON.parse(JSON.stringify(msg))).toEqual(wire);
  });
});

// ---- streams ---------------------------------------------------------------------------------------

describe('chatStreamToMessages', () => {
  it('emits the exact Anthropic event sequence for a text stream (golden)', async () => {
    const events = await collect(chatStreamToMessages(from(TEXT_STREAM), 'claude-test'));
    expect(events.map((e) => e.event)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    for (const e of events) expect(e.data.type).toBe(e.event);
    expect(events[0]?.data).toEqual({
      type: 'message_start',
      message: {
        id: 'msg_abc123',
        type: 'message',
        role: 'assistant',
        model: 'claude-test',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        stop_details: null,
        usage: {
          input_tokens: 0,
          output_tokens: 0,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          cache_creation: null,
          server_tool_use: null,
          service_tier: null,
          inference_geo: null,
          speed: null,
          output_tokens_details: null,
        },
        container: null,
        diagnostics: null,
      },
    });
    expect(events.slice(1).map((e) => e.data)).toEqual([
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo!' } },
      { type: 'content_block_stop', index: 0 },
      {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null, stop_details: null, container: null },
        usage: {
          input_tokens: 10,
          output_tokens: 2,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          server_tool_use: null,
          output_tokens_details: null,
        },
      },
      { type: 'message_stop' },
    ]);
  });

  it('streams reasoning then text, closing thinking with a signature', async () => {
    const events = await collect(chatStreamToMessages(from(REASONING_STREAM), 'claude-test'));
    expect(events.slice(1, -2).map((e) => e.data)).toEqual([
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'thinking', thinking: '', signature: '' },
      },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Let me ' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'think.' } },
      {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'signature_delta', signature: THINKING_SIGNATURE },
      },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'The answer' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: ' is 4.' } },
      { type: 'content_block_stop', index: 1 },
    ]);
  });

  it('streams real signatures in signature_delta and redacted_thinking whole', async () => {
    const events = await collect(chatStreamToMessages(from(SIGNED_STREAM), 'claude-test'));
    expect(events.slice(1, -2).map((e) => e.data)).toEqual([
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'thinking', thinking: '', signature: '' },
      },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Let me ' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'think.' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'real-sig-1' } },
      { type: 'content_block_stop', index: 0 },
      {
        type: 'content_block_start',
        index: 1,
        content_block: { type: 'redacted_thinking', data: 'REDACTED==' },
      },
      { type: 'content_block_stop', index: 1 },
      {
        type: 'content_block_start',
        index: 2,
        content_block: { type: 'thinking', thinking: '', signature: '' },
      },
      { type: 'content_block_delta', index: 2, delta: { type: 'thinking_delta', thinking: 'Again.' } },
      { type: 'content_block_delta', index: 2, delta: { type: 'signature_delta', signature: 'real-sig-2' } },
      { type: 'content_block_stop', index: 2 },
      { type: 'content_block_start', index: 3, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 3, delta: { type: 'text_delta', text: 'The answer is 4.' } },
      { type: 'content_block_stop', index: 3 },
    ]);
  });

  it("streams another provider's reasoning as one thinking block with the placeholder signature", async () => {
    const events = await collect(chatStreamToMessages(from(GEMINI_STREAM), 'claude-test'));
    expect(events.slice(1, -2).map((e) => e.data)).toEqual([
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'thinking', thinking: '', signature: '' },
      },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Hmm.' } },
      {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'signature_delta', signature: THINKING_SIGNATURE },
      },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Done.' } },
      { type: 'content_block_stop', index: 1 },
      // Gemini's signatures, sealed for the next turn.
      {
        type: 'content_block_start',
        index: 2,
        content_block: { type: 'redacted_thinking', data: expect.stringMatching(/^gatehouse\.rd1\./) },
      },
      { type: 'content_block_stop', index: 2 },
    ]);
    const sealed = (events.at(-4)?.data as any).content_block.data;
    expect(decodeReasoningState(sealed)).toEqual(GEMINI_RESPONSE.choices[0]!.message.reasoning_details);
  });

  it('streams two parallel tool calls with arguments split across chunks', async () => {
    const events = await collect(chatStreamToMessages(from(TOOLS_STREAM), 'claude-test'));
    expect(events.slice(4, -2).map((e) => e.data)).toEqual([
      {
        type: 'content_block_start',
        index: 1,
        content_block: {
          type: 'tool_use',
          id: 'call_a',
          name: 'get_weather',
          input: {},
          caller: { type: 'direct' },
        },
      },
      {
        type: 'content_block_delta',
        index: 1,
        delta: { type: 'input_json_delta', partial_json: '{"city":' },
      },
      {
        type: 'content_block_delta',
        index: 1,
        delta: { type: 'input_json_delta', partial_json: '"Paris"}' },
      },
      { type: 'content_block_stop', index: 1 },
      {
        type: 'content_block_start',
        index: 2,
        content_block: {
          type: 'tool_use',
          id: 'call_b',
          name: 'get_time',
          input: {},
          caller: { type: 'direct' },
        },
      },
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"tz"' } },
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: ':"CET"}' } },
      { type: 'content_block_stop', index: 2 },
    ]);
    expect(events.at(-2)?.data).toMatchObject({ type: 'message_delta', delta: { stop_reason: 'tool_use' } });
  });

  it.each([
    ['text', TEXT_STREAM, TEXT_RESPONSE],
    ['reasoning + text', REASONING_STREAM, REASONING_RESPONSE],
    ['parallel tool calls', TOOLS_STREAM, TOOLS_RESPONSE],
    ['signed (Anthropic) reasoning', SIGNED_STREAM, SIGNED_RESPONSE],
    ['Gemini reasoning', GEMINI_STREAM, GEMINI_RESPONSE],
  ])('%s: the official MessageStream accumulates exactly the non-streamed message', async (_name, chunks, res) => {
    const text = await sseText(chatStreamToMessages(from(chunks), 'claude-test'));
    const { client } = clientAnswering(text, 'text/event-stream');
    const final = await client.messages.stream(PARAMS).finalMessage();
    expect(withoutSdkExtras(final)).toEqual(chatResponseToMessages(res, 'claude-test'));
  });

  it('raw events parse in the official client (messages.create with stream: true)', async () => {
    const text = await sseText(chatStreamToMessages(from(TOOLS_STREAM), 'claude-test'));
    const { client } = clientAnswering(text, 'text/event-stream');
    const stream = await client.messages.create({ ...PARAMS, stream: true });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types[0]).toBe('message_start');
    expect(types.at(-1)).toBe('message_stop');
    expect(types.filter((t) => t === 'content_block_start')).toHaveLength(3);
  });

  it('reports max_tokens, and input usage that arrives on the first chunk', async () => {
    const first: ChatChunk = { ...chunk({ role: 'assistant', content: 'Trunc' }), usage: USAGE };
    const events = await collect(chatStreamToMessages(from([first, chunk({}, 'length')]), 'm'));
    expect(events[0]?.data).toMatchObject({
      message: {
        usage: {
          input_tokens: 50,
          cache_read_input_tokens: 50,
          cache_creation_input_tokens: 20,
          output_tokens: 0,
        },
      },
    });
    expect(events.at(-2)?.data).toMatchObject({
      delta: { stop_reason: 'max_tokens' },
      usage: { output_tokens: 40, input_tokens: 50 },
    });
  });

  it('puts the prompt count an upstream told up front in message_start, the final counts in message_delta', async () => {
    const first: ChatChunk = {
      ...chunk({ role: 'assistant', content: '' }),
      prompt_usage: {
        prompt_tokens: 120,
        prompt_tokens_details: { cached_tokens: 50, cache_write_tokens: 20 },
      },
    };
    const text = await sseText(
      chatStreamToMessages(from([first, ...TEXT_STREAM.slice(1, -1), usageChunk(USAGE)]), 'm'),
    );
    const { client } = clientAnswering(text, 'text/event-stream');
    const stream = client.messages.stream(PARAMS);
    const starts: unknown[] = [];
    stream.on('streamEvent', (e) => {
      // A copy: the client accumulates the rest of the stream into this very object.
      if (e.type === 'message_start') starts.push(structuredClone(e.message.usage));
    });
    const final = await stream.finalMessage();
    // As Anthropic counts: input excludes cache reads and writes.
    expect(starts).toEqual([
      expect.objectContaining({
        input_tokens: 50,
        cache_read_input_tokens: 50,
        cache_creation_input_tokens: 20,
        output_tokens: 0,
      }),
    ]);
    expect(final.usage).toMatchObject({
      input_tokens: 50,
      cache_read_input_tokens: 50,
      cache_creation_input_tokens: 20,
      output_tokens: 40,
    });
  });

  it('ends with an error event (not a throw) when the input fails, and the client sees the failure', async () => {
    const events = await collect(
      chatStreamToMessages(from(TEXT_STREAM.slice(0, 2), new Error('upstream reset')), 'claude-test'),
    );
    expect(events.map((e) => e.event)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'error',
    ]);
    expect(events.at(-1)?.data).toEqual({
      type: 'error',
      error: { type: 'api_error', message: 'upstream reset' },
    });

    const text = await sseText(
      chatStreamToMessages(from(TEXT_STREAM.slice(0, 2), new Error('upstream reset')), 'm'),
    );
    const { client } = clientAnswering(text, 'text/event-stream');
    await expect(client.messages.stream(PARAMS).finalMessage()).rejects.toThrow(/upstream reset/);
  });

  it('reports an error for an empty stream and for finish_reason error', async () => {
    expect((await collect(chatStreamToMessages(from([]), 'm'))).map((e) => e.event)).toEqual(['error']);
    const events = await collect(
      chatStreamToMessages(from([chunk({ content: 'a' }), chunk({}, 'error')]), 'm'),
    );
    expect(events.at(-1)?.event).toBe('error');
    expect(events.some((e) => e.event === 'message_stop')).toBe(false);
  });

  it('holds tool-call pieces until the name arrives and synthesizes a missing id', async () => {
    const events = await collect(
      chatStreamToMessages(
        from([
          chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a"' } }] }),
          chunk({ tool_calls: [{ index: 0, function: { name: 'f', arguments: ':1}' } }] }),
          chunk({}, 'tool_calls'),
        ]),
        'm',
      ),
    );
    expect(events.slice(1, 4).map((e) => e.data)).toEqual([
      {
        type: 'content_block_start',
        index: 0,
        content_block: {
          type: 'tool_use',
          id: 'call_abc123_0',
          name: 'f',
          input: {},
          caller: { type: 'direct' },
        },
      },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"a":1}' } },
      { type: 'content_block_stop', index: 0 },
    ]);
  });
});
