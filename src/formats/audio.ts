import { TranslationError } from './chat.js';

/**
 * OpenAI's audio endpoints as Gatehouse takes them: text to speech (`POST /audio/speech`) and
 * transcription (`POST /audio/transcriptions`, a multipart upload or OpenRouter's JSON form with
 * base64 `input_audio`). Validated here into the canonical requests the adapters send on.
 */

export const SPEECH_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;
export const TRANSCRIPTION_FORMATS = ['json', 'text', 'srt', 'verbose_json', 'vtt', 'diarized_json'] as const;

/**
 * Fields Gatehouse reads and never sends upstream: its routing fields and OpenRouter's
 * observability ones (`session_id`, `trace`, `user`: "never sent to the provider").
 */
export const AUDIO_GATEHOUSE_FIELDS = [
  'provider',
  'models',
  'route',
  'debug',
  'transforms',
  'plugins',
  'session_id',
  'trace',
  'user',
  // OpenRouter's voice references: no OpenAI-format server takes them.
  'input_references',
] as const;

/** A text to speak: the fields OpenAI's speech endpoint takes, the others passed on as sent. */
export interface SpeechRequest {
  model: string;
  input: string;
  voice?: string;
  response_format?: (typeof SPEECH_FORMATS)[number];
  speed?: number;
  instructions?: string;
  /** The caller's other fields (sent as they are: `stream_format` …). */
  [field: string]: unknown;
}

/**
 * The audio of a transcription: a file the route saved from a multipart upload (read from disk by
 * every attempt), or the bytes of OpenRouter's base64 `input_audio`.
 */
export type AudioSource =
  | { kind: 'file'; path: string; filename: string; contentType: string; bytes: number }
  | { kind: 'base64'; data: string; filename: string; contentType: string; bytes: number };

export interface TranscriptionRequest {
  model: string;
  audio: AudioSource;
  response_format?: (typeof TRANSCRIPTION_FORMATS)[number];
  /** `stream: true`: the answer asked for as OpenAI's event stream (`transcript.text.delta` …). */
  stream?: boolean;
  /** The form fields sent with the file (strings; lists as repeated `name[]` fields). */
  fields: Record<string, string | string[]>;
}

/** The key a multipart upload's saved file is put under in the call's body (never a JSON body's). */
export const UPLOADED_FILE = 'file';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function oneOf<T extends string>(body: Obj, field: string, allowed: readonly T[]): T | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || !allowed.includes(v as T))
    throw new TranslationError(`${field}: must be one of ${allowed.join(', ')}`);
  return v as T;
}

function optionalNumber(body: Obj, field: string): void {
  const v = body[field];
  if (v !== undefined && v !== null && (typeof v !== 'number' || !Number.isFinite(v)))
    throw new TranslationError(`${field}: must be a number`);
}

function optionalString(body: Obj, field: string): void {
  const v = body[field];
  if (v !== undefined && v !== null && typeof v !== 'string')
    throw new TranslationError(`${field}: must be a string`);
}

const withoutGatehouseFields = (body: Obj): Obj => {
  const out: Obj = { ...body };
  for (const f of AUDIO_GATEHOUSE_FIELDS) delete out[f];
  return out;
};

/** A speech body → the request sent upstream (TranslationError names what is wrong). */
export function speechRequestFromBody(body: Obj): SpeechRequest {
  if (typeof body.model !== 'string' || body.model === '')
    throw new TranslationError('model: a model id is required');
  if (typeof body.input !== 'string' || body.input === '')
    throw new TranslationError('input: the text to speak is required');
  optionalString(body, 'voice');
  optionalString(body, 'instructions');
  optionalNumber(body, 'speed');
  const format = oneOf(body, 'response_format', SPEECH_FORMATS);
  if (body.stream === true)
    throw new TranslationError('stream: not supported; the audio is streamed as it is made');
  const out = withoutGatehouseFields(body);
  delete out.stream;
  if (format) out.response_format = format;
  return out as SpeechRequest;
}

/** Audio types by OpenRouter's `input_audio.format` (and a file's extension). */
const AUDIO_TYPES: Record<string, string> = {
  mp3: 'audio/mpeg',
  mpeg: 'audio/mpeg',
  mpga: 'audio/mpeg',
  m4a: 'audio/mp4',
  mp4: 'audio/mp4',
  wav: 'audio/wav',
  webm: 'audio/webm',
  ogg: 'audio/ogg',
  oga: 'audio/ogg',
  flac: 'audio/flac',
  aac: 'audio/aac',
  opus: 'audio/opus',
  pcm: 'audio/pcm',
};

