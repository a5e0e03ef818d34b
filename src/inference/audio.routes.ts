import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import multipart from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { captureTranscript, tapSpeech, tapTranscript } from '../content-log/tap.js';
import { type AudioSource, audioTypeOf, UPLOADED_FILE } from '../formats/audio.js';
import { ApiError, badRequest } from '../lib/errors.js';
import { TempFiles } from '../lib/temp-files.js';
import type { Body, EarlyAdmission } from '../routing/call.js';
import type { OpenapiOnly } from '../server/openapi-only.js';
import type { Router } from '../server/router.js';
import type { Services } from '../services.js';
import { AUDIO_SCHEMAS, SpeechRequest, Transcription, TranscriptionRequest } from './audio-schemas.js';
import { callOf, describe, failed, inferenceTooLarge, traced } from './routes.js';
import { callAbort, sendSse } from './stream.js';
import { speechWire, transcriptionWire } from './wires/audio.js';
import type { CallerWire } from './wires/wire.js';

const tags = ['Inference'];
const ERROR_STATUSES = [400, 401, 402, 403, 404, 413, 429, 500, 502];
const AnyBody = Type.Object({}, { additionalProperties: true });

/** The saved upload's name as sent upstream: its extension kept, nothing of a path. */
const safeName = (name: string | undefined): string => {
  const ext = /\.([A-Za-z0-9]{1,10})$/.exec(name ?? '')?.[1];
  return `audio.${ext ?? 'bin'}`;
};

/** Stands for the upload in the fields checked before it is read (its checks read nothing of it). */
const PENDING_UPLOAD: AudioSource = {
  kind: 'file',
  path: '',
  filename: 'audio.bin',
  contentType: 'application/octet-stream',
  bytes: 0,
};

/**
 * Reads a transcription's multipart form: its fields (repeated `name[]` fields as lists) and its
 * `file` part, streamed to a temp file under `maxBytes` (more: a 413 once the body has been read).
 * When the fields sent before the file name the model, `beforeFile` sees them before any byte of
 * the file is read; what it throws ends the form there, the rest of the upload unread.
 */
async function readForm(
  req: FastifyRequest,
  dir: () => Promise<string>,
  maxBytes: number,
  beforeFile: (fields: Body) => Promise<void>,
): Promise<Body> {
  const body: Body = {};
  let file: AudioSource | null = null;
  let failure: ApiError | null = null;
  const refuse = (err: ApiError) => {
    failure ??= err;
  };
  let checked = false;
  let refusedEarly: { err: unknown } | null = null;
  try {
    // The plugin's own file limit would cut a file at the body limit (1 MiB) without a word.
    const limits = { fieldSize: 256 * 1024, fields: 50, parts: 60, fileSize: maxBytes + 1 };
    for await (const part of req.parts({ limits })) {
      if (part.type === 'field') {
        const value = String(part.value);
        const name = part.fieldname;
        // The call was admitted for the model named before the file: it is not named anew.
        if (checked && name === 'model')
          refuse(badRequest('model: named again after the file; name it once'));
        else if (name.endsWith('[]')) {
          const prior = body[name];
          body[name] = [...(Array.isArray(prior) ? prior : []), value];
        } else body[name] = value;
        continue;
      }
      if (failure || part.fieldname !== 'file' || file) {
        refuse(
          badRequest(part.fieldname === 'file' ? 'Send one file' : `Unknown file field ${part.fieldname}`),
        );
        await Readable.from(part.file).forEach(() => {});
        continue;
      }
      if (!checked && typeof body.model === 'string') {
        checked = true;
        try {
          await beforeFile(body);
        } catch (err) {
          refusedEarly = { err };
          break;
        }
      }
      const path = join(await dir(), randomUUID());
      let bytes = 0;
      let over = false;
      await pipeline(
        part.file,
        async function* (source: AsyncIterable<Buffer>) {
          for await (const chunk of source) {
            bytes += chunk.length;
            if (bytes > maxBytes) over = true;
            // Beyond the limit the rest is read and dropped, so the client gets the answer.
            if (!over) yield chunk;
          }
        },
        createWriteStream(path, { mode: 0o600 }),
      );
      if (over || part.file.truncated)
        refuse(
          new ApiError(
            413,
            `file is larger than ${maxBytes} bytes, the most a transcription takes (GATEHOUSE_AUDIO_MAX_BYTES)`,
          ),
        );
      const filename = safeName(part.filename);
      const type = part.mimetype && part.mimetype !== 'application/octet-stream' ? part.mimetype : null;
      file = { kind: 'file', path, filename, contentType: type ?? audioTypeOf(filename.slice(6)), bytes };
    }
  } catch (err) {
    if (err instanceof ApiError) throw err;
    refuse(badRequest(`The multipart body is malformed: ${(err as Error).message}`));
  }
  if (refusedEarly) throw refusedEarly.err;
  if (failure) throw failure;
  // Set last: a text field named `file` never stands for the upload.
  if (file) body[UPLOADED_FILE] = file;
  else delete body[UPLOADED_FILE];
  return body;
}

