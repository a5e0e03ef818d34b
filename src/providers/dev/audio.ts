/**
 * The development provider's audio, offline and deterministic: speech is a WAV of silence, 50 ms
 * per character of the input (sent in 4 KiB pieces, as a synthesizer streams); a transcription
 * says how many bytes it heard, with a duration of one second per 16 kB (whisper-1's usage shape).
 */
import type {
  SpeechAudio,
  SpeechRequest,
  TranscriptionAnswer,
  TranscriptionRequest,
} from '../../formats/audio.js';
import { throwIfAborted } from '../http.js';
import type { CallContext } from '../types.js';

const RATE = 8_000;

/** A 16-bit mono PCM WAV of `samples` samples of silence. */
function silence(samples: number): Buffer {
  const data = samples * 2;
  const wav = Buffer.alloc(44 + data);
  wav.write('RIFF', 0, 'latin1');
  wav.writeUInt32LE(36 + data, 4);
  wav.write('WAVEfmt ', 8, 'latin1');
  wav.writeUInt32LE(16, 16);
  wav.writeUInt16LE(1, 20); // PCM
  wav.writeUInt16LE(1, 22); // mono
  wav.writeUInt32LE(RATE, 24);
  wav.writeUInt32LE(RATE * 2, 28);
  wav.writeUInt16LE(2, 32);
  wav.writeUInt16LE(16, 34);
  wav.write('data', 36, 'latin1');
  wav.writeUInt32LE(data, 40);
  return wav;
}

export async function devSpeech(req: SpeechRequest, ctx: CallContext): Promise<SpeechAudio> {
  throwIfAborted(ctx.signal);
  const wav = silence(Math.ceil(req.input.length * 0.05 * RATE));
  return {
    contentType: 'audio/wav',
    audio: (async function* () {
      for (let i = 0; i < wav.length; i += 4096) {
        throwIfAborted(ctx.signal);
        yield wav.subarray(i, i + 4096);
      }
    })(),
  };
}

export async function devTranscription(
  req: TranscriptionRequest,
  ctx: CallContext,
): Promise<TranscriptionAnswer> {
  throwIfAborted(ctx.signal);
  const text = `${req.audio.bytes} bytes of audio`;
  if (req.response_format === 'text' || req.response_format === 'srt' || req.response_format === 'vtt')
    return { contentType: 'text/plain; charset=utf-8', body: `${text}\n`, parsed: undefined };
  const parsed = { text, usage: { type: 'duration', seconds: Math.ceil(req.audio.bytes / 16_000) } };
  return { contentType: 'application/json', body: JSON.stringify(parsed), parsed };
}
