import { describe, expect, it } from 'vitest';
import { type ChatChunk, type ChatRequest, TranslationError } from '../../formats/chat.js';
import { collapseReasoningDetails } from '../../formats/reasoning-details.js';
import { UpstreamError } from '../types.js';
import {
  AnthropicStreamMapper,
  DEFAULT_MAX_TOKENS,
  fromAnthropicResponse,
  mapAnthropicUsage,
  mapStopReason,
  toAnthropicRequest,
} from './wire.js';

const req = (r: Partial<ChatRequest>): ChatRequest => ({ model: 'claude-x', messages: [], ...r });
const F = 'anthropic-claude-v1';

describe('toAnthropicRequest', () => {
  it('hoists system/developer messages and defaults max_tokens', () => {
    const body = toAnthropicRequest(
      req({
        messages: [
          { role: 'system', content: 'Rule one.' },
          { role: 'user', content: 'Hi' },
          { role: 'developer', content: [{ type: 'text', text: 'Rule two.' }] },
        ],
      }),
      false,
    );
    // Given as parts: kept as blocks (see 'keeps cache breakpoints' for the string form's rule).
    expect(body.system).toEqual([
      { type: 'text', text: 'Rule one.' },
      { type: 'text', text: 'Rule two.' },
    ]);
    expect(body.max_tokens).toBe(DEFAULT_MAX_TOKENS);
    expect(body.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }]);
    expect(body).not.toHaveProperty('stream');
  });

  it('turns tool calls into tool_use and consecutive tool messages into one user turn', () => {
    const body = toAnthropicRequest(
      req({
        messages: [
          { role: 'user', content: 'Weather in Paris and Rome?' },
          {
            role: 'assistant',
            content: 'Checking.',
            reasoning: 'dropped',
            tool_calls: [
              { id: 'tu_1', type: 'function', function: { name: 'w', arguments: '{"city":"Paris"}' } },
              { id: 'tu_2', type: 'function', function: { name: 'w', arguments: '' } },
            ],
          },
          { role: 'tool', tool_call_id: 'tu_1', content: '21' },
          { role: 'tool', tool_call_id: 'tu_2', content: [{ type: 'text', text: '25' }] },
          { role: 'user', content: 'And tomorrow?' },
        ],
      }),
      false,
    );
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris and Rome?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', id: 'tu_1', name: 'w', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'tu_2', name: 'w', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'tu_1', content: '21' },
          { type: 'tool_result', tool_use_id: 'tu_2', content: [{ type: 'text', text: '25' }] },
          { type: 'text', text: 'And tomorrow?' },
        ],
      },
    ]);
  });

  it('keeps images and documents in the tool_result block', () => {
    const body = toAnthropicRequest(
      req({
        messages: [
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 't1', type: 'function', function: { name: 'shot', arguments: '{}' } }],
          },
          {
            role: 'tool',
            tool_call_id: 't1',
            content: [
              { type: 'text', text: 'screen' },
              { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
              { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBE' } },
            ],
          },
        ],
      }),
      false,
    );
    expect((body.messages as unknown[]).at(-1)).toEqual({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 't1',
          content: [
            { type: 'text', text: 'screen' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
            {
              type: 'document',
              title: 'a.pdf',
              source: { type: 'base64', media_type: 'application/pdf', data: 'JVBE' },
            },
          ],
        },
      ],
    });
  });

  it('refuses tool arguments that are not a JSON object', () => {
    const bad = (args: string) =>
      toAnthropicRequest(
        req({
          messages: [
            { role: 'user', content: 'x' },
            {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: args } }],
            },
          ],
        }),
        false,
      );
    expect(() => bad('{oops')).toThrow(TranslationError);
    expect(() => bad('[1]')).toThrow(TranslationError);
  });

  it('maps images: data URLs → base64, http URLs → url', () => {
    const body = toAnthropicRequest(
      req({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/4AAQ' } },
              { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
            ],
          },
        ],
      }),
      false,
    );
    expect((body.messages as any)[0].content).toEqual([
      { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4AAQ' } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
    ]);
    expect(() =>
      toAnthropicRequest(
        req({
          messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'ftp://x' } }] }],
        }),
        false,
      ),
    ).toThrow(TranslationError);
  });

  it('maps sampling, stop, user, tools, tool_choice and json_schema', () => {
    const body = toAnthropicRequest(
      req({
        messages: [{ role: 'user', content: 'x' }],
        max_tokens: 300,
        temperature: 1.7,
        top_p: 0.9,
        stop: 'END',
        user: 'u-1',
        seed: 4,
        tools: [
          {
            type: 'function',
            function: {
              name: 'f',
              description: 'd',
              parameters: { type: 'object', properties: { a: { type: 'string' } } },
            },
          },
        ],
        tool_choice: 'required',
        parallel_tool_calls: false,
        response_format: { type: 'json_schema', json_schema: { name: 's', schema: { type: 'object' } } },
      }),
      true,
    );
    expect(body).toMatchObject({
      max_tokens: 300,
      temperature: 1,
      top_p: 0.9,
      stop_sequences: ['END'],
      metadata: { user_id: 'u-1' },
      tools: [
        {
          name: 'f',
          description: 'd',
          input_schema: { type: 'object', properties: { a: { type: 'string' } } },
        },
      ],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      output_config: { format: { type: 'json_schema', schema: { type: 'object' } } },
      stream: true,
    });
    expect(body).not.toHaveProperty('seed');
    const named = toAnthropicRequest(
      req({ messages: [], tools: [], tool_choice: { type: 'function', function: { name: 'g' } } }),
      false,
    );
    expect(named.tool_choice).toEqual({ type: 'tool', name: 'g' });
    expect(toAnthropicRequest(req({ tool_choice: 'none' }), false).tool_choice).toEqual({ type: 'none' });
  });

  it('keeps cache breakpoints where they were set; system given as parts stays blocks', () => {
    const cc = { type: 'ephemeral' } as const;
    const hour = { type: 'ephemeral', ttl: '1h' } as const;
    const body = toAnthropicRequest(
      req({
        messages: [
          { role: 'system', content: [{ type: 'text', text: 'Long rules', cache_control: hour }] },
          { role: 'system', content: 'More rules' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } }],
            cache_control: cc,
          },
          { role: 'tool', tool_call_id: 't1', content: 'done', cache_control: cc },
        ],
        tools: [{ type: 'function', function: { name: 'f' }, cache_control: cc }],
      }),
      false,
    );
    expect(body.system).toEqual([
      { type: 'text', text: 'Long rules', cache_control: hour },
      { type: 'text', text: 'More rules' },
    ]);
    expect(body.tools).toEqual([
      { name: 'f', input_schema: { type: 'object', properties: {} }, cache_control: cc },
    ]);
    expect(body.messages).toEqual([
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 't1', name: 'f', input: {}, cache_control: cc }],
      },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 't1', cache_control: cc, content: 'done' }],
      },
    ]);
    // Without parts or breakpoints the system prompt stays one string.
    const plain = toAnthropicRequest(
      req({
        messages: [
          { role: 'system', content: 'a' },
          { role: 'user', content: 'b' },
        ],
      }),
      false,
    );
    expect(plain.system).toBe('a');
    expect(JSON.stringify(plain)).not.toContain('cache_control');
  });

  it('keeps the last four breakpoints (top-level included), dropping the earliest', () => {
    const cc = { type: 'ephemeral' } as const;
    const body = toAnthropicRequest(
      req({
        messages: [
          { role: 'system', content: 'S', cache_control: cc },
          { role: 'user', content: [{ type: 'text', text: 'U1', cache_control: cc }] },
          { role: 'assistant', content: 'A', cache_control: cc },
          { role: 'user', content: [{ type: 'text', text: 'U2', cache_control: cc }] },
        ],
        tools: [{ type: 'function', function: { name: 'f' }, cache_control: cc }],
        cache_control: cc,
      }),
      false,
    );
    expect(body.cache_control).toEqual(cc);
    expect((body.tools as any[])[0]).not.toHaveProperty('cache_control');
    expect((body.system as any[])[0]).not.toHaveProperty('cache_control');
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'U1', cache_control: cc }] },
      { role: 'assistant', content: [{ type: 'text', text: 'A', cache_control: cc }] },
      { role: 'user', content: [{ type: 'text', text: 'U2', cache_control: cc }] },
    ]);
  });

  it('maps top_k, service_tier and safety_identifier; drops what has no equivalent', () => {
    const body = toAnthropicRequest(
      req({
        messages: [{ role: 'user', content: 'x' }],
        top_k: 20,
        service_tier: 'default',
        safety_identifier: 'hash',
        prompt_cache_key: 'k',
        verbosity: 'low',
        metadata: { a: 'b' },
        store: true,
        dropped: ['x'],
      }),
      false,
    );
    expect(body).toEqual({
      model: 'claude-x',
      max_tokens: DEFAULT_MAX_TOKENS,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }],
      top_k: 20,
      metadata: { user_id: 'hash' },
      service_tier: 'standard_only',
    });
    const user = toAnthropicRequest(
      req({ user: 'u', safety_identifier: 'hash', service_tier: 'flex' }),
      false,
    );
    expect(user.metadata).toEqual({ user_id: 'u' });
    expect(user).not.toHaveProperty('service_tier');
    expect(toAnthropicRequest(req({ service_tier: 'auto' }), false).service_tier).toBe('auto');
    // thinking on: Anthropic refuses top_k with it
    expect(
      toAnthropicRequest(
        req({ messages: [{ role: 'user', content: 'x' }], top_k: 5, reasoning: { max_tokens: 2048 } }),
        false,
      ),
    ).not.toHaveProperty('top_k');
  });

  it('asks the max effort for the largest budget, as xhigh', () => {
    const body = toAnthropicRequest(
      req({ messages: [{ role: 'user', content: 'x' }], reasoning: { effort: 'max' } }),
      false,
    );
    expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: 32768 });
    expect(body.max_tokens).toBe(32768 + DEFAULT_MAX_TOKENS);
  });

  it('maps reasoning to thinking with a budget below max_tokens', () => {
    const effort = toAnthropicRequest(
      req({ messages: [{ role: 'user', content: 'x' }], reasoning: { effort: 'low' }, temperature: 0.3 }),
      false,
    );
    expect(effort.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(effort.max_tokens).toBe(2048 + DEFAULT_MAX_TOKENS);
    expect(effort).not.toHaveProperty('temperature');

    const budget = toAnthropicRequest(
      req({ messages: [{ role: 'user', content: 'x' }], reasoning: { max_tokens: 5000 }, max_tokens: 3000 }),
      false,
    );
    expect(budget.thinking).toEqual({ type: 'enabled', budget_tokens: 2999 });
    expect(budget.max_tokens).toBe(3000);

    const tiny = toAnthropicRequest(
      req({ messages: [{ role: 'user', content: 'x' }], reasoning: { effort: 'high' }, max_tokens: 500 }),
      false,
    );
    expect(tiny).not.toHaveProperty('thinking');
    expect(tiny.max_tokens).toBe(500);

    const floor = toAnthropicRequest(
      req({ messages: [{ role: 'user', content: 'x' }], reasoning: { max_tokens: 10 } }),
      false,
    );
    expect(floor.thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
  });

  it("sends the model's maximum output when the caller names no limit, 4096 when it is unknown", () => {
    const hi = { messages: [{ role: 'user' as const, content: 'x' }] };
    expect(toAnthropicRequest(req(hi), false, 64000).max_tokens).toBe(64000);
    expect(toAnthropicRequest(req(hi), true, 64000).max_tokens).toBe(64000);
    // The caller's own limit wins, in either field.
    expect(toAnthropicRequest(req({ ...hi, max_tokens: 300 }), false, 64000).max_tokens).toBe(300);
    expect(toAnthropicRequest(req({ ...hi, max_completion_tokens: 700 }), false, 64000).max_tokens).toBe(700);
    // Unknown maximum (an unlisted id): the old default.
    expect(toAnthropicRequest(req(hi), false, undefined).max_tokens).toBe(DEFAULT_MAX_TOKENS);
  });

  it("with thinking and no caller limit, sends the model's maximum with the budget below it", () => {
    const x = [{ role: 'user' as const, content: 'x' }];
    const medium = toAnthropicRequest(req({ messages: x, reasoning: { effort: 'medium' } }), false, 64000);
    expect(medium.max_tokens).toBe(64000);
    expect(medium.thinking).toEqual({ type: 'enabled', budget_tokens: 8192 });
    // A budget at or past the maximum is cut to just below it.
    const big = toAnthropicRequest(req({ messages: x, reasoning: { max_tokens: 40000 } }), false, 32000);
    expect(big.max_tokens).toBe(32000);
    expect(big.thinking).toEqual({ type: 'enabled', budget_tokens: 31999 });
    // A maximum too small for the least budget: no thinking, the maximum still sent.
    const small = toAnthropicRequest(req({ messages: x, reasoning: { effort: 'high' } }), false, 1000);
    expect(small).not.toHaveProperty('thinking');
    expect(small.max_tokens).toBe(1000);
    // The caller's limit bounds the budget, not the model's maximum.
    const capped = toAnthropicRequest(
      req({ messages: x, reasoning: { effort: 'high' }, max_tokens: 5000 }),
      false,
      64000,
    );
    expect(capped.max_tokens).toBe(5000);
    expect(capped.thinking).toEqual({ type: 'enabled', budget_tokens: 4999 });
    // Maximum unknown: budget + 4096, as before.
    const unknown = toAnthropicRequest(req({ messages: x, reasoning: { effort: 'medium' } }), false);
    expect(unknown.max_tokens).toBe(8192 + DEFAULT_MAX_TOKENS);
  });

  it('does not enable thinking for a forced tool or a tool-loop continuation', () => {
    const forced = toAnthropicRequest(
      req({
        messages: [{ role: 'user', content: 'x' }],
        reasoning: { effort: 'low' },
        tools: [{ type: 'function', function: { name: 'f' } }],
        tool_choice: 'required',
      }),
      false,
    );
    expect(forced).not.toHaveProperty('thinking');
    const loop = toAnthropicRequest(
      req({
        reasoning: { effort: 'low' },
        messages: [
          { role: 'user', content: 'x' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 't', content: 'ok' },
        ],
      }),
      false,
    );
    expect(loop).not.toHaveProperty('thinking');
  });
});

