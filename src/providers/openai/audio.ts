/**
 * OpenAI's audio wire, for OpenAI and OpenAI-compatible servers (and Azure, through its target):
 * speech is `POST …/audio/speech` with a JSON body, answered with audio bytes relayed as they
 * arrive; a transcription is `POST …/audio/transcriptions` as multipart/form-data, built for each
 * attempt from the saved file (read from disk as it is sent) or the decoded base64 audio.
 */
import { openAsBlob } from 'node:fs';
import { FormData } from 'undici';
import type { SpeechAudio, TranscriptionAnswer, TranscriptionRequest } from '../../formats/audio.js';
import { encodeSse, parseSseChunks, type SseEvent } from '../../formats/sse.js';
import type { ErrorShape } from '../errors.js';
import {
  type ApiCall,
  ensureOk,
  postStream,
  readJson,
  throwIfAborted,
  toUpstreamError,
  upstreamAgent,
} from '../http.js';
import { redact } from '../redact.js';
import { UpstreamError } from '../types.js';
import { throwIfErrorPayload } from './errors.js';

const headerOf = (headers: Record<string, string | string[] | undefined>, name: string): string => {
  const v = headers[name];
  return (Array.isArray(v) ? v[0] : v) ?? '';
};

/** The audio of a speech call, resolved at the upstream's headers (a failure before them falls back). */
export async function postSpeech(call: ApiCall): Promise<SpeechAudio> {
  const { signal, secrets, errors } = call;
  const res = await postStream(call.url, call.body, { ...call.headers, accept: '*/*' }, signal, {
    secrets,
    ...(call.idleTimeoutMs ? { bodyTimeoutMs: call.idleTimeoutMs } : {}),
  });
  await ensureOk(res, signal, errors, secrets);
  const contentType = headerOf(res.headers, 'content-type') || 'application/octet-stream';
  // A server that answers an error with 200 sends JSON, never audio: refused before it is relayed.
  if (/^application\/(problem\+)?json/i.test(contentType)) {
    const json = await readJson(res, signal, secrets);
    throwIfErrorPayload(json, secrets, true, errors);
  }
  const body = res.body;
  // An event stream's last event (speech.audio.done) carries the usage: its tail is kept to read it.
  const events = /^text\/event-stream/i.test(contentType);
  let tail = '';
  return {
    contentType,
    audio: (async function* () {
      try {
        for await (const chunk of body) {
          if (events) tail = (tail + chunk.toString('latin1')).slice(-TAIL_CHARS);
          yield chunk;
        }
      } catch (err) {
        throw toUpstreamError(err, signal, secrets);
      } finally {
        body.release();
      }
    })(),
    reported: () => (events ? speechDoneUsage(tail) : null),
  };
}

/** Characters of an event stream kept to find its final event (a few hundred in OpenAI's). */
const TAIL_CHARS = 8192;

/** The usage of the last `speech.audio.done` event in `tail`, if it holds a whole one. */
export function speechDoneUsage(tail: string): { input_tokens: number; output_tokens: number } | null {
  const lines = tail.split(/\r?\n/).filter((l) => l.startsWith('data:'));
  for (let i = lines.length - 1; i >= 0; i--) {
    let event: { type?: unknown; usage?: { input_tokens?: unknown; output_tokens?: unknown } };
    try {
      event = JSON.parse((lines[i] as string).slice(5));
    } catch {
      continue;
    }
    if (event?.type !== 'speech.audio.done') continue;
    const { input_tokens: input, output_tokens: output } = event.usage ?? {};
    const valid = (n: unknown): n is number =>
      typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= 1e8;
    return valid(input) && valid(output) ? { input_tokens: input, output_tokens: output } : null;
  }
  return null;
}

/** The multipart form of a transcription: its fields, then the audio file. */
async function formOf(req: TranscriptionRequest): Promise<FormData> {
  const { audio } = req;
  const blob =
    audio.kind === 'file'
      ? await openAsBlob(audio.path, { type: audio.contentType })
      : new Blob([Buffer.from(audio.data, 'base64')], { type: audio.contentType });
  const form = new FormData();
  form.append('model', req.model);
  if (req.stream) form.append('stream', 'true');
  for (const [name, value] of Object.entries(req.fields)) {
    if (Array.isArray(value)) for (const v of value) form.append(`${name}[]`, v);
    else form.append(name, value);
  }
  form.append('file', blob, audio.filename);
  return form;
}

