import { describe, expect, it } from 'vitest';
import { ChatChunks, GATEWAY_MODEL, PROVIDE_INPUT_TOOL } from './chat-stream.js';

/** The JSON payloads of SSE text, `[DONE]` as the string. */
const payloads = (sse: string) =>
  sse
    .split('\n\n')
    .filter((f) => f.startsWith('data: '))
    .map((f) => f.slice(6))
    .map((d) => (d === '[DONE]' ? d : JSON.parse(d)));

describe('ChatChunks', () => {
  it('role, deltas, one stop chunk, a final chunk with session_id and usage, then [DONE]', () => {
    const c = new ChatChunks('sess_1');
    const usage = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5, cost: 0.001 };
    const out = payloads(
      c.role() +
        c.event({ type: 'model', model: 'acme/model-1' }) +
        c.event({ type: 'reasoning', text: 'thinking' }) +
        c.event({ type: 'content', text: 'Hello' }) +
        c.event({ type: 'end', finish_reason: 'stop', usage }),
    );
    expect(out).toHaveLength(6);
    const [role, reasoning, content, stop, final, done] = out;
    expect(role).toMatchObject({ object: 'chat.completion.chunk', model: GATEWAY_MODEL });
    expect(role.choices[0]).toEqual({ index: 0, delta: { role: 'assistant' }, finish_reason: null });
    expect(reasoning.choices[0].delta).toEqual({ reasoning: 'thinking' });
    expect(reasoning.model).toBe('acme/model-1');
    expect(content.choices[0].delta).toEqual({ content: 'Hello' });
    expect(stop.choices[0]).toEqual({ index: 0, delta: {}, finish_reason: 'stop' });
    expect(stop).not.toHaveProperty('error');
    expect(final).toMatchObject({ choices: [], session_id: 'sess_1', usage });
    expect(done).toBe('[DONE]');
    expect(new Set(out.slice(0, 5).map((o) => o.id)).size).toBe(1);
    expect(c.done).toBe(true);
    expect(c.event({ type: 'content', text: 'late' })).toBe('');
  });

  it('a pause is one provide_input tool call, finish tool_calls, and a final chunk with usage null', () => {
    const c = new ChatChunks('sess_2');
    const args = {
      kind: 'permission' as const,
      operation: 'shell',
      options: ['allow_once' as const, 'reject' as const],
    };
    const [call, final, done] = payloads(c.event({ type: 'paused', id: 'int_1', arguments: args }));
    expect(call.choices[0].finish_reason).toBe('tool_calls');
    expect(call.choices[0].delta.tool_calls).toEqual([
      {
        index: 0,
        id: 'int_1',
        type: 'function',
        function: { name: PROVIDE_INPUT_TOOL, arguments: JSON.stringify(args) },
      },
    ]);
    expect(final).toMatchObject({ choices: [], session_id: 'sess_2', usage: null });
    expect(done).toBe('[DONE]');
  });

  it('an error end carries error {code, message, metadata} on the finish chunk only', () => {
    const c = new ChatChunks('sess_3');
    c.event({ type: 'model', model: 'acme/model-1' });
    const [chunk, final] = payloads(
      c.error(
        { code: 502, message: 'severed', metadata: { reason: 'stream_severed', retryable: true } },
        null,
        true,
      ),
    );
    expect(chunk.choices[0].finish_reason).toBe('error');
    expect(chunk.error).toEqual({
      code: 502,
      message: 'severed',
      metadata: { reason: 'stream_severed', retryable: true },
    });
    expect(chunk.model).toBe(GATEWAY_MODEL);
    expect(final).not.toHaveProperty('error');
    expect(final.session_id).toBe('sess_3');
  });
});
