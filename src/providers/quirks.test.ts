import { describe, expect, it } from 'vitest';
import { PRESETS } from './presets.js';
import { rejectedFields, withoutRejected } from './quirks.js';

const groq = PRESETS.groq.rejects;

describe('vendor quirks', () => {
  it('lists and leaves out the fields the vendor refuses, on every message for a per-message field', () => {
    const body = {
      model: 'llama',
      messages: [
        { role: 'user', content: 'hi', name: 'ann' },
        { role: 'user', content: 'there' },
      ],
      logprobs: true,
      logit_bias: { '1': 2 },
      n: 2,
      temperature: 0.2,
    };
    expect(rejectedFields(body, groq, 'llama')).toEqual(['logprobs', 'logit_bias', 'messages[].name', 'n']);
    expect(withoutRejected(body, groq, 'llama')).toEqual({
      model: 'llama',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'user', content: 'there' },
      ],
      temperature: 0.2,
    });
    // The caller's body is not changed.
    expect(body.messages[0]).toHaveProperty('name', 'ann');
    expect(body).toHaveProperty('n', 2);
  });

  it('keeps values the vendor takes and fields of other models', () => {
    const body = { model: 'm', messages: [], n: 1, logprobs: true };
    expect(rejectedFields(body, groq, 'm')).toEqual(['logprobs']);
    expect(withoutRejected(body, groq, 'm')).toEqual({ model: 'm', messages: [], n: 1 });
    const deepseek = PRESETS.deepseek.rejects;
    expect(rejectedFields(body, deepseek, 'deepseek-chat')).toEqual([]);
    expect(rejectedFields(body, deepseek, 'deepseek-reasoner')).toEqual(['logprobs']);
    const xai = PRESETS.xai.rejects;
    const sampled = { messages: [], stop: ['x'], presence_penalty: 1 };
    expect(rejectedFields(sampled, xai, 'grok-4-fast-reasoning')).toEqual(['presence_penalty', 'stop']);
    expect(rejectedFields(sampled, xai, 'grok-4-fast-non-reasoning')).toEqual([]);
    expect(rejectedFields(sampled, xai, 'grok-2')).toEqual([]);
  });
});
