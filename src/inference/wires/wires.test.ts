import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { encodeReasoningState } from '../../formats/reasoning-state.js';
import { sseJson } from '../../formats/sse.js';
import { ApiError } from '../../lib/errors.js';
import type { RouteInfo } from '../../routing/call.js';
import { WIRES } from './index.js';
import { countTokensWire } from './messages.js';

const request = { id: 'req-1' } as FastifyRequest;
const GATEHOUSE = {
  provider: { order: ['x'] },
  models: ['a/b'],
  route: 'fallback',
  debug: {},
  transforms: [],
  plugins: [],
};

describe('lane bodies: the caller’s own, for the provider', () => {
  it.each(
    Object.values(WIRES),
  )('$path keeps unknown fields, drops Gatehouse’s, rewrites the model', (wire) => {
    const body = { model: 'vendor/model', a_field_from_next_year: { deep: [1] }, ...GATEHOUSE };
    const sent = wire.laneBody(body, 'upstream-id');
    expect(sent.model).toBe('upstream-id');
    expect(sent.a_field_from_next_year).toEqual({ deep: [1] });
    for (const f of Object.keys(GATEHOUSE)) expect(sent).not.toHaveProperty(f);
    expect(body.model).toBe('vendor/model'); // the caller's body is not changed
    expect(body.provider).toBeDefined();
  });

  it('chat: asks a stream for its usage, maps OpenRouter’s reasoning, strips and lists breakpoints', () => {
    const body = {
      model: 'm',
      stream: true,
      stream_options: { include_obfuscation: false },
      reasoning: { effort: 'high' },
      usage: { include: true },
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'rules', cache_control: { type: 'ephemeral' } }] },
        { role: 'user', content: 'hi' },
      ],
    };
    const sent = WIRES.chat.laneBody(body, 'gpt-x');
    expect(sent.stream_options).toEqual({ include_obfuscation: false, include_usage: true });
    expect(sent.reasoning_effort).toBe('high');
    expect(sent).not.toHaveProperty('reasoning');
    expect(sent).not.toHaveProperty('usage');
    expect(sent.messages).toEqual([
      { role: 'system', content: [{ type: 'text', text: 'rules' }] },
      { role: 'user', content: 'hi' },
    ]);
    expect(WIRES.chat.laneDropped?.(body)).toEqual(['cache_control']);
    expect(WIRES.chat.laneDropped?.({ model: 'm', messages: [] })).toEqual([]);
    // The caller's own messages keep their breakpoints (a translated fallback carries them).
    expect(JSON.stringify(body.messages)).toContain('cache_control');
  });

  it('messages: leaves out (and lists) the redacted_thinking blocks holding Gatehouse’s sealed state', () => {
    const sealed = encodeReasoningState([
      { type: 'reasoning.encrypted', data: 'g-sig', id: 'call_1', format: 'google-gemini-v1', index: 0 },
    ]);
    const body = {
      model: 'm',
      max_tokens: 10,
      messages: [
        { role: 'user', content: 'hi' },
        {
          role: 'assistant',
          content: [
            { type: 'redacted_thinking', data: 'anthropic-own' },
            { type: 'text', text: 'ok' },
            { type: 'redacted_thinking', data: sealed },
          ],
        },
      ],
    };
    const sent = WIRES.messages.laneBody(body, 'claude-x');
    expect((sent.messages as any[])[1].content).toEqual([
      { type: 'redacted_thinking', data: 'anthropic-own' },
      { type: 'text', text: 'ok' },
    ]);
    expect(WIRES.messages.laneDropped?.(body)).toEqual(['messages[1].content[2]']);
    expect(WIRES.messages.laneDropped?.({ model: 'm', messages: [] })).toEqual([]);
  });

  it('chat: a reasoning budget (what the OpenRouter AI SDK provider sends) becomes an effort', () => {
    const effort = (reasoning: unknown, extra: object = {}) =>
      WIRES.chat.laneBody({ model: 'm', messages: [], reasoning, ...extra }, 'gpt-x').reasoning_effort;
    expect(effort({ max_tokens: 1024 })).toBe('low');
    expect(effort({ max_tokens: 2048 })).toBe('medium');
    expect(effort({ max_tokens: 20000 })).toBe('high');
    expect(effort({ max_tokens: 2048 }, { reasoning_effort: 'minimal' })).toBe('minimal');
    expect(effort({ max_tokens: 'lots' })).toBeUndefined();
    expect(effort({ exclude: true })).toBeUndefined();
  });

  it('messages: Anthropic refuses fields it does not know — OpenRouter’s usage flag goes too', () => {
    const sent = WIRES.messages.laneBody(
      { model: 'm', usage: { include: true }, metadata: { user_id: 'u' } },
      'c',
    );
    expect(sent).toEqual({ model: 'c', metadata: { user_id: 'u' } });
  });
});

