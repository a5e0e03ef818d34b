import { describe, expect, it } from 'vitest';
import { speechDoneUsage } from './audio.js';

describe('speechDoneUsage', () => {
  const done = (usage: object) => `data: ${JSON.stringify({ type: 'speech.audio.done', usage })}\n\n`;

  it('reads the usage of the last speech.audio.done event', () => {
    const tail = `data: {"type":"speech.audio.delta","audio":"AAAA"}\n\n${done({ input_tokens: 3, output_tokens: 40 })}`;
    expect(speechDoneUsage(tail)).toEqual({ input_tokens: 3, output_tokens: 40 });
  });

  it('none without a whole done event, or with usage that cannot be right', () => {
    expect(speechDoneUsage('data: {"type":"speech.audio.delta","audio":"AAAA"}\n\n')).toBeNull();
    expect(speechDoneUsage('data: {"type":"speech.audio.do')).toBeNull();
    expect(speechDoneUsage(done({ input_tokens: -1, output_tokens: 4 }))).toBeNull();
    expect(speechDoneUsage(done({ input_tokens: 1, output_tokens: 1e12 }))).toBeNull();
  });
});
