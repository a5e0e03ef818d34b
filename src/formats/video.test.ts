import { describe, expect, it } from 'vitest';
import { toGeminiRequest } from '../providers/google/wire.js';
import { toOpenAiRequest } from '../providers/openai/wire.js';
import { assertTranslatable } from './capabilities.js';
import { TranslationError } from './chat.js';
import { chatRequestFromBody } from './chat-edge.js';
import { responsesRequestToChat } from './responses.js';

const CLIP = 'data:video/mp4;base64,AAAAIGZ0eXBpc29t';
const YOUTUBE = 'https://www.youtube.com/watch?v=dQw4w9WgXcQ';

/** Video input (OpenRouter's `video_url` parts): carried to Gemini, as sent to OpenAI-format providers. */
describe('video input', () => {
  const req = chatRequestFromBody({
    model: 'm',
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'what happens?' },
          { type: 'video_url', video_url: { url: CLIP } },
          { type: 'video_url', video_url: { url: YOUTUBE } },
          // OpenRouter's older name for the same part.
          { type: 'input_video', video_url: { url: 'https://cdn.example.com/clips/race.MOV?sig=1' } },
          { type: 'video_url', video_url: { url: 'https://cdn.example.com/stream/42' } },
        ],
      },
    ],
  });

  it('reaches Gemini as inline data, a YouTube link as it is, a file with its media type', () => {
    expect((toGeminiRequest(req) as { contents: { parts: unknown[] }[] }).contents[0]?.parts).toEqual([
      { text: 'what happens?' },
      { inlineData: { mimeType: 'video/mp4', data: 'AAAAIGZ0eXBpc29t' } },
      { fileData: { fileUri: YOUTUBE } },
      { fileData: { mimeType: 'video/mov', fileUri: 'https://cdn.example.com/clips/race.MOV?sig=1' } },
      // No extension to go by: MP4, the common case (Gemini needs a type for a file it fetches).
      { fileData: { mimeType: 'video/mp4', fileUri: 'https://cdn.example.com/stream/42' } },
    ]);
  });

  it('reaches an OpenAI-format provider as sent', () => {
    const wire = toOpenAiRequest(req, 'openai', false) as { messages: { content: unknown[] }[] };
    expect(wire.messages[0]?.content[1]).toEqual({ type: 'video_url', video_url: { url: CLIP } });
    expect(wire.messages[0]?.content[3]).toEqual({
      type: 'video_url',
      video_url: { url: 'https://cdn.example.com/clips/race.MOV?sig=1' },
    });
  });

  it('is refused for Anthropic, naming the part; a part without a URL is refused at the edge', () => {
    expect(() => assertTranslatable(req, 'anthropic')).toThrow(TranslationError);
    expect(() => assertTranslatable(req, 'anthropic')).toThrow(/messages\[0\]\.content\[1\]/);
    expect(() => assertTranslatable(req, 'google')).not.toThrow();
    expect(() =>
      chatRequestFromBody({
        model: 'm',
        messages: [{ role: 'user', content: [{ type: 'video_url', video_url: {} }] }],
      }),
    ).toThrow(/messages\[0\]\.content\[0\]\.video_url\.url/);
  });

  it('a URL Gemini cannot fetch (not data: or http) is a translation error, not a crash', () => {
    const ftp = chatRequestFromBody({
      model: 'm',
      messages: [{ role: 'user', content: [{ type: 'video_url', video_url: { url: 'ftp://x/a.mp4' } }] }],
    });
    expect(() => toGeminiRequest(ftp)).toThrow(TranslationError);
  });

  it('on /responses: an input_video in a user message is the same part', () => {
    const r = responsesRequestToChat({
      model: 'm',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'what happens?' },
            { type: 'input_video', video_url: YOUTUBE },
          ],
        },
      ],
    });
    expect(r.messages[0]?.content).toEqual([
      { type: 'text', text: 'what happens?' },
      { type: 'video_url', video_url: { url: YOUTUBE } },
    ]);
  });
});