describe('reasoning_details in the history', () => {
  const call = { id: 'tu_1', type: 'function' as const, function: { name: 'f', arguments: '{}' } };
  const signed = {
    role: 'assistant' as const,
    content: 'Looking.',
    reasoning: 'Think. Again.',
    tool_calls: [call],
    reasoning_details: [
      { type: 'reasoning.text' as const, text: 'Think. ', signature: 'sig-1', format: F, index: 0 },
      { type: 'reasoning.encrypted' as const, data: 'opaque==', format: F, index: 1 },
      { type: 'reasoning.text' as const, text: 'Again.', signature: 'sig-2', format: F, index: 2 },
    ],
  };

  it('sends anthropic-format entries back first in the turn, exactly as received', () => {
    const body = toAnthropicRequest(
      req({
        reasoning: { effort: 'low' },
        messages: [
          { role: 'user', content: 'x' },
          signed,
          { role: 'tool', tool_call_id: 'tu_1', content: 'ok' },
        ],
      }),
      false,
    );
    expect((body.messages as unknown[])[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'Think. ', signature: 'sig-1' },
        { type: 'redacted_thinking', data: 'opaque==' },
        { type: 'thinking', thinking: 'Again.', signature: 'sig-2' },
        { type: 'text', text: 'Looking.' },
        { type: 'tool_use', id: 'tu_1', name: 'f', input: {} },
      ],
    });
    // The continuation's last assistant turn carries its thinking: thinking stays enabled.
    expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
  });

  it('merges streamed fragments that share an index', () => {
    const body = toAnthropicRequest(
      req({
        reasoning: { effort: 'low' },
        messages: [
          {
            role: 'assistant',
            content: 'ok',
            reasoning_details: [
              { type: 'reasoning.text', text: 'a', format: F, index: 0 },
              { type: 'reasoning.text', text: 'b', format: F, index: 0 },
              { type: 'reasoning.text', text: '', signature: 'S', format: F, index: 0 },
            ],
          },
        ],
      }),
      false,
    );
    expect((body.messages as { content: unknown[] }[])[0]!.content[0]).toEqual({
      type: 'thinking',
      thinking: 'ab',
      signature: 'S',
    });
  });

  it('does not send other formats, unsigned text, summaries or a bare reasoning string', () => {
    const body = toAnthropicRequest(
      req({
        reasoning: { effort: 'low' },
        messages: [
          { role: 'user', content: 'x' },
          {
            role: 'assistant',
            content: null,
            reasoning: 'bare',
            tool_calls: [call],
            reasoning_details: [
              { type: 'reasoning.text', text: 'g', signature: 'gsig', format: 'google-gemini-v1', index: 0 },
              { type: 'reasoning.encrypted', data: 'gdata', format: 'google-gemini-v1', id: 'tu_1' },
              { type: 'reasoning.text', text: 'unsigned', format: F, index: 1 },
              { type: 'reasoning.summary', summary: 'sum', format: F, index: 2 },
              { type: 'reasoning.text', text: 'no format', signature: 'x' },
            ],
          },
          { role: 'tool', tool_call_id: 'tu_1', content: 'ok' },
        ],
      }),
      false,
    );
    expect((body.messages as unknown[])[1]).toEqual({
      role: 'assistant',
      content: [{ type: 'tool_use', id: 'tu_1', name: 'f', input: {} }],
    });
    // A continuation whose last assistant turn has no thinking block: thinking stays off.
    expect(body).not.toHaveProperty('thinking');
  });

  it('never leaves thinking alone in a turn, nor after other blocks of a merged turn', () => {
    const alone = toAnthropicRequest(
      req({
        reasoning: { effort: 'low' },
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: '', reasoning_details: signed.reasoning_details },
          { role: 'user', content: 'y' },
        ],
      }),
      false,
    );
    // The thinking-only assistant turn is left out (the user turns around it merge).
    expect(alone.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'x' },
          { type: 'text', text: 'y' },
        ],
      },
    ]);
    const merged = toAnthropicRequest(
      req({
        reasoning: { effort: 'low' },
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: 'first' },
          { role: 'assistant', content: 'second', reasoning_details: signed.reasoning_details },
        ],
      }),
      false,
    );
    expect((merged.messages as unknown[])[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'text', text: 'first' },
        { type: 'text', text: 'second' },
      ],
    });
  });
  it('sends no thinking blocks when the request does not enable thinking', () => {
    for (const r of [{}, { reasoning: { effort: 'low' as const }, tool_choice: 'required' as const }]) {
      const body = toAnthropicRequest(
        req({
          ...r,
          tools: [{ type: 'function', function: { name: 'f' } }],
          messages: [
            { role: 'user', content: 'x' },
            signed,
            { role: 'tool', tool_call_id: 'tu_1', content: 'ok' },
          ],
        }),
        false,
      );
      expect(body).not.toHaveProperty('thinking');
      expect((body.messages as { content: unknown[] }[])[1]!.content).toEqual([
        { type: 'text', text: 'Looking.' },
        { type: 'tool_use', id: 'tu_1', name: 'f', input: {} },
      ]);
    }
  });
});