/**
 * OpenAI's audio endpoints: text to speech (the upstream's audio streamed back as it arrives) and
 * transcription (a multipart upload, or OpenRouter's JSON body with base64 audio). Every guard of
 * an inference call applies (engine.speak / engine.transcribe).
 */
export async function audioRoutes(
  app: Router,
  { engine, config, contentLog }: Pick<Services, 'engine' | 'config' | 'contentLog'>,
) {
  for (const schema of AUDIO_SCHEMAS) app.addSchema(schema);
  const response = (wire: CallerWire<unknown>) =>
    Object.fromEntries(ERROR_STATUSES.map((s) => [s, wire.errorSchema]));

  const speechDoc: OpenapiOnly = {
    body: Type.Ref(SpeechRequest),
    response: {
      200: {
        description: 'The audio, streamed as the provider makes it (its content type: audio/mpeg …)',
        content: { 'audio/*': { schema: Type.String({ format: 'binary' }) } },
      },
    },
  };
  app.post(
    speechWire.path,
    {
      bodyLimit: config.inferenceBodyLimit,
      config: {
        auth: 'api' as const,
        verbatim: true,
        renderError: speechWire.renderError,
        tooLarge: inferenceTooLarge(config.inferenceBodyLimit),
        openapi: speechDoc,
      },
      schema: { tags, summary: speechWire.summary, body: AnyBody, response: response(speechWire) },
    },
    traced(async (req: FastifyRequest, reply: FastifyReply) => {
      const call = callOf(req, speechWire, callAbort(reply));
      const spoken = await engine.speak(call);
      describe(reply, spoken.info);
      reply.type(spoken.contentType);
      const audio = tapSpeech(contentLog, call, spoken.info, spoken.audio, spoken.contentType);
      return reply.send(Readable.from(audio, { objectMode: false }));
    }),
  );

  // A JSON body carries its audio base64-encoded: its limit is that of the largest audio so
  // encoded, when that is over the inference limit.
  const maxAudio = config.audioMaxBytes;
  const audioJsonLimit = Math.ceil(maxAudio / 3) * 4 + 64 * 1024;
  const jsonLimit = Math.max(config.inferenceBodyLimit, audioJsonLimit);
  const jsonTooLarge =
    audioJsonLimit > config.inferenceBodyLimit
      ? `The JSON body is larger than ${jsonLimit} bytes, the most /audio/transcriptions takes (GATEHOUSE_AUDIO_MAX_BYTES=${maxAudio} of audio, base64-encoded)`
      : inferenceTooLarge(jsonLimit);
  const transcriptionDoc: OpenapiOnly = {
    body: Type.Ref(TranscriptionRequest),
    response: {
      200: {
        description:
          'The transcription: JSON, or text, srt and vtt as the provider sent them; with `stream: true`, its event stream',
        content: {
          'application/json': { schema: Type.Ref(Transcription) },
          'text/plain': { schema: Type.String() },
          'text/event-stream': {
            schema: Type.String({
              description: '`transcript.text.delta` events, then `transcript.text.done` with the usage',
            }),
          },
        },
      },
    },
  };
  await app.register(async (scope) => {
    // Registered on the plain instance: TypeScript cannot follow the plugin's types through the
    // TypeBox provider (its instantiation is "excessively deep").
    await (scope as unknown as FastifyInstance).register(multipart, { throwFileSizeLimit: false });
    scope.post(
      transcriptionWire.path,
      {
        bodyLimit: jsonLimit,
        config: {
          auth: 'api' as const,
          verbatim: true,
          renderError: transcriptionWire.renderError,
          tooLarge: jsonTooLarge,
          openapi: transcriptionDoc,
        },
        schema: {
          tags,
          summary: transcriptionWire.summary,
          description:
            'A multipart/form-data upload (`file` and the form fields, as OpenAI takes it) or a JSON ' +
            'body with `input_audio` (base64 audio, as OpenRouter takes it). Audio up to ' +
            '`GATEHOUSE_AUDIO_MAX_BYTES` (413 beyond).',
          consumes: ['application/json', 'multipart/form-data'],
          response: response(transcriptionWire),
        },
      },
      traced(async (req: FastifyRequest, reply: FastifyReply) => {
        const temp = new TempFiles('audio');
        const tempDir = () => temp.dir();
        const removeDir = () => temp.cleanup();
        let relaying = false;
        const signal = callAbort(reply);
        let admitted: EarlyAdmission | undefined;
        // A form naming its model before its file is admitted before the file is read: a call
        // refused for its key, model or credits does not upload its audio first. Admitted, the call
        // carries its admission to the engine (counted once).
        const admitEarly = async (fields: Body) => {
          try {
            // The fields' own 400s first, as the whole form would get them.
            const early = callOf(req, transcriptionWire, signal, {
              ...fields,
              [UPLOADED_FILE]: PENDING_UPLOAD,
            });
            admitted = await engine.admitEarly(early);
          } catch (err) {
            // The rest of the upload is not drained: the connection closes after the answer.
            reply.header('connection', 'close');
            throw err;
          }
        };
        try {
          if (req.isMultipart()) req.body = await readForm(req, tempDir, maxAudio, admitEarly);
          else {
            const body = req.body;
            if (typeof body !== 'object' || body === null || Array.isArray(body))
              throw badRequest('The body must be a JSON object or a multipart/form-data upload');
            if (UPLOADED_FILE in body)
              throw badRequest('file: send the file as multipart/form-data, or the audio as input_audio');
            const data = (body as { input_audio?: { data?: unknown } }).input_audio?.data;
            if (typeof data === 'string' && Math.floor((data.length * 3) / 4) > maxAudio + 3)
              throw new ApiError(
                413,
                `input_audio is larger than ${maxAudio} bytes of audio, the most a transcription takes (GATEHOUSE_AUDIO_MAX_BYTES)`,
              );
          }
          const call = callOf(req, transcriptionWire, signal);
          if (admitted) call.admitted = admitted;
          const done = await engine.transcribe(call);
          describe(reply, done.info);
          if ('events' in done) {
            // `stream: true`: the upstream's events relayed as they arrive; the upload is kept
            // until the answer is over.
            // One failing after it started ends with an `error` event, as a chat stream does.
            relaying = true;
            reply.raw.once('close', () => void removeDir());
            const { info } = done;
            return sendSse(req, reply, tapTranscript(contentLog, call, info, done.events), {
              failed: (err) => failed(transcriptionWire, info, err),
              keepaliveMs: config.streamKeepaliveMs,
            });
          }
          const answer = transcriptionWire.encodeResponse(done, { ...call, echoUpstream: false });
          captureTranscript(contentLog, call, done.info, reply, done.response);
          // Gone before the caller has the answer (a refusal's or failure's: before its error is sent).
          await removeDir();
          if (typeof answer === 'string') reply.type(done.response.contentType);
          return reply.send(answer);
        } finally {
          if (!relaying) await removeDir();
        }
      }),
    );
  });
}
