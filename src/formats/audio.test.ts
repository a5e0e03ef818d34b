import { describe, expect, it } from 'vitest';
import { toGeminiRequest } from '../providers/google/wire.js';
import { toOpenAiRequest } from '../providers/openai/wire.js';
import { assertTranslatable } from './capabilities.js';
import { TranslationError } from './chat.js';
import { chatRequestFromBody } from './chat-edge.js';

/** Audio input (Chat Completions' `input_audio` parts): carried to the providers that hear audio. */
describe('audio input', () => {
  const req = chatRequestFromBody({
    model: 'm',
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'transcribe' },
          { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
        ],
      },
    ],
  });

  it('reaches OpenAI as sent and Gemini as inline audio data', () => {
    expect(
      (toOpenAiRequest(req, 'openai', false) as { messages: { content: unknown[] }[] }).messages[0]
        ?.content[1],
    ).toEqual({ type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } });
    expect((toGeminiRequest(req) as { contents: { parts: unknown[] }[] }).contents[0]?.parts).toEqual([
      { text: 'transcribe' },
      { inlineData: { mimeType: 'audio/wav', data: 'UklGRg==' } },
    ]);
  });

  it('is refused for Anthropic, naming the part (a router with fallbacks skips it instead)', () => {
    expect(() => assertTranslatable(req, 'anthropic')).toThrow(TranslationError);
    expect(() => assertTranslatable(req, 'anthropic')).toThrow(/messages\[0\]\.content\[1\]/);
    expect(() => assertTranslatable(req, 'google')).not.toThrow();
  });
});