export const audioTypeOf = (format: string): string =>
  AUDIO_TYPES[format.toLowerCase()] ?? 'application/octet-stream';

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** Decoded size of a base64 string (without decoding it). */
const decodedBytes = (data: string): number =>
  Math.floor((data.length * 3) / 4) - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0);

/** The audio a transcription body carries: an uploaded file, or base64 `input_audio`. */
function audioOf(body: Obj): AudioSource {
  const uploaded = body[UPLOADED_FILE];
  if (isObj(uploaded) && uploaded.kind === 'file') return uploaded as AudioSource;
  const input = body.input_audio;
  if (input === undefined || input === null)
    throw new TranslationError(
      'file: the audio is required (a multipart file part named file, or input_audio in a JSON body)',
    );
  if (!isObj(input) || typeof input.data !== 'string' || typeof input.format !== 'string')
    throw new TranslationError('input_audio: must be {data: base64 audio, format}');
  // A data URL's prefix is taken off; the rest must be base64.
  const data = input.data.replace(/^data:[^,]*;base64,/, '');
  if (data === '' || !BASE64.test(data)) throw new TranslationError('input_audio.data: must be base64 audio');
  const format = input.format.replace(/[^A-Za-z0-9]/g, '').slice(0, 10) || 'bin';
  return {
    kind: 'base64',
    data,
    filename: `audio.${format}`,
    contentType: audioTypeOf(format),
    bytes: decodedBytes(data),
  };
}

/** Form values as sent upstream: strings, lists as lists (`timestamp_granularities[]`). */
function formValue(field: string, v: unknown): string | string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v as string[];
  if (isObj(v) || Array.isArray(v)) return JSON.stringify(v);
  throw new TranslationError(`${field}: unsupported value`);
}

/** A transcription body (a multipart form's fields, or JSON) → the request sent upstream. */
export function transcriptionRequestFromBody(body: Obj): TranscriptionRequest {
  if (typeof body.model !== 'string' || body.model === '')
    throw new TranslationError('model: a model id is required');
  const format = oneOf(body, 'response_format', TRANSCRIPTION_FORMATS);
  optionalString(body, 'language');
  optionalString(body, 'prompt');
  if (body.temperature !== undefined && Number.isNaN(Number(body.temperature)))
    throw new TranslationError('temperature: must be a number');
  // A form sends it as the string "true", a JSON body as a boolean.
  const stream = body.stream;
  if (
    stream !== undefined &&
    stream !== null &&
    ![true, false, 'true', 'false'].includes(stream as boolean | string)
  )
    throw new TranslationError('stream: must be true or false');
  const audio = audioOf(body);
  const fields: Record<string, string | string[]> = {};
  const rest = withoutGatehouseFields(body);
  for (const f of ['model', 'input_audio', UPLOADED_FILE, 'stream']) delete rest[f];
  for (const [k, v] of Object.entries(rest)) {
    // OpenAI's multipart form names lists `name[]`; a JSON body's lists become those fields.
    const name = k.endsWith('[]') ? k.slice(0, -2) : k;
    const value = formValue(k, v);
    if (value === undefined) continue;
    if (name === 'timestamp_granularities') {
      const list = Array.isArray(value) ? value : [value];
      for (const g of list)
        if (g !== 'word' && g !== 'segment')
          throw new TranslationError('timestamp_granularities: each must be word or segment');
    }
    const prior = fields[name];
    fields[name] =
      prior === undefined
        ? value
        : [...(Array.isArray(prior) ? prior : [prior]), ...(Array.isArray(value) ? value : [value])];
  }
  return {
    model: body.model,
    audio,
    ...(format ? { response_format: format } : {}),
    ...(stream === true || stream === 'true' ? { stream: true } : {}),
    fields,
  };
}

/** A speech answer: the audio as it arrives (never held whole), with the upstream's content type. */
export interface SpeechAudio {
  contentType: string;
  audio: AsyncIterable<Buffer>;
  /**
   * The usage the answer reported, once it has been read: OpenAI's `stream_format: "sse"` ends
   * with a `speech.audio.done` event carrying it; plain audio reports none (null).
   */
  reported?(): { input_tokens: number; output_tokens: number } | null;
}

/** A transcription answer as the upstream sent it (its JSON parsed when it is JSON). */
export interface TranscriptionAnswer {
  contentType: string;
  body: string;
  /** The parsed JSON answer; undefined for text, srt and vtt answers (and event streams). */
  parsed: unknown;
  /** An event stream (`stream: true`): its bytes as they arrive, never held whole. */
  events?: AsyncIterable<Buffer>;
  /**
   * Once `events` has been read: the text of its deltas and its `transcript.text.done` event
   * (the final text and the usage), null when the stream ended without one.
   */
  streamed?(): { text: string; done: unknown };
}