describe('Anthropic responses → canonical', () => {
  it('maps content blocks, stop reason and usage', () => {
    const res = fromAnthropicResponse(
      {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'claude-x-2025',
        content: [
          { type: 'thinking', thinking: 'Let me think.', signature: 'sig' },
          { type: 'text', text: 'Part one. ' },
          { type: 'text', text: 'Part two.' },
          { type: 'tool_use', id: 'toolu_1', name: 'f', input: { a: 1 } },
        ],
        stop_reason: 'tool_use',
        stop_sequence: null,
        usage: {
          input_tokens: 10,
          cache_read_input_tokens: 5,
          cache_creation_input_tokens: 2,
          output_tokens: 7,
        },
      },
      'claude-x',
    );
    expect(res.model).toBe('claude-x-2025');
    expect(res.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      native_finish_reason: 'tool_use',
      message: {
        role: 'assistant',
        content: 'Part one. Part two.',
        reasoning: 'Let me think.',
        tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
      },
    });
    expect(res.usage).toEqual({
      prompt_tokens: 17,
      completion_tokens: 7,
      total_tokens: 24,
      prompt_tokens_details: { cached_tokens: 5, cache_write_tokens: 2 },
    });
    const hidden = fromAnthropicResponse(
      {
        content: [
          { type: 'thinking', thinking: 't' },
          { type: 'text', text: 'x' },
        ],
      },
      'm',
      {
        excludeReasoning: true,
      },
    );
    expect(hidden.choices[0]!.message).not.toHaveProperty('reasoning');
    expect(hidden.choices[0]!.message).not.toHaveProperty('reasoning_details');
  });

  it('maps thinking and redacted_thinking blocks to reasoning_details, in block order', () => {
    const res = fromAnthropicResponse(
      {
        content: [
          { type: 'thinking', thinking: 'First. ', signature: 'sig-1' },
          { type: 'redacted_thinking', data: 'opaque==' },
          { type: 'thinking', thinking: 'Second.', signature: 'sig-2' },
          { type: 'text', text: 'Answer.' },
        ],
        stop_reason: 'end_turn',
      },
      'm',
    );
    expect(res.choices[0]!.message.reasoning).toBe('First. Second.');
    expect(res.choices[0]!.message.reasoning_details).toEqual([
      { type: 'reasoning.text', text: 'First. ', signature: 'sig-1', format: F, index: 0 },
      { type: 'reasoning.encrypted', data: 'opaque==', format: F, index: 1 },
      { type: 'reasoning.text', text: 'Second.', signature: 'sig-2', format: F, index: 2 },
    ]);
    const plain = fromAnthropicResponse({ content: [{ type: 'text', text: 'x' }] }, 'm');
    expect(plain.choices[0]!.message).not.toHaveProperty('reasoning_details');
  });

  it('maps every stop reason', () => {
    expect(mapStopReason('end_turn')).toBe('stop');
    expect(mapStopReason('stop_sequence')).toBe('stop');
    expect(mapStopReason('max_tokens')).toBe('length');
    expect(mapStopReason('tool_use')).toBe('tool_calls');
    expect(mapStopReason('refusal')).toBe('content_filter');
    expect(mapStopReason(null)).toBeNull();
  });

  it('reports thinking tokens when the usage has them', () => {
    expect(
      mapAnthropicUsage({ input_tokens: 1, output_tokens: 9, output_tokens_details: { thinking_tokens: 4 } }),
    ).toMatchObject({
      completion_tokens_details: { reasoning_tokens: 4 },
    });
  });

  it('reports the web searches Anthropic ran (its server tool, billed per search)', () => {
    const usage = { input_tokens: 1, output_tokens: 2, server_tool_use: { web_search_requests: 3 } };
    expect(mapAnthropicUsage(usage).server_tool_use).toEqual({ web_search_requests: 3 });
    expect(mapAnthropicUsage({ input_tokens: 1, output_tokens: 2 }).server_tool_use).toBeUndefined();
  });
});