describe('text walkers: what content filters read and rewrite', () => {
  it('messages: the system prompt, text blocks, tool results and tool inputs; never thinking', () => {
    const body = {
      system: [{ type: 'text', text: 'sys' }],
      messages: [
        { role: 'user', content: 'plain' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'secret thoughts', signature: 's' },
            { type: 'tool_use', id: 't', name: 'n', input: { q: 'query', deep: { list: ['item'] } } },
          ],
        },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'text', text: 'result' }] }],
        },
      ],
      tools: [{ name: 'n', description: 'describes', input_schema: {} }],
    };
    const slots = WIRES.messages.texts(body);
    expect(slots.map((s) => [s.role, s.text])).toEqual([
      ['system', 'sys'],
      ['user', 'plain'],
      ['assistant', 'query'],
      ['assistant', 'item'],
      ['tool', 'result'],
      ['system', 'describes'],
    ]);
    for (const s of slots) s.set(s.text.toUpperCase());
    expect(body.messages[1]?.content).toEqual([
      { type: 'thinking', thinking: 'secret thoughts', signature: 's' },
      { type: 'tool_use', id: 't', name: 'n', input: { q: 'QUERY', deep: { list: ['ITEM'] } } },
    ]);
    expect(body.system[0]?.text).toBe('SYS');
  });

  it('responses: instructions, message parts, call arguments and tool outputs', () => {
    const body = {
      instructions: 'be brief',
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'hello' }] },
        { type: 'function_call', call_id: 'c', name: 'f', arguments: '{"a":1}' },
        { type: 'function_call_output', call_id: 'c', output: 'done' },
        { type: 'custom_tool_call', call_id: 'd', name: 'patch', input: '*** patch' },
        { role: 'assistant', content: [{ type: 'refusal', refusal: 'I will not' }] },
      ],
    };
    expect(WIRES.responses.texts(body).map((s) => [s.role, s.text])).toEqual([
      ['system', 'be brief'],
      ['user', 'hello'],
      ['assistant', '{"a":1}'],
      ['tool', 'done'],
      ['assistant', '*** patch'],
      ['assistant', 'I will not'],
    ]);
    expect(WIRES.responses.texts({ input: 'just text' }).map((s) => s.text)).toEqual(['just text']);
  });

  it('chat: message names, tool schemas (property names renamed in place) and the response format', () => {
    const body = {
      messages: [{ role: 'user', name: 'ada', content: 'hi' }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'f',
            description: 'does',
            parameters: { type: 'object', properties: { a: { type: 'string', enum: ['x'] }, b: {} } },
          },
        },
      ],
      response_format: { type: 'json_schema', json_schema: { name: 'n', schema: { description: 'out' } } },
    };
    const slots = WIRES.chat.texts(body);
    expect(slots.map((s) => [s.role, s.text])).toEqual([
      ['user', 'ada'],
      ['user', 'hi'],
      ['system', 'does'],
      ['system', 'object'],
      ['system', 'a'],
      ['system', 'b'],
      ['system', 'string'],
      ['system', 'x'],
      ['system', 'out'],
    ]);
    slots[4]?.set('A');
    expect(Object.keys(body.tools[0]?.function.parameters.properties ?? {})).toEqual(['A', 'b']);
  });

  it("documents' text in every format: read, and rewritten where it stands (a text file re-encoded); a PDF is not read", () => {
    const b64 = (t: string) => Buffer.from(t).toString('base64');
    const chat = {
      messages: [
        {
          role: 'user',
          content: [
            {
              type: 'file',
              file: { filename: 'n.txt', file_data: `data:text/plain;base64,${b64('secret plan')}` },
            },
            { type: 'file', file: { file_data: `data:application/pdf;base64,${b64('%PDF')}` } },
          ],
        },
      ],
    };
    const chatSlots = WIRES.chat.texts(chat);
    expect(chatSlots.map((s) => [s.role, s.text])).toEqual([['user', 'secret plan']]);
    chatSlots[0]?.set('[REDACTED] plan');
    expect(chat.messages[0]?.content[0]?.file.file_data).toBe(
      `data:text/plain;base64,${b64('[REDACTED] plan')}`,
    );

    const responses = {
      input: [
        {
          role: 'user',
          content: [{ type: 'input_file', file_data: `data:text/markdown;base64,${b64('# notes')}` }],
        },
      ],
    };
    expect(WIRES.responses.texts(responses).map((s) => [s.role, s.text])).toEqual([['user', '# notes']]);

    const messages = {
      messages: [
        {
          role: 'user',
          content: [
            {
              type: 'document',
              title: 'T',
              context: 'C',
              source: { type: 'text', media_type: 'text/plain', data: 'D' },
            },
            { type: 'document', source: { type: 'content', content: [{ type: 'text', text: 'E' }] } },
            {
              type: 'document',
              source: { type: 'base64', media_type: 'application/pdf', data: b64('%PDF') },
            },
            {
              type: 'tool_result',
              tool_use_id: 't',
              content: [
                { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'F' } },
                { type: 'search_result', source: 'u', title: 'G', content: [{ type: 'text', text: 'H' }] },
              ],
            },
          ],
        },
      ],
    };
    const slots = WIRES.messages.texts(messages);
    expect(slots.map((s) => [s.role, s.text])).toEqual([
      ['user', 'T'],
      ['user', 'C'],
      ['user', 'D'],
      ['user', 'E'],
      ['tool', 'F'],
      ['tool', 'G'],
      ['tool', 'H'],
    ]);
    slots[2]?.set('d');
    expect(messages.messages[0]?.content[0]?.source?.data).toBe('d');
  });

  it('take any JSON without failing: shapes they do not know are skipped', () => {
    for (const wire of Object.values(WIRES)) {
      for (const body of [
        {},
        { messages: 'x', input: 7, system: null, tools: [null, 1] },
        { messages: [null, 3, []] },
      ])
        expect(() => wire.texts(body as never)).not.toThrow();
    }
  });
});

