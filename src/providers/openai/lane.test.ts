/**
 * What a relayed OpenAI-format stream's tap reads of a chunk from its bytes alone (the skim) is what
 * it reads parsing it: the id, the finish reason, the answer's length — for Chat Completions' chunks
 * and legacy Completions' (`text`) alike.
 */
import { describe, expect, it } from 'vitest';
import { chatStreamTap } from './lane.js';

const chunks = [
  {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta: { content: 'Hello, ' }, finish_reason: null }],
  },
  {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta: { content: 'world' }, finish_reason: 'stop' }],
  },
  {
    id: 'cmpl-1',
    object: 'text_completion',
    choices: [{ index: 0, text: 'def fib(n):', logprobs: null, finish_reason: null }],
  },
  {
    id: 'cmpl-1',
    object: 'text_completion',
    choices: [{ index: 0, text: '', logprobs: null, finish_reason: 'length' }],
  },
];

describe('chatStreamTap', () => {
  it.each(
    chunks.map((c) => [c.object, c.choices[0]?.finish_reason, c] as const),
  )('reads a %s chunk (finish %s) from its bytes as it does parsing it', (_object, _finish, chunk) => {
    const data = JSON.stringify(chunk);
    const parsed = chatStreamTap([])({ data });
    const skimmed = chatStreamTap([]).skim?.(undefined, Buffer.from(data));
    expect(skimmed).toEqual(parsed);
  });

  it('counts a legacy completion’s text', () => {
    const data = JSON.stringify(chunks[2]);
    expect(chatStreamTap([]).skim?.(undefined, Buffer.from(data))?.outputChars).toBe('def fib(n):'.length);
    expect(chatStreamTap([])({ data })?.outputChars).toBe('def fib(n):'.length);
  });
});
