/**
 * The audio bodies and answers as the OpenAPI document describes them — documentation only, as
 * the other inference schemas (openapi-schemas.ts): never compiled, fields stay open.
 */
import { Type } from '@sinclair/typebox';
import { SPEECH_FORMATS, TRANSCRIPTION_FORMATS } from '../formats/audio.js';
import { StringEnum } from '../server/schemas.js';
import { costFields, modelField, routingFields } from './openapi-schemas.js';

const open = { additionalProperties: true };

export const SpeechRequest = Type.Object(
  {
    model: modelField,
    input: Type.String({ description: 'The text to speak (content filters apply to it)' }),
    voice: Type.Optional(Type.String({ examples: ['alloy'] })),
    response_format: Type.Optional(StringEnum([...SPEECH_FORMATS], { default: 'mp3' })),
    speed: Type.Optional(Type.Number()),
    instructions: Type.Optional(Type.String()),
    ...routingFields,
  },
  { $id: 'SpeechRequest', title: 'Speech request', ...open },
);

const transcriptionFields = {
  model: modelField,
  language: Type.Optional(Type.String()),
  prompt: Type.Optional(Type.String()),
  response_format: Type.Optional(StringEnum([...TRANSCRIPTION_FORMATS], { default: 'json' })),
  temperature: Type.Optional(Type.Number()),
  timestamp_granularities: Type.Optional(Type.Array(StringEnum(['word', 'segment']))),
  stream: Type.Optional(
    Type.Boolean({
      description:
        "Answer with OpenAI's event stream (`text/event-stream`: `transcript.text.delta` events, then `transcript.text.done` with the usage), relayed as it arrives; a model that does not stream answers as usual",
    }),
  ),
};

export const TranscriptionRequest = Type.Object(
  {
    ...transcriptionFields,
    input_audio: Type.Object(
      {
        data: Type.String({ description: 'The audio, base64-encoded' }),
        format: Type.String({
          description: 'Its format: mp3, wav, m4a, webm, ogg, flac …',
          examples: ['wav'],
        }),
      },
      { description: 'In a JSON body (OpenRouter); a multipart body sends a `file` part instead' },
    ),
    ...routingFields,
  },
  { $id: 'TranscriptionRequest', title: 'Transcription request', ...open },
);

export const Transcription = Type.Object(
  {
    text: Type.String(),
    provider: Type.Optional(Type.String()),
    language: Type.Optional(Type.String()),
    duration: Type.Optional(Type.Number()),
    segments: Type.Optional(Type.Array(Type.Object({}, open))),
    words: Type.Optional(Type.Array(Type.Object({}, open))),
    usage: Type.Optional(
      Type.Object(
        {
          type: Type.Optional(StringEnum(['tokens', 'duration'])),
          input_tokens: Type.Optional(Type.Integer()),
          output_tokens: Type.Optional(Type.Integer()),
          total_tokens: Type.Optional(Type.Integer()),
          seconds: Type.Optional(Type.Number()),
          ...costFields,
        },
        open,
      ),
    ),
  },
  { $id: 'Transcription', title: 'Transcription', ...open },
);

export const AUDIO_SCHEMAS = [SpeechRequest, TranscriptionRequest, Transcription];
