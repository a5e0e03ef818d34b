import { describe, expect, it } from 'vitest';
import { speechUsage, transcriptionUsage, worstCaseSeconds } from './audio-usage.js';
import { costOf } from './pricing.js';

describe('audio usage', () => {
  it('speech: characters exact; tokens estimated only where tokens are priced', () => {
    const tts1 = speechUsage(1000, { prompt: 0, completion: 0, characters: 15 });
    expect(tts1).toEqual({
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, audio: { characters: 1000 } },
      estimated: false,
    });
    expect(costOf({ prompt: 0, completion: 0, characters: 15 }, tts1.usage).total).toBeCloseTo(0.015, 12);
    const byTokens = speechUsage(1000, { prompt: 0.6, completion: 12 });
    expect(byTokens.usage.prompt_tokens).toBe(250);
    expect(byTokens.estimated).toBe(true);
  });

  it('transcription: reported tokens, a reported duration, or estimates', () => {
    const tokens = transcriptionUsage(
      {
        text: 'hi',
        usage: {
          type: 'tokens',
          input_tokens: 10,
          output_tokens: 2,
          input_token_details: { audio_tokens: 10 },
        },
      },
      '',
      0,
    );
    expect(tokens).toEqual({
      usage: {
        prompt_tokens: 10,
        completion_tokens: 2,
        total_tokens: 12,
        prompt_tokens_details: { audio_tokens: 10 },
      },
      estimated: false,
    });
    const duration = transcriptionUsage({ text: 'hi', usage: { type: 'duration', seconds: 90 } }, '', 0);
    expect(costOf({ prompt: 0, completion: 0, audio_minute: 0.006 }, duration.usage).total).toBeCloseTo(
      0.009,
      12,
    );
    expect(transcriptionUsage({ text: 'hi', duration: 30 }, '', 0).usage.audio).toEqual({ seconds: 30 });
    const text = transcriptionUsage(undefined, 'twelve chars', 160_000);
    expect(text).toEqual({
      usage: { prompt_tokens: 0, completion_tokens: 3, total_tokens: 3, audio: { seconds: 10 } },
      estimated: true,
    });
    // Hostile usage is not taken as it came.
    expect(transcriptionUsage({ text: '', usage: { input_tokens: -5 } }, '', 0).estimated).toBe(true);
    expect(transcriptionUsage({ text: '', usage: { seconds: 1e12 } }, '', 0).estimated).toBe(true);
    expect(worstCaseSeconds(4_001)).toBe(2);
  });
});
