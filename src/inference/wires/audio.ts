import { Type } from '@sinclair/typebox';
import {
  AUDIO_GATEHOUSE_FIELDS,
  type SpeechRequest,
  speechRequestFromBody,
  type TranscriptionAnswer,
  type TranscriptionRequest,
  transcriptionRequestFromBody,
  UPLOADED_FILE,
} from '../../formats/audio.js';
import { TranslationError } from '../../formats/chat.js';
import { sseJson } from '../../formats/sse.js';
import { badRequest } from '../../lib/errors.js';
import { worstCaseSeconds } from '../../routing/audio-usage.js';
import type { Body, TextSlot } from '../../routing/call.js';
import { envelope } from '../../server/errors.js';
import { charged } from '../decorate.js';
import { stringSlot } from './texts.js';
import { type CallerWire, modelsOf, withoutFields } from './wire.js';

/** A strict parse as a route's 400 (the body is checked before any model or provider is). */
function checked<T>(
  parse: (body: Body) => T,
  body: Body,
  stream = false,
): { model: string; stream: boolean } {
  const model = body.model ?? modelsOf(body)?.[0];
  try {
    parse(typeof model === 'string' ? { ...body, model } : body);
  } catch (err) {
    if (err instanceof TranslationError) throw badRequest(err.message);
    throw err;
  }
  return { model: model as string, stream };
}

/** The one text of a field (the speech's input, a transcription's prompt): what filters read. */
const fieldText =
  (field: string) =>
  (body: Body): TextSlot[] => {
    const out: TextSlot[] = [];
    stringSlot(out, 'user', body, field);
    return out;
  };

/** `POST /audio/speech`: OpenAI's text to speech; the answer is the upstream's audio, streamed. */
export const speechWire: CallerWire<never> = {
  endpoint: 'speech',
  native: 'openai-audio',
  kind: 'speech',
  path: '/audio/speech',
  summary: 'Text to speech (OpenAI format)',
  forwardHeaders: [],
  inspect: (body) => checked(speechRequestFromBody, body),
  parse: (body): SpeechRequest => speechRequestFromBody(body),
  texts: fieldText('input'),
  audioUnits: (body) => ({ characters: typeof body.input === 'string' ? body.input.length : 0 }),
  laneBody: (body, upstreamModel) => withoutFields(body, upstreamModel, AUDIO_GATEHOUSE_FIELDS),
  // The route streams the audio itself (audio.routes.ts).
  encodeResponse: () => undefined,
  streamError: () => [],
  renderError: envelope,
  errorSchema: Type.Ref('ErrorBody'),
};

/** The size of a transcription body's audio (its upload, or its base64 `input_audio`). */
function audioBytes(body: Body): number {
  const file = body[UPLOADED_FILE] as { bytes?: unknown } | undefined;
  if (typeof file?.bytes === 'number') return file.bytes;
  const data = (body.input_audio as { data?: unknown } | undefined)?.data;
  return typeof data === 'string' ? Math.floor((data.length * 3) / 4) : 0;
}

/**
 * `POST /audio/transcriptions`: OpenAI's transcription of a multipart upload, or OpenRouter's JSON
 * body with base64 `input_audio`. A JSON answer is the upstream's with the cost in its `usage`; a
 * text, srt or vtt answer is relayed as it came.
 */
export const transcriptionWire: CallerWire<TranscriptionAnswer> = {
  endpoint: 'transcription',
  native: 'openai-audio',
  kind: 'transcription',
  path: '/audio/transcriptions',
  summary: 'Audio transcription (OpenAI format)',
  forwardHeaders: [],
  // `stream: true` (a form's "true", a JSON body's true): OpenAI's events, relayed (audio.routes.ts).
  inspect: (body) =>
    checked(transcriptionRequestFromBody, body, body.stream === true || body.stream === 'true'),
  parse: (body): TranscriptionRequest => transcriptionRequestFromBody(body),
  texts: fieldText('prompt'),
  audioUnits: (body) => ({ seconds: worstCaseSeconds(audioBytes(body)) }),
  laneBody: (body, upstreamModel) => withoutFields(body, upstreamModel, AUDIO_GATEHOUSE_FIELDS),
  encodeResponse: (done) => {
    const { parsed, body } = done.response;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return body;
    const prior = (parsed as { usage?: unknown }).usage;
    const c = charged(done.cost, done.info.served.credential.isByok);
    const seconds = done.usage.audio?.seconds;
    return {
      ...parsed,
      provider: done.info.served.endpoint.provider,
      usage: {
        ...(typeof prior === 'object' && prior !== null ? prior : {}),
        ...(typeof prior !== 'object' && seconds !== undefined ? { seconds } : {}),
        cost: c.cost,
        is_byok: c.is_byok,
      },
    };
  },
  // OpenAI's `error` event: the openai client's stream throws it as an APIError.
  streamError: (_info, message, status = 502) => [
    sseJson({ type: 'error', error: { message, type: 'server_error', code: status } }, 'error'),
  ],
  renderError: envelope,
  errorSchema: Type.Ref('ErrorBody'),
};
