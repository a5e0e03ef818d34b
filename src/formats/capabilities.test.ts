import { describe, expect, it } from 'vitest';
import {
  assertTranslatable,
  CAPABILITY_RULES,
  type ProviderKind,
  untranslatableFields,
} from './capabilities.js';
import { type ChatRequest, TranslationError } from './chat.js';

const base: ChatRequest = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
const withImage = (url: string, role: 'user' | 'tool' = 'user'): ChatRequest => ({
  ...base,
  messages: [
    {
      role,
      ...(role === 'tool' ? { tool_call_id: 'c1' } : {}),
      content: [
        { type: 'text', text: 'see' },
        { type: 'image_url', image_url: { url } },
      ],
    },
  ],
});

const KINDS: ProviderKind[] = ['openai', 'anthropic', 'google'];

describe('assertTranslatable', () => {
  it('lets a plain request through to every provider kind', () => {
    const plain: ChatRequest = {
      ...base,
      temperature: 0.7,
      top_p: 0.9,
      max_tokens: 100,
      stop: ['x'],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
      tool_choice: 'auto',
      response_format: { type: 'text' },
      logprobs: false,
      top_logprobs: 0,
      presence_penalty: 0,
      frequency_penalty: 0,
      reasoning: { effort: 'low' },
      user: 'u',
    };
    for (const kind of KINDS) expect(() => assertTranslatable(plain, kind)).not.toThrow();
  });

  // [field named in the message, request, kinds that refuse it]
  const cases: [string, ChatRequest, ProviderKind[]][] = [
    ['logprobs', { ...base, logprobs: true }, ['anthropic', 'google']],
    ['top_logprobs', { ...base, top_logprobs: 3 }, ['anthropic', 'google']],
    [
      'response_format.type',
      { ...base, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } } },
      ['anthropic'],
    ],
    ['response_format.type', { ...base, response_format: { type: 'json_object' } }, ['anthropic']],
    ['seed', { ...base, seed: 1 }, ['anthropic']],
    ['presence_penalty', { ...base, presence_penalty: 0.5 }, ['anthropic']],
    ['frequency_penalty', { ...base, frequency_penalty: -0.5 }, ['anthropic']],
    ['temperature', { ...base, temperature: 1.5 }, ['anthropic']],
    ['messages[0].content[1].image_url.url', withImage('https://example.com/a.png'), ['google']],
    [
      'messages[0].content[1].image_url.url',
      withImage('data:image/png;base64,AAAA', 'tool'),
      ['openai', 'google'],
    ],
  ];

  it.each(cases)('refuses %s only for the kinds that cannot carry it', (field, req, refusedBy) => {
    for (const kind of KINDS) {
      if (refusedBy.includes(kind)) {
        expect(() => assertTranslatable(req, kind)).toThrow(TranslationError);
        expect(() => assertTranslatable(req, kind)).toThrow(
          new RegExp(`^${field.replace(/[[\].]/g, '\\$&')} cannot be sent`),
        );
      } else {
        expect(() => assertTranslatable(req, kind)).not.toThrow();
      }
    }
  });

  it('accepts inline (data:) images for Google and names the provider kind and the reason', () => {
    expect(() => assertTranslatable(withImage('data:image/png;base64,AAAA'), 'google')).not.toThrow();
    expect(() =>
      assertTranslatable({ ...base, response_format: { type: 'json_object' } }, 'anthropic'),
    ).toThrow(
      "response_format.type cannot be sent to Anthropic providers: 'json_object' is not supported (no native JSON mode, and Gatehouse does not emulate one)",
    );
  });

  it('lists every refusal at once for routers choosing between providers', () => {
    const req: ChatRequest = { ...base, seed: 1, logprobs: true, presence_penalty: 1 };
    expect(untranslatableFields(req, 'anthropic').map((f) => f.field)).toEqual([
      'logprobs',
      'seed',
      'presence_penalty',
    ]);
    expect(untranslatableFields(req, 'openai')).toEqual([]);
  });

  it('keeps one table with a rule per refusal', () => {
    expect(CAPABILITY_RULES.length).toBe(10);
    for (const rule of CAPABILITY_RULES) expect(rule.refusedBy.length).toBeGreaterThan(0);
  });
});