describe('errors in the caller’s format', () => {
  it('messages answers Anthropic’s error object, and a lane’s own error body as it came', () => {
    expect(WIRES.messages.renderError({ status: 429, message: 'slow down' }, request)).toEqual({
      type: 'error',
      error: { type: 'rate_limit_error', message: 'slow down' },
      request_id: 'req-1',
    });
    const native = { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } };
    expect(
      WIRES.messages.renderError(
        { status: 502, message: 'x', metadata: { upstream_error: native } },
        request,
      ),
    ).toBe(native);
    expect(countTokensWire.renderError({ status: 404, message: 'Model x not found' }, request)).toMatchObject(
      {
        error: { type: 'not_found_error' },
      },
    );
  });

  it('the OpenAI-format wires answer the standard envelope', () => {
    expect(WIRES.chat.renderError({ status: 403, message: 'no' }, request)).toEqual({
      error: { code: 403, message: 'no' },
    });
  });

  it('responses: a lane stream failing mid-way ends in response.failed and error, numbered after what was relayed', () => {
    const data = (frame: string) => JSON.parse(frame.slice(frame.indexOf('data: ') + 6));
    const info = { generationId: 'gen-1' } as RouteInfo;
    const wire = WIRES.responses;
    wire.relayFrame?.(
      { frame: sseJson({ type: 'response.created', sequence_number: 0 }, 'response.created') },
      info,
    );
    // The upstream's bytes as they came, several events at once.
    const bytes = Buffer.from(
      'event: response.in_progress\ndata: {"type":"response.in_progress","sequence_number":1}\n\n' +
        'event: response.output_item.added\ndata: {"type":"response.output_item.added","sequence_number": 2}\n\n',
    );
    wire.relayFrame?.({ frame: bytes }, info);
    const [failed, error] = wire.streamError(info, 'connection closed').map(data);
    expect(failed).toMatchObject({
      type: 'response.failed',
      sequence_number: 3,
      response: {
        id: 'gen-1',
        status: 'failed',
        error: { code: 'server_error', message: 'connection closed' },
      },
    });
    expect(error).toEqual({
      type: 'error',
      sequence_number: 4,
      code: 'server_error',
      message: 'connection closed',
      param: null,
    });
    // Nothing relayed yet: numbered from 0.
    expect(
      data(wire.streamError({ generationId: 'gen-2' } as RouteInfo, 'x')[0] as string).sequence_number,
    ).toBe(0);
  });

  it('inspect: a model is required, stream must be a boolean', () => {
    expect(WIRES.chat.inspect({ model: 'a/b', stream: true })).toEqual({ model: 'a/b', stream: true });
    expect(() => WIRES.messages.inspect({ messages: [] })).toThrow(ApiError);
    expect(() => WIRES.responses.inspect({ model: 'a/b', stream: 'yes' })).toThrow(/stream/);
  });
});
