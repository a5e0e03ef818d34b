import type { Usage } from '../formats/chat.js';
import type { Pricing } from './catalog-types.js';

/**
 * What an audio call is billed. Speech: the input's characters are counted (exact, for a price per
 * character); the upstream reports tokens only on an event stream (`stream_format: "sse"`), else
 * the input's tokens are estimated.
 * Transcription: the answer's `usage` — tokens (`gpt-4o-transcribe`) or a duration (`whisper-1`)
 * — or `duration` of a verbose answer; a text, srt or vtt answer reports none, so the audio's
 * duration is estimated from its size and the output tokens from the text.
 */

/** Bytes per second of audio at 128 kbit/s, a common compressed rate (a duration's estimate). */
const ESTIMATE_BYTES_PER_SECOND = 16_000;
/** Bytes per second of audio at 32 kbit/s, a low rate: a duration no upload of that size exceeds by much. */
const WORST_BYTES_PER_SECOND = 4_000;

const tokens = (chars: number): number => Math.ceil(chars / 4);

/**
 * A speech call's usage: its characters, and the tokens the answer reported (OpenAI's
 * `stream_format: "sse"`), else its input tokens estimated when tokens are priced.
 */
export function speechUsage(
  characters: number,
  pricing: Pricing,
  reported: { input_tokens: number; output_tokens: number } | null = null,
): { usage: Usage; estimated: boolean } {
  if (reported) {
    const { input_tokens: prompt, output_tokens: completion } = reported;
    return {
      usage: {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        audio: { characters },
      },
      estimated: false,
    };
  }
  const byTokens = pricing.prompt > 0 || pricing.completion > 0;
  const prompt = byTokens ? tokens(characters) : 0;
  return {
    usage: { prompt_tokens: prompt, completion_tokens: 0, total_tokens: prompt, audio: { characters } },
    estimated: byTokens,
  };
}

/** Reported counts past this are not believed (as MAX_REPORTED_TOKENS: usage-check.ts). */
const MAX_REPORTED = 100_000_000;

const num = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= MAX_REPORTED ? v : undefined;

/** A transcription's usage as its answer reports it, else estimated from the audio's size. */
export function transcriptionUsage(
  parsed: unknown,
  text: string,
  audioBytes: number,
): { usage: Usage; estimated: boolean } {
  const answer = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
  const u = (typeof answer.usage === 'object' && answer.usage !== null ? answer.usage : {}) as Record<
    string,
    unknown
  >;
  const input = num(u.input_tokens);
  const output = num(u.output_tokens);
  const seconds = num(u.seconds) ?? num(answer.duration);
  if (input !== undefined || output !== undefined || seconds !== undefined) {
    const details = u.input_token_details as { audio_tokens?: unknown } | undefined;
    const audioTokens = num(details?.audio_tokens);
    const prompt = Math.round(input ?? 0);
    const completion = Math.round(output ?? 0);
    return {
      usage: {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        ...(audioTokens !== undefined ? { prompt_tokens_details: { audio_tokens: audioTokens } } : {}),
        ...(seconds !== undefined ? { audio: { seconds } } : {}),
      },
      estimated: false,
    };
  }
  const said = typeof answer.text === 'string' ? answer.text : text;
  const completion = tokens(said.length);
  return {
    usage: {
      prompt_tokens: 0,
      completion_tokens: completion,
      total_tokens: completion,
      audio: { seconds: Math.ceil(audioBytes / ESTIMATE_BYTES_PER_SECOND) },
    },
    estimated: true,
  };
}

/** The most seconds an upload of `bytes` may hold, as a reservation counts them. */
export const worstCaseSeconds = (bytes: number): number => Math.ceil(bytes / WORST_BYTES_PER_SECOND);