/**
 * Reads OpenAI's transcription events as they pass (`transcript.text.delta`, then
 * `transcript.text.done` with the final text and the usage). An `error` event, or one whose data is
 * not JSON, throws: the stream failed, and is ended as failed rather than relayed on.
 */
export class TranscriptTap {
  text = '';
  done: unknown = null;

  constructor(
    private readonly secrets: (string | null | undefined)[] = [],
    private readonly errors?: ErrorShape,
  ) {}

  read({ event: name, data }: SseEvent): void {
    let event: { type?: unknown; delta?: unknown; error?: unknown };
    try {
      event = JSON.parse(data);
    } catch {
      throw new UpstreamError(502, 'upstream sent an invalid stream event', { retryable: true });
    }
    if (name === 'error' || event?.type === 'error' || event?.error)
      throwIfErrorPayload(event, this.secrets, true, this.errors);
    if (event?.type === 'transcript.text.delta' && typeof event.delta === 'string') this.text += event.delta;
    else if (event?.type === 'transcript.text.done') this.done = event;
  }
}

/**
 * A transcription: the form POSTed, the whole answer read (JSON, or text/srt/vtt as it came) — or,
 * asked with `stream: true`, the event stream relayed as it arrives and read by a tap on the way.
 */
export async function postTranscription(
  call: ApiCall,
  req: TranscriptionRequest,
): Promise<TranscriptionAnswer> {
  const { signal, secrets, errors } = call;
  throwIfAborted(signal);
  const { origin, pathname, search } = new URL(call.url);
  let res: {
    status: number;
    headers: Record<string, string | string[] | undefined>;
    body: AsyncIterable<Buffer> & { text(): Promise<string>; destroy(): void };
  };
  try {
    const r = await upstreamAgent().request({
      origin,
      path: `${pathname}${search}`,
      method: 'POST',
      headers: {
        accept: req.stream ? 'text/event-stream, application/json' : 'application/json, text/plain',
        ...call.headers,
      },
      body: await formOf(req),
      signal: signal as AbortSignal,
      ...(call.idleTimeoutMs ? { bodyTimeout: call.idleTimeoutMs } : {}),
    });
    res = { status: r.statusCode, headers: r.headers, body: r.body };
  } catch (err) {
    throw toUpstreamError(err, signal, secrets);
  }
  await ensureOk(res, signal, errors, secrets);
  const contentType = headerOf(res.headers, 'content-type') || 'application/json';
  // A model that does not stream (whisper-1) answers JSON: read as any answer.
  if (/^text\/event-stream/i.test(contentType)) return streamedTranscription(contentType, res.body, call);
  let body: string;
  try {
    body = await res.body.text();
  } catch (err) {
    throw toUpstreamError(err, signal, secrets);
  }
  if (!/json/i.test(contentType)) return { contentType, body, parsed: undefined };
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new UpstreamError(502, `upstream sent invalid JSON: ${redact(body.slice(0, 200), secrets)}`, {
      retryable: true,
    });
  }
  throwIfErrorPayload(parsed, secrets, false, errors);
  return { contentType, body, parsed };
}

/**
 * A transcription's event stream, relayed event by event (a caller never gets half an event, so a
 * failure can be told after the last whole one); the events are re-encoded as they came.
 */
function streamedTranscription(
  contentType: string,
  body: AsyncIterable<Buffer> & { destroy(): void },
  { signal, secrets, errors }: ApiCall,
): TranscriptionAnswer {
  const tap = new TranscriptTap(secrets, errors);
  return {
    contentType,
    body: '',
    parsed: undefined,
    events: (async function* () {
      try {
        for await (const batch of parseSseChunks(body)) {
          // The events before a failed one are relayed, then the failure.
          let frames = '';
          let failure: unknown = null;
          for (const event of batch) {
            try {
              tap.read(event);
            } catch (err) {
              failure = err;
              break;
            }
            frames += encodeSse(event);
          }
          if (frames) yield Buffer.from(frames);
          if (failure) throw failure;
        }
      } catch (err) {
        throw toUpstreamError(err, signal, secrets);
      } finally {
        // Left early (the caller gone): the upstream call is closed with it.
        body.destroy();
      }
    })(),
    streamed: () => ({ text: tap.text, done: tap.done }),
  };
}
