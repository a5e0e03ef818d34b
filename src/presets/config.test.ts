import { describe, expect, it } from 'vitest';
import { applied, presetRefOf, savedFrom, withoutRef } from './config.js';

describe('preset configuration', () => {
  it('keeps the configuration fields of a chat body and its system prompt, not its messages or stream', () => {
    const saved = savedFrom('chat', {
      model: 'openai/gpt-4o',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'developer', content: [{ type: 'text', text: 'Use French.' }] },
        { role: 'user', content: 'hi' },
      ],
      stream: true,
      temperature: 0.2,
      max_completion_tokens: 300,
      stop: ['END'],
      seed: 7,
      top_k: null,
      user: 'u-1',
    });
    expect(saved).toEqual({
      config: { model: 'openai/gpt-4o', temperature: 0.2, max_tokens: 300, stop: ['END'], seed: 7 },
      systemPrompt: 'Be brief.\n\nUse French.',
    });
  });

  it("reads each format's own names: Anthropic's system blocks and stop_sequences, Responses' instructions", () => {
    expect(
      savedFrom('messages', {
        model: 'anthropic/claude',
        system: [
          { type: 'text', text: 'A' },
          { type: 'text', text: 'B', cache_control: { type: 'ephemeral' } },
        ],
        max_tokens: 99,
        stop_sequences: ['STOP'],
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: [{ role: 'user', content: 'hi' }],
      }),
    ).toEqual({
      config: {
        model: 'anthropic/claude',
        max_tokens: 99,
        stop: ['STOP'],
        thinking: { type: 'enabled', budget_tokens: 1024 },
      },
      systemPrompt: 'A\n\nB',
    });
    expect(
      savedFrom('responses', {
        model: 'm',
        instructions: 'Think.',
        max_output_tokens: 5,
        input: 'x',
        store: true,
      }),
    ).toEqual({ config: { model: 'm', max_tokens: 5 }, systemPrompt: 'Think.' });
  });

  const preset = {
    config: {
      model: 'p/model',
      temperature: 0.5,
      max_tokens: 99,
      stop: ['STOP'],
      seed: 3,
      thinking: { type: 'enabled' },
    },
    systemPrompt: 'You are terse.',
  };

  it('completes a body with what it does not set, in the format it is sent in; the body wins', () => {
    expect(applied('chat', { messages: [{ role: 'user', content: 'hi' }], temperature: 1 }, preset)).toEqual({
      model: 'p/model',
      temperature: 1,
      max_tokens: 99,
      stop: ['STOP'],
      seed: 3,
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'hi' },
      ],
    });
    expect(applied('messages', { model: 'own', messages: [], system: 'mine' }, preset)).toEqual({
      model: 'own',
      messages: [],
      system: 'mine',
      temperature: 0.5,
      max_tokens: 99,
      stop_sequences: ['STOP'],
      thinking: { type: 'enabled' },
    });
    expect(applied('responses', { input: 'hi', max_output_tokens: null }, preset)).toEqual({
      input: 'hi',
      model: 'p/model',
      temperature: 0.5,
      max_output_tokens: 99,
      instructions: 'You are terse.',
    });
  });

  it('gives a counting or compacting body only the model, provider preferences and system prompt', () => {
    expect(applied('messages', { messages: [] }, preset, true)).toEqual({
      messages: [],
      model: 'p/model',
      system: 'You are terse.',
    });
  });

  it("leaves the output limit alone when the body sets either of chat's two names", () => {
    const out = applied('chat', { messages: [], max_completion_tokens: 10 }, preset);
    expect(out.max_completion_tokens).toBe(10);
    expect(out.max_tokens).toBeUndefined();
  });

  it('finds the preset in any of the three ways, and takes the reference out', () => {
    expect(presetRefOf({ model: '@preset/writer' })).toEqual({ slug: 'writer' });
    expect(presetRefOf({ model: 'openai/gpt-4o@preset/writer' })).toEqual({
      slug: 'writer',
      model: 'openai/gpt-4o',
    });
    expect(presetRefOf({ model: 'openai/gpt-4o', preset: 'writer' })).toEqual({
      slug: 'writer',
      model: 'openai/gpt-4o',
    });
    expect(presetRefOf({ model: 'openai/gpt-4o' })).toBeNull();
    expect(presetRefOf({ preset: null })).toBeNull();
    expect(withoutRef({ model: '@preset/w', preset: 'w', messages: [] }, { slug: 'w' })).toEqual({
      messages: [],
    });
    expect(withoutRef({ model: 'a@preset/w', x: 1 }, { slug: 'w', model: 'a' })).toEqual({
      model: 'a',
      x: 1,
    });
  });

  it('refuses two different presets, a preset that is not a string, and a slug that is not one', () => {
    expect(() => presetRefOf({ model: '@preset/a', preset: 'b' })).toThrow(
      /names preset a and `preset` names b/,
    );
    expect(() => presetRefOf({ preset: 5 })).toThrow(/must be a preset slug/);
    expect(() => presetRefOf({ model: '@preset/../x' })).toThrow(/Invalid preset slug/);
    expect(() => presetRefOf({ model: '@preset/' })).toThrow(/Invalid preset slug/);
  });

  it('refuses a preset in the `models` fallback list, naming the entry, with or without one in `model`', () => {
    expect(() => presetRefOf({ model: 'a/b', models: ['a/b', '@preset/w'] })).toThrow(
      '`models[1]`: a preset cannot be a fallback model; use `preset` or `model`',
    );
    expect(() => presetRefOf({ preset: 'w', models: ['a/b@preset/w'] })).toThrow(/`models\[0\]`/);
    expect(presetRefOf({ model: 'a/b', models: ['a/b', 'c/d'] })).toBeNull();
    expect(presetRefOf({ model: 'a/b', models: 'not a list' })).toBeNull();
  });
});