describe('cached-token usage', () => {
  // Anthropic's input_tokens EXCLUDE cache reads and writes; canonical prompt_tokens include them.
  const usage = {
    input_tokens: 100,
    cache_read_input_tokens: 2000,
    cache_creation_input_tokens: 500,
    output_tokens: 20,
  };
  const canonical = {
    prompt_tokens: 2600,
    completion_tokens: 20,
    total_tokens: 2620,
    prompt_tokens_details: { cached_tokens: 2000, cache_write_tokens: 500 },
  };

  it('a message: reads and writes are added to the prompt and kept apart', () => {
    expect(mapAnthropicUsage(usage)).toEqual(canonical);
    const res = fromAnthropicResponse(
      { id: 'm', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', usage },
      'claude-x',
    );
    expect(res.usage).toEqual(canonical);
  });

  it('a stream: counts from message_start, output from message_delta, on the last chunk', () => {
    const m = new AnthropicStreamMapper('claude-x');
    const chunks = [
      { type: 'message_start', message: { id: 'm', usage: { ...usage, output_tokens: 1 } } },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 20 } },
      { type: 'message_stop' },
    ].flatMap((e) => m.push(e));
    expect(chunks.at(-1)?.usage).toEqual(canonical);
  });
});

describe('AnthropicStreamMapper', () => {
  const run = (events: unknown[]) => {
    const m = new AnthropicStreamMapper('claude-x');
    const out: ChatChunk[] = [];
    for (const e of events) out.push(...m.push(e));
    m.finish();
    return out;
  };

  it('maps a full stream with thinking, text and two tool calls', () => {
    const chunks = run([
      {
        type: 'message_start',
        message: {
          id: 'msg_1',
          model: 'claude-x-1',
          usage: { input_tokens: 20, cache_read_input_tokens: 3, output_tokens: 1 },
        },
      },
      { type: 'ping' },
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'thinking', thinking: '', signature: '' },
      },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'hmm' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Hi' } },
      { type: 'content_block_stop', index: 1 },
      {
        type: 'content_block_start',
        index: 2,
        content_block: { type: 'tool_use', id: 'toolu_a', name: 'f', input: {} },
      },
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"a":' } },
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '1}' } },
      { type: 'content_block_stop', index: 2 },
      {
        type: 'content_block_start',
        index: 3,
        content_block: { type: 'tool_use', id: 'toolu_b', name: 'g', input: {} },
      },
      { type: 'content_block_delta', index: 3, delta: { type: 'input_json_delta', partial_json: '{}' } },
      { type: 'content_block_stop', index: 3 },
      {
        type: 'message_delta',
        delta: { stop_reason: 'tool_use', stop_sequence: null },
        usage: { output_tokens: 42 },
      },
      { type: 'message_stop' },
    ]);
    expect(chunks.map((c) => c.choices[0]?.delta ?? null)).toEqual([
      { role: 'assistant', content: '' },
      { reasoning: 'hmm', reasoning_details: [{ type: 'reasoning.text', text: 'hmm', format: F, index: 0 }] },
      { reasoning_details: [{ type: 'reasoning.text', text: '', signature: 'sig', format: F, index: 0 }] },
      { content: 'Hi' },
      { tool_calls: [{ index: 0, id: 'toolu_a', type: 'function', function: { name: 'f', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '1}' } }] },
      { tool_calls: [{ index: 1, id: 'toolu_b', type: 'function', function: { name: 'g', arguments: '' } }] },
      { tool_calls: [{ index: 1, function: { arguments: '{}' } }] },
      {},
      null,
    ]);
    expect(chunks.every((c) => c.id === 'msg_1' && c.model === 'claude-x-1')).toBe(true);
    expect(
      collapseReasoningDetails(chunks.flatMap((c) => c.choices[0]?.delta.reasoning_details ?? [])),
    ).toEqual([{ type: 'reasoning.text', text: 'hmm', signature: 'sig', format: F, index: 0 }]);
    expect(chunks.at(-2)!.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      native_finish_reason: 'tool_use',
    });
    expect(chunks.at(-1)!.usage).toEqual({
      prompt_tokens: 23,
      completion_tokens: 42,
      total_tokens: 65,
      prompt_tokens_details: { cached_tokens: 3, cache_write_tokens: 0 },
    });
    // message_start's input counts, known before any output, ride on the first chunk only.
    expect(chunks[0]!.prompt_usage).toEqual({
      prompt_tokens: 23,
      prompt_tokens_details: { cached_tokens: 3, cache_write_tokens: 0 },
    });
    expect(chunks.slice(1).some((c) => c.prompt_usage)).toBe(false);
  });

  it('an error event throws UpstreamError (overloaded → 529, retryable)', () => {
    const m = new AnthropicStreamMapper('claude-x');
    m.push({ type: 'message_start', message: { id: 'msg_1', usage: {} } });
    let err: unknown;
    try {
      m.push({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).toMatchObject({ status: 529, retryable: true, message: 'Overloaded' });
  });

  it('streams redacted_thinking and several thinking blocks as indexed reasoning_details fragments', () => {
    const chunks = run([
      { type: 'message_start', message: { id: 'msg_2', usage: {} } },
      { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'a' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'b' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'S1' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'redacted_thinking', data: 'R' } },
      { type: 'content_block_stop', index: 1 },
      { type: 'content_block_start', index: 2, content_block: { type: 'thinking', thinking: '' } },
      { type: 'content_block_delta', index: 2, delta: { type: 'thinking_delta', thinking: 'c' } },
      { type: 'content_block_delta', index: 2, delta: { type: 'signature_delta', signature: 'S2' } },
      { type: 'content_block_stop', index: 2 },
      { type: 'content_block_start', index: 3, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 3, delta: { type: 'text_delta', text: 'ok' } },
      { type: 'content_block_stop', index: 3 },
      { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 3 } },
      { type: 'message_stop' },
    ]);
    const fragments = chunks.flatMap((c) => c.choices[0]?.delta.reasoning_details ?? []);
    expect(fragments).toContainEqual({ type: 'reasoning.encrypted', data: 'R', format: F, index: 1 });
    expect(collapseReasoningDetails(fragments)).toEqual([
      { type: 'reasoning.text', text: 'ab', signature: 'S1', format: F, index: 0 },
      { type: 'reasoning.encrypted', data: 'R', format: F, index: 1 },
      { type: 'reasoning.text', text: 'c', signature: 'S2', format: F, index: 2 },
    ]);
    expect(chunks.map((c) => c.choices[0]?.delta.reasoning ?? '').join('')).toBe('abc');

    const hidden = new AnthropicStreamMapper('claude-x', { excludeReasoning: true });
    const out = [
      { type: 'message_start', message: { id: 'm', usage: {} } },
      { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'a' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'S1' } },
      { type: 'content_block_start', index: 1, content_block: { type: 'redacted_thinking', data: 'R' } },
    ].flatMap((e) => hidden.push(e));
    expect(out.some((c) => c.choices[0]?.delta.reasoning_details || c.choices[0]?.delta.reasoning)).toBe(
      false,
    );
  });

  it('a stream without message_stop is cut off', () => {
    const m = new AnthropicStreamMapper('claude-x');
    m.push({ type: 'message_start', message: { id: 'msg_1', usage: {} } });
    expect(() => m.finish()).toThrow(UpstreamError);
  });
});
