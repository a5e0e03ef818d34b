import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OpenRouter } from '@openrouter/sdk';
import OpenAI, { toFile } from 'openai';
import OpenAI7, { toFile as toFile7 } from 'openai-v7';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';

/**
 * OpenAI's audio endpoints through Gatehouse: `POST /audio/speech` and `POST /audio/transcriptions`
 * called with the official `openai` client and `@openrouter/sdk` (response validation on), against
 * a mock upstream speaking OpenAI's audio wire over real sockets. What reached the upstream, what
 * the caller got back, and the generation each call recorded (usage, cost) are asserted.
 */

/** One request the mock received: its path, headers, and JSON body or multipart form. */
interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  json?: Record<string, unknown>;
  fields?: Record<string, string[]>;
  file?: { name: string; type: string; bytes: Buffer };
}

/** Deterministic "audio": `n` bytes of a pattern no two offsets of which are confused. */
const audioBytes = (n: number, seed = 7): Buffer => {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed * 17 + (i >> 8)) & 0xff;
  return b;
};
const SPOKEN = audioBytes(300_000);

const readBody = async (req: IncomingMessage): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
};

/** A streamed transcription's deltas, and the usage of its `transcript.text.done` event. */
const TRANSCRIPT_DELTAS = ['the', ' quick', ' brown', ' fox', ' jumps'];
const STREAMED_USAGE = {
  type: 'tokens',
  input_tokens: 90,
  output_tokens: 6,
  total_tokens: 96,
  input_token_details: { text_tokens: 0, audio_tokens: 90 },
};

/** The mock: OpenAI's audio wire under `/openai/v1` and `/backup/v1` (a second provider). */
async function startAudioUpstream() {
  const received: Received[] = [];
  /**
   * `tts-slow`: its first piece, then the rest once the test calls `release` (`ended`), unless the
   * gateway closes the connection first (`closed`).
   */
  const slow = { release: () => {}, ended: false, closed: false };
  /** `stt-slow`, streamed: its first delta, then the rest on `release`, as `slow`. */
  const slowStt = { release: () => {}, ended: false, closed: false };
  const server: Server = createServer(async (req, res) => {
    const raw = await readBody(req);
    // Matched without its query (Azure's `api-version`), recorded with it.
    const path = (req.url ?? '').split('?')[0] as string;
    // The model discovery of the OpenAI-compatible provider: no models of its own.
    if (req.method !== 'POST') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ object: 'list', data: [] }));
    }
    const type = req.headers['content-type'] ?? '';
    const got: Received = { path: req.url ?? '', headers: req.headers };
    if (type.startsWith('multipart/form-data')) {
      const form = await new Request('http://mock/', {
        method: 'POST',
        headers: { 'content-type': type },
        body: raw,
      }).formData();
      got.fields = {};
      for (const [k, v] of form.entries()) {
        if (typeof v === 'string') got.fields[k] = [...(got.fields[k] ?? []), v];
        else got.file = { name: v.name, type: v.type, bytes: Buffer.from(await v.arrayBuffer()) };
      }
    } else got.json = JSON.parse(raw.toString('utf8'));
    received.push(got);
    const model = got.json?.model ?? got.fields?.model?.[0];
    if (model === 'tts-down' || model === 'stt-down') {
      res.writeHead(503, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ error: { message: 'overloaded', type: 'server_error' } }));
    }
    if (path.endsWith('/audio/speech') && model === 'tts-slow') {
      slow.ended = false;
      slow.closed = false;
      res.writeHead(200, { 'content-type': 'audio/mpeg' });
      res.write(SPOKEN.subarray(0, 1000));
      const released = await new Promise<boolean>((r) => {
        slow.release = () => r(true);
        res.once('close', () => r(false));
      });
      if (!released) {
        slow.closed = true;
        return;
      }
      res.end(SPOKEN.subarray(1000));
      slow.ended = true;
      return;
    }
    if (path.endsWith('/audio/speech') && got.json?.stream_format === 'sse') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const delta = { type: 'speech.audio.delta', audio: SPOKEN.subarray(0, 3000).toString('base64') };
      res.write(`data: ${JSON.stringify(delta)}\n\n`);
      const usage = { input_tokens: 7, output_tokens: 300, total_tokens: 307 };
      return res.end(`data: ${JSON.stringify({ type: 'speech.audio.done', usage })}\n\n`);
    }
    if (path.endsWith('/audio/speech')) {
      const format = String(got.json?.response_format ?? 'mp3');
      res.writeHead(200, { 'content-type': format === 'mp3' ? 'audio/mpeg' : `audio/${format}` });
      // Sent in pieces, as a synthesizer streams it.
      for (let i = 0; i < SPOKEN.length; i += 64 * 1024) {
        res.write(SPOKEN.subarray(i, i + 64 * 1024));
        await new Promise((r) => setTimeout(r, 2));
      }
      return res.end();
    }
    if (
      path.endsWith('/audio/transcriptions') &&
      got.fields?.stream?.[0] === 'true' &&
      model !== 'whisper-1'
    ) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const send = (event: object) => res.write(`data: ${JSON.stringify(event)}\n\n`);
      const deltas = TRANSCRIPT_DELTAS;
      // `stt-cut`: the connection reset once the first delta has left; `stt-error`: an error
      // event naming the operator's key; `stt-garbled`: an event that is not JSON.
      const first = { type: 'transcript.text.delta', delta: deltas[0] };
      if (model === 'stt-cut')
        return void res.write(`data: ${JSON.stringify(first)}\n\n`, () => res.socket?.destroy());
      send(first);
      if (model === 'stt-error') {
        const error = { message: 'overloaded, key sk-operator-audio-0000', type: 'server_error' };
        return res.end(`event: error\ndata: ${JSON.stringify({ type: 'error', error })}\n\n`);
      }
      if (model === 'stt-garbled') return res.end('data: {"type":"transcript.text.del\n\n');
      if (model === 'stt-slow') {
        slowStt.ended = false;
        slowStt.closed = false;
        const released = await new Promise<boolean>((r) => {
          slowStt.release = () => r(true);
          res.once('close', () => r(false));
        });
        if (!released) {
          slowStt.closed = true;
          return;
        }
      }
      for (const delta of deltas.slice(1)) {
        await new Promise((r) => setTimeout(r, 2));
        send({ type: 'transcript.text.delta', delta });
      }
      // `stt-nousage` ends without its done event.
      if (model !== 'stt-nousage')
        send({ type: 'transcript.text.done', text: deltas.join(''), usage: STREAMED_USAGE });
      slowStt.ended = true;
      return res.end();
    }
    if (path.endsWith('/audio/transcriptions')) {
      const format = got.fields?.response_format?.[0] ?? 'json';
      const text = 'the quick brown fox';
      if (format === 'text') {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
        return res.end(`${text}\n`);
      }
      if (format === 'srt') {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
        return res.end(`1\n00:00:00,000 --> 00:00:02,000\n${text}\n`);
      }
      const usage =
        model === 'whisper-1'
          ? { type: 'duration', seconds: 12 }
          : {
              type: 'tokens',
              input_tokens: 100,
              output_tokens: 20,
              total_tokens: 120,
              input_token_details: { audio_tokens: 100, text_tokens: 0 },
            };
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ text, usage }));
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    received,
    slow,
    slowStt,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const AUDIO_LIMIT = 3_000_000;

/**
 * A multipart upload over its own connection (Content-Length of the whole form) that sends the
 * `fields`, the file part's head and the first 64 KiB of a `size`-byte file, then waits: the rest
 * goes only on `finish()`. A call refused before its upload is read is answered while it waits.
 */
function startUpload(url: string, key: string, fields: [string, string][], size: number) {
  const boundary = `----gatehouse-test-${Math.random().toString(16).slice(2)}`;
  const head = Buffer.from(
    fields
      .map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
      .join('') +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="long.mp3"\r\n` +
      'Content-Type: audio/mpeg\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const file = audioBytes(size, 5);
  const total = head.length + file.length + tail.length;
  const { hostname, port } = new URL(url);
  const req = request({
    host: hostname,
    port,
    method: 'POST',
    path: '/api/v1/audio/transcriptions',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': total,
    },
  });
  let sent = 0;
  const write = (b: Buffer) => {
    sent += b.length;
    req.write(b);
  };
  const closed = new Promise<void>((r) => req.once('close', () => r()));
  const answer = new Promise<IncomingMessage>((resolve, reject) => {
    req.once('error', reject);
    req.once('response', resolve);
  });
  // A client that leaves before any answer makes it fail: not a failure of the test then.
  answer.catch(() => {});
  /** The whole answer. */
  const response = () =>
    answer.then(async (res) => {
      const chunks: Buffer[] = [];
      for await (const c of res) chunks.push(c as Buffer);
      return { status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString() };
    });
  // The connection may close under the unsent rest: that is what some cases expect.
  req.on('error', () => {});
  write(head);
  write(file.subarray(0, 64 * 1024));
  return {
    answer,
    response,
    closed,
    total,
    sent: () => sent,
    finish: () => {
      write(file.subarray(64 * 1024));
      write(tail);
      req.end();
    },
    abort: () => req.destroy(),
  };
}

/** Waits (polling, up to 10 s) until `check` holds; returns whether it did. */
async function until(check: () => boolean): Promise<boolean> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 50));
  return check();
}

describe.each(databases)('audio: speech and transcriptions (%s)', (db) => {
  let gw: TestGateway;
  let mock: Awaited<ReturnType<typeof startAudioUpstream>>;
  let openai: OpenAI;
  let sdk: OpenRouter;
  let call: ReturnType<typeof client>;
  let mgmt: ReturnType<typeof client>;
  let configFile: string;

  beforeAll(async () => {
    mock = await startAudioUpstream();
    const config = {
      providers: [
        {
          slug: 'openai',
          kind: 'openai',
          base_url: `${mock.url}/openai/v1`,
          api_key: 'sk-operator-audio-0000',
        },
        {
          slug: 'backup',
          kind: 'openai-compatible',
          base_url: `${mock.url}/backup/v1`,
          api_key: 'sk-backup-0000',
        },
        {
          // An Azure OpenAI resource: deployments under /azure, its key in `api-key`.
          slug: 'azure',
          kind: 'azure',
          endpoint: `${mock.url}/azure`,
          api_key: 'azure-audio-key-0000',
          api_version: '2025-03-01-preview',
          deployments: { 'test/azure-tts': 'tts-prod', 'test/azure-transcribe': 'stt-prod' },
        },
      ],
      models: [
        {
          id: 'test/azure-tts',
          kind: 'speech',
          endpoints: [{ provider: 'azure', upstream_model: 'tts-1', pricing: { characters: 15 } }],
        },
        {
          id: 'test/azure-transcribe',
          kind: 'transcription',
          endpoints: [
            {
              provider: 'azure',
              upstream_model: 'gpt-4o-transcribe',
              pricing: { prompt: 2.5, completion: 10 },
            },
          ],
        },
        // tts-1: $15 per million characters.
        {
          id: 'test/tts',
          kind: 'speech',
          endpoints: [{ provider: 'openai', upstream_model: 'tts-1', pricing: { characters: 15 } }],
        },
        // gpt-4o-mini-tts: $0.60 / $12 per million tokens.
        {
          id: 'test/tts-tokens',
          kind: 'speech',
          endpoints: [
            {
              provider: 'openai',
              upstream_model: 'gpt-4o-mini-tts',
              pricing: { prompt: 0.6, completion: 12 },
            },
          ],
        },
        {
          id: 'test/tts-slow',
          kind: 'speech',
          endpoints: [{ provider: 'openai', upstream_model: 'tts-slow', pricing: { characters: 15 } }],
        },
        {
          id: 'test/tts-fallback',
          kind: 'speech',
          endpoints: [
            { provider: 'openai', upstream_model: 'tts-down', pricing: { characters: 15 } },
            { provider: 'backup', upstream_model: 'tts-1', pricing: { characters: 30 } },
          ],
        },
        // whisper-1: $0.006 a minute.
        {
          id: 'test/whisper',
          kind: 'transcription',
          endpoints: [{ provider: 'openai', upstream_model: 'whisper-1', pricing: { audio_minute: 0.006 } }],
        },
        // gpt-4o-transcribe: $2.50 / $10 per million tokens.
        {
          id: 'test/transcribe',
          kind: 'transcription',
          endpoints: [
            {
              provider: 'openai',
              upstream_model: 'gpt-4o-transcribe',
              pricing: { prompt: 2.5, completion: 10 },
            },
          ],
        },
        {
          id: 'test/transcribe-slow',
          kind: 'transcription',
          endpoints: [
            { provider: 'openai', upstream_model: 'stt-slow', pricing: { prompt: 2.5, completion: 10 } },
          ],
        },
        {
          id: 'test/transcribe-nousage',
          kind: 'transcription',
          endpoints: [
            { provider: 'openai', upstream_model: 'stt-nousage', pricing: { prompt: 2.5, completion: 10 } },
          ],
        },
        {
          id: 'test/transcribe-fallback',
          kind: 'transcription',
          endpoints: [
            { provider: 'openai', upstream_model: 'stt-down', pricing: { prompt: 2.5, completion: 10 } },
            {
              provider: 'backup',
              upstream_model: 'gpt-4o-transcribe',
              pricing: { prompt: 5, completion: 20 },
            },
          ],
        },
        ...['cut', 'error', 'garbled'].map((how) => ({
          id: `test/transcribe-${how}`,
          kind: 'transcription',
          endpoints: [
            { provider: 'openai', upstream_model: `stt-${how}`, pricing: { prompt: 2.5, completion: 10 } },
          ],
        })),
        {
          id: 'test/transcribe-down',
          kind: 'transcription',
          endpoints: [
            { provider: 'openai', upstream_model: 'stt-down', pricing: { prompt: 2.5, completion: 10 } },
          ],
        },
        {
          id: 'test/gpt',
          endpoints: [{ provider: 'openai', upstream_model: 'gpt-x', pricing: { prompt: 1, completion: 2 } }],
        },
      ],
    };
    configFile = join(mkdtempSync(join(tmpdir(), 'gatehouse-audio-')), 'gatehouse.json');
    writeFileSync(configFile, JSON.stringify(config));
    gw = await startTestGateway(db, {
      env: {
        GATEHOUSE_CONFIG: configFile,
        GATEHOUSE_AUDIO_MAX_BYTES: String(AUDIO_LIMIT),
        // Under the base64 form of the largest audio: the JSON limit is then the audio's.
        GATEHOUSE_INFERENCE_BODY_LIMIT: '1048576',
      },
    });
    openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    sdk = new OpenRouter({
      serverURL: `${gw.url}/api/v1`,
      apiKey: gw.apiKey,
      retryConfig: { strategy: 'none' },
    });
    call = client(gw.url, gw.apiKey);
    mgmt = client(gw.url, gw.managementKey);
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => {
    mock.received.length = 0;
  });

  const generation = async (id: string | null) => {
    expect(id).toMatch(/^gen-/);
    const res = await call('GET', `/generation?id=${id}`);
    expect(res.status).toBe(200);
    return res.body.data;
  };

  describe('POST /audio/speech', () => {
    it('the openai client gets the upstream audio byte for byte; the upstream got the model rewritten, no Gatehouse fields', async () => {
      const input = 'Hello from the gateway';
      const res = await openai.audio.speech
        .create({
          model: 'test/tts',
          voice: 'alloy',
          input,
          response_format: 'mp3',
          speed: 1.25,
          // Gatehouse's own fields: read here, never sent on.
          ...({ provider: { allow_fallbacks: true }, user: 'end-user-1', session_id: 's-1' } as object),
        })
        .asResponse();
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('audio/mpeg');
      expect(Buffer.from(await res.arrayBuffer()).equals(SPOKEN)).toBe(true);
      expect(mock.received).toHaveLength(1);
      const sent = mock.received[0] as Received;
      expect(sent.path).toBe('/openai/v1/audio/speech');
      expect(sent.headers.authorization).toBe('Bearer sk-operator-audio-0000');
      expect(sent.json).toEqual({
        model: 'tts-1',
        voice: 'alloy',
        input,
        response_format: 'mp3',
        speed: 1.25,
      });
      const gen = await generation(res.headers.get('x-gatehouse-generation-id'));
      expect(gen).toMatchObject({
        model: 'test/tts',
        provider_name: 'openai',
        upstream_model: 'tts-1',
        origin: 'speech',
        api_type: 'tts',
        status: 'success',
        streamed: true,
        usage_estimated: false,
      });
      // Priced by the input's characters: exact.
      expect(gen.total_cost).toBeCloseTo((input.length * 15) / 1e6, 12);
    });

    it('@openrouter/sdk tts.createSpeech streams the audio (its default pcm format)', async () => {
      const stream = await sdk.tts.createSpeech({
        speechRequest: { model: 'test/tts', input: 'Speak, SDK', voice: 'nova' },
      });
      const bytes = Buffer.from(await new Response(stream).arrayBuffer());
      expect(bytes.equals(SPOKEN)).toBe(true);
      expect(mock.received[0]?.json).toMatchObject({ model: 'tts-1', response_format: 'pcm', voice: 'nova' });
    });

    it('relays the audio as it arrives (the first bytes before the upstream has finished)', async () => {
      const res = await fetch(`${gw.url}/api/v1/audio/speech`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'test/tts-slow', input: 'slowly', voice: 'alloy' }),
      });
      expect(res.status).toBe(200);
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      const first = await reader.read();
      expect(first.value?.length).toBeGreaterThan(0);
      expect(mock.slow.ended).toBe(false);
      mock.slow.release();
      const pieces = [Buffer.from(first.value as Uint8Array)];
      for (let r = await reader.read(); !r.done; r = await reader.read()) pieces.push(Buffer.from(r.value));
      expect(Buffer.concat(pieces).equals(SPOKEN)).toBe(true);
      const gen = await generation(res.headers.get('x-gatehouse-generation-id'));
      expect(gen).toMatchObject({ status: 'success', streamed: true });
    });

    it('a caller that leaves mid-audio: the upstream call is closed, the generation recorded as cancelled', async () => {
      const abort = new AbortController();
      const res = await fetch(`${gw.url}/api/v1/audio/speech`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'test/tts-slow', input: 'never finished', voice: 'alloy' }),
        signal: abort.signal,
      });
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      await reader.read();
      abort.abort();
      const id = res.headers.get('x-gatehouse-generation-id');
      let gen: any = null;
      for (let i = 0; i < 50 && gen?.status !== 'cancelled'; i++) {
        await new Promise((r) => setTimeout(r, 100));
        const got = await call('GET', `/generation?id=${id}`);
        gen = got.status === 200 ? got.body.data : null;
      }
      expect(gen).toMatchObject({ status: 'cancelled', model: 'test/tts-slow' });
      // Billed: the upstream had started on the input.
      expect(gen.total_cost).toBeCloseTo(('never finished'.length * 15) / 1e6, 12);
      expect(mock.slow).toMatchObject({ ended: false, closed: true });
    });

    it('token-priced speech: the usage of an event stream (stream_format sse) is billed, plain audio estimated', async () => {
      const sse = await call('POST', '/audio/speech', {
        model: 'test/tts-tokens',
        input: 'Say it as events',
        voice: 'alloy',
        stream_format: 'sse',
      });
      expect(sse.status).toBe(200);
      expect(sse.headers.get('content-type')).toBe('text/event-stream');
      expect(sse.text).toContain('speech.audio.done');
      expect(mock.received[0]?.json).toMatchObject({ model: 'gpt-4o-mini-tts', stream_format: 'sse' });
      const reported = await generation(sse.headers.get('x-gatehouse-generation-id'));
      expect(reported).toMatchObject({ tokens_prompt: 7, tokens_completion: 300, usage_estimated: false });
      expect(reported.total_cost).toBeCloseTo((7 * 0.6 + 300 * 12) / 1e6, 12);
      const plain = await call('POST', '/audio/speech', {
        model: 'test/tts-tokens',
        input: 'Say it plainly',
        voice: 'alloy',
      });
      expect(plain.status).toBe(200);
      const estimated = await generation(plain.headers.get('x-gatehouse-generation-id'));
      expect(estimated).toMatchObject({ tokens_prompt: 4, tokens_completion: 0, usage_estimated: true });
    });

    it('falls back to the next provider serving the model when one fails', async () => {
      const res = await call('POST', '/audio/speech', {
        model: 'test/tts-fallback',
        input: 'again',
        voice: 'alloy',
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-gatehouse-provider')).toBe('backup');
      expect(mock.received.map((r) => r.path)).toEqual([
        '/openai/v1/audio/speech',
        '/backup/v1/audio/speech',
      ]);
      const gen = await generation(res.headers.get('x-gatehouse-generation-id'));
      expect(gen).toMatchObject({ provider_name: 'backup', attempts: 2 });
      expect(gen.total_cost).toBeCloseTo((5 * 30) / 1e6, 12);
    });

    it('refuses bad input with a 400 in the inference error format, before any upstream call', async () => {
      const cases: [object, RegExp][] = [
        [{ model: 'test/tts', voice: 'alloy' }, /input/],
        [{ input: 'hi', voice: 'alloy' }, /model/],
        [{ model: 'test/tts', input: 'hi', response_format: 'ogg' }, /response_format/],
        [{ model: 'test/gpt', input: 'hi' }, /test\/gpt is a chat model/],
        [{ model: 'test/whisper', input: 'hi' }, /is a transcription model/],
      ];
      for (const [body, message] of cases) {
        const res = await call('POST', '/audio/speech', body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.error.message).toMatch(message);
      }
      const notObject = await call('POST', '/audio/speech', [1, 2]);
      expect(notObject.status).toBe(400);
      expect(mock.received).toHaveLength(0);
    });

    it('a body over GATEHOUSE_INFERENCE_BODY_LIMIT is a 413 naming that limit', async () => {
      const res = await call('POST', '/audio/speech', { model: 'test/tts', input: 'x'.repeat(1_100_000) });
      expect(res.status).toBe(413);
      expect(res.body.error.message).toMatch(/1048576 bytes.*GATEHOUSE_INFERENCE_BODY_LIMIT/);
    });
  });

  describe('POST /audio/transcriptions', () => {
    const clip = audioBytes(50_000, 3);

    it('the openai client uploads a file; the upstream gets the same bytes in its own form; billed per minute', async () => {
      const res = await openai.audio.transcriptions
        .create({
          model: 'test/whisper',
          file: await toFile(clip, 'meeting.mp3', { type: 'audio/mpeg' }),
          language: 'en',
          prompt: 'a fox',
          timestamp_granularities: ['word', 'segment'],
          response_format: 'verbose_json',
        })
        .withResponse();
      expect(res.data.text).toBe('the quick brown fox');
      const sent = mock.received[0] as Received;
      expect(sent.path).toBe('/openai/v1/audio/transcriptions');
      expect(sent.fields).toMatchObject({
        model: ['whisper-1'],
        language: ['en'],
        prompt: ['a fox'],
        response_format: ['verbose_json'],
        'timestamp_granularities[]': ['word', 'segment'],
      });
      expect(sent.file?.bytes.equals(clip)).toBe(true);
      expect(sent.file?.name).toBe('audio.mp3');
      expect(sent.file?.type).toBe('audio/mpeg');
      const gen = await generation(res.response.headers.get('x-gatehouse-generation-id'));
      expect(gen).toMatchObject({
        model: 'test/whisper',
        origin: 'transcription',
        api_type: 'stt',
        usage_estimated: false,
      });
      expect(gen.total_cost).toBeCloseTo((12 / 60) * 0.006, 12);
      expect((res.data as unknown as { usage: { cost: number } }).usage.cost).toBeCloseTo(
        (12 / 60) * 0.006,
        12,
      );
    });

    it('a file over 1 MiB (the default file cap of the multipart plugin) arrives whole', async () => {
      const large = audioBytes(2_500_000, 9);
      const res = await openai.audio.transcriptions.create({
        model: 'test/whisper',
        file: await toFile(large, 'long.mp3'),
      });
      expect(res.text).toBe('the quick brown fox');
      expect(mock.received[0]?.file?.bytes.equals(large)).toBe(true);
    });

    it('openai 7: speech and a transcription as with openai 6', async () => {
      const openai7 = new OpenAI7({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
      const speech = await openai7.audio.speech.create({ model: 'test/tts', voice: 'alloy', input: 'seven' });
      expect(Buffer.from(await speech.arrayBuffer()).equals(SPOKEN)).toBe(true);
      const text = await openai7.audio.transcriptions.create({
        model: 'test/whisper',
        file: await toFile7(clip, 'seven.mp3'),
      });
      expect(text.text).toBe('the quick brown fox');
      expect(mock.received[1]?.file?.bytes.equals(clip)).toBe(true);
    });

    it('text and srt answers are relayed as the upstream sent them; usage then estimated', async () => {
      const text = await openai.audio.transcriptions.create({
        model: 'test/whisper',
        file: await toFile(clip, 'clip.wav'),
        response_format: 'text',
      });
      expect(text).toBe('the quick brown fox\n');
      const res = await openai.audio.transcriptions
        .create({ model: 'test/whisper', file: await toFile(clip, 'clip.wav'), response_format: 'srt' })
        .withResponse();
      expect(res.data).toMatch(/^1\n00:00:00,000 --> 00:00:02,000\nthe quick brown fox/);
      const gen = await generation(res.response.headers.get('x-gatehouse-generation-id'));
      expect(gen.usage_estimated).toBe(true);
      expect(gen.total_cost).toBeGreaterThan(0);
    });

    it('@openrouter/sdk stt.createTranscription: base64 input_audio becomes the upstream form; tokens billed', async () => {
      const res = await sdk.stt.createTranscription({
        sttRequest: {
          model: 'test/transcribe',
          inputAudio: { data: clip.toString('base64'), format: 'wav' },
          language: 'en',
          user: 'end-user-2',
          sessionId: 'session-2',
        },
      });
      expect(res.text).toBe('the quick brown fox');
      expect(res.usage).toMatchObject({ inputTokens: 100, outputTokens: 20, totalTokens: 120 });
      const cost = (100 * 2.5 + 20 * 10) / 1e6;
      expect(res.usage?.cost).toBeCloseTo(cost, 12);
      const sent = mock.received[0] as Received;
      expect(sent.file?.bytes.equals(clip)).toBe(true);
      expect(sent.file?.name).toBe('audio.wav');
      expect(sent.fields).toEqual({ model: ['gpt-4o-transcribe'], language: ['en'] });
      // The same call as plain JSON: its generation keeps the reported tokens and their cost.
      const plain = await call('POST', '/audio/transcriptions', {
        model: 'test/transcribe',
        input_audio: { data: `data:audio/wav;base64,${clip.toString('base64')}`, format: 'wav' },
      });
      expect(plain.status).toBe(200);
      expect(mock.received[1]?.file?.bytes.equals(clip)).toBe(true);
      const gen = await generation(plain.headers.get('x-gatehouse-generation-id'));
      expect(gen).toMatchObject({ tokens_prompt: 100, tokens_completion: 20, usage_estimated: false });
      expect(gen.total_cost).toBeCloseTo(cost, 12);
    });

    it('stream: true — the openai client iterates every delta and the done event; the streamed usage is billed', async () => {
      const { data: stream, response } = await openai.audio.transcriptions
        .create({ model: 'test/transcribe', file: await toFile(clip, 'live.mp3'), stream: true })
        .withResponse();
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const events: OpenAI.Audio.TranscriptionStreamEvent[] = [];
      for await (const event of stream) events.push(event);
      expect(events.map((e) => e.type)).toEqual([
        ...TRANSCRIPT_DELTAS.map(() => 'transcript.text.delta'),
        'transcript.text.done',
      ]);
      expect(events.slice(0, -1).map((e) => (e as { delta: string }).delta)).toEqual(TRANSCRIPT_DELTAS);
      expect(events.at(-1)).toMatchObject({ text: TRANSCRIPT_DELTAS.join(''), usage: STREAMED_USAGE });
      const sent = mock.received[0] as Received;
      expect(sent.fields).toMatchObject({ model: ['gpt-4o-transcribe'], stream: ['true'] });
      expect(sent.file?.bytes.equals(clip)).toBe(true);
      const gen = await generation(response.headers.get('x-gatehouse-generation-id'));
      expect(gen).toMatchObject({
        model: 'test/transcribe',
        origin: 'transcription',
        status: 'success',
        streamed: true,
        tokens_prompt: 90,
        tokens_completion: 6,
        usage_estimated: false,
      });
      expect(gen.total_cost).toBeCloseTo((90 * 2.5 + 6 * 10) / 1e6, 12);
    });

    it('stream: true in a JSON body streams too; a stream without a done event is billed from estimates', async () => {
      const res = await call('POST', '/audio/transcriptions', {
        model: 'test/transcribe-nousage',
        input_audio: { data: clip.toString('base64'), format: 'wav' },
        stream: true,
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(res.text.match(/transcript\.text\.delta/g)).toHaveLength(TRANSCRIPT_DELTAS.length);
      expect(mock.received[0]?.fields).toMatchObject({ model: ['stt-nousage'], stream: ['true'] });
      const gen = await generation(res.headers.get('x-gatehouse-generation-id'));
      const said = TRANSCRIPT_DELTAS.join('');
      expect(gen).toMatchObject({
        status: 'success',
        streamed: true,
        usage_estimated: true,
        tokens_completion: Math.ceil(said.length / 4),
      });
      expect(gen.total_cost).toBeCloseTo((Math.ceil(said.length / 4) * 10) / 1e6, 12);
    });

    it.each([
      ['the upstream connection reset', 'cut', /upstream connection failed/],
      ['an upstream error event', 'error', /overloaded/],
      ['an event that is not JSON', 'garbled', /invalid stream event/],
    ])('stream: true — %s after the first delta: the openai client gets the delta, then the error; the generation is recorded failed', async (_what, how, message) => {
      const { data: stream, response } = await openai.audio.transcriptions
        .create({ model: `test/transcribe-${how}`, file: await toFile(clip, 'live.mp3'), stream: true })
        .withResponse();
      const deltas: string[] = [];
      let caught: unknown = null;
      try {
        for await (const event of stream)
          if (event.type === 'transcript.text.delta') deltas.push(event.delta);
      } catch (err) {
        caught = err;
      }
      expect(deltas).toEqual([TRANSCRIPT_DELTAS[0]]);
      expect(caught).toBeInstanceOf(OpenAI.APIError);
      const error = caught as InstanceType<typeof OpenAI.APIError>;
      expect(error.message).toMatch(message);
      expect(error.error).toMatchObject({ type: 'server_error', code: expect.any(Number) });
      // Neither the operator's key nor the upstream's body.
      expect(JSON.stringify(error.error)).not.toContain('sk-operator');
      const gen = await generation(response.headers.get('x-gatehouse-generation-id'));
      expect(gen).toMatchObject({ status: 'error', streamed: true, usage_estimated: true });
      expect(gen.error_message).toMatch(message);
    });

    it('Azure OpenAI: speech and transcriptions (streamed too) go to the deployment with api-key and the api-version', async () => {
      const speech = await openai.audio.speech.create({
        model: 'test/azure-tts',
        input: 'hi',
        voice: 'alloy',
      });
      expect(Buffer.from(await speech.arrayBuffer()).equals(SPOKEN)).toBe(true);
      const text = await openai.audio.transcriptions.create({
        model: 'test/azure-transcribe',
        file: await toFile(clip, 'a.wav'),
      });
      expect(text.text).toBe('the quick brown fox');
      const stream = await openai.audio.transcriptions.create({
        model: 'test/azure-transcribe',
        file: await toFile(clip, 'a.wav'),
        stream: true,
      });
      const types: string[] = [];
      for await (const event of stream) types.push(event.type);
      expect(types.at(-1)).toBe('transcript.text.done');
      const version = 'api-version=2025-03-01-preview';
      expect(mock.received.map((r) => r.path)).toEqual([
        `/azure/openai/deployments/tts-prod/audio/speech?${version}`,
        `/azure/openai/deployments/stt-prod/audio/transcriptions?${version}`,
        `/azure/openai/deployments/stt-prod/audio/transcriptions?${version}`,
      ]);
      for (const r of mock.received) {
        expect(r.headers['api-key']).toBe('azure-audio-key-0000');
        expect(r.headers.authorization).toBeUndefined();
        expect(JSON.stringify(r.headers)).not.toContain(gw.apiKey);
      }
      // The body's model is the deployment's name, as on Azure's other routes.
      expect(mock.received[0]?.json?.model).toBe('tts-prod');
      expect(mock.received[1]?.fields?.model).toEqual(['stt-prod']);
      expect(mock.received[1]?.file?.bytes.equals(clip)).toBe(true);
    });

    it('content logging keeps a streamed transcription: its fields (not the audio) and the text of its events', async () => {
      const workspace = (await call('GET', '/key')).body.data.workspace_id;
      await mgmt('PATCH', `/workspaces/${workspace}`, { content_logging: true });
      try {
        const { data: stream, response } = await openai.audio.transcriptions
          .create({
            model: 'test/transcribe',
            file: await toFile(clip, 'live.mp3'),
            stream: true,
            prompt: 'foxes',
          })
          .withResponse();
        for await (const _ of stream);
        const id = response.headers.get('x-gatehouse-generation-id');
        let kept: { status: number; body: any } = { status: 0, body: null };
        // Written after the answer: polled.
        for (let i = 0; i < 100 && kept.status !== 200; i++) {
          await new Promise((r) => setTimeout(r, 20));
          await gw.services.contentLog.flush();
          kept = await call('GET', `/generation/content?id=${id}`);
        }
        expect(kept.status).toBe(200);
        expect(kept.body.data.input.messages[0]).toMatchObject({ prompt: 'foxes', file: { kept: false } });
        expect(kept.body.data.output.completion).toBe(TRANSCRIPT_DELTAS.join(''));
      } finally {
        await mgmt('PATCH', `/workspaces/${workspace}`, { content_logging: false });
      }
    });

    it('stream: true on a model that does not stream (whisper-1) is answered as usual', async () => {
      const form = new FormData();
      form.append('model', 'test/whisper');
      form.append('stream', 'true');
      form.append('file', new Blob([clip], { type: 'audio/mpeg' }), 'a.mp3');
      const res = await fetch(`${gw.url}/api/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.apiKey}` },
        body: form,
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ text: 'the quick brown fox', usage: { seconds: 12 } });
      expect(mock.received[0]?.fields?.stream).toEqual(['true']);
      const gen = await generation(res.headers.get('x-gatehouse-generation-id'));
      expect(gen).toMatchObject({ status: 'success', streamed: false, usage_estimated: false });
    });

    it('stream: true falls back before the first byte; an upstream error before the stream is the usual error JSON', async () => {
      const stream = await openai.audio.transcriptions.create({
        model: 'test/transcribe-fallback',
        file: await toFile(clip, 'a.wav'),
        stream: true,
      });
      const types: string[] = [];
      for await (const event of stream) types.push(event.type);
      expect(types.at(-1)).toBe('transcript.text.done');
      expect(mock.received.map((r) => r.path)).toEqual([
        '/openai/v1/audio/transcriptions',
        '/backup/v1/audio/transcriptions',
      ]);
      const failed = await openai.audio.transcriptions
        .create({ model: 'test/transcribe-down', file: await toFile(clip, 'a.wav'), stream: true })
        .catch((e) => e);
      expect(failed).toBeInstanceOf(OpenAI.APIError);
      expect(failed.status).toBeGreaterThanOrEqual(500);
      expect(failed.error).toMatchObject({ message: expect.stringMatching(/overloaded/) });
    });

    it('stream: true — the caller gets deltas before the upstream has finished; leaving mid-stream closes the upstream call and records a cancelled generation', async () => {
      const form = () => {
        const f = new FormData();
        f.append('model', 'test/transcribe-slow');
        f.append('stream', 'true');
        f.append('file', new Blob([clip], { type: 'audio/mpeg' }), 'slow.mp3');
        return f;
      };
      const abort = new AbortController();
      const res = await fetch(`${gw.url}/api/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.apiKey}` },
        body: form(),
        signal: abort.signal,
      });
      expect(res.status).toBe(200);
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      const first = Buffer.from((await reader.read()).value as Uint8Array).toString('utf8');
      expect(first).toContain('transcript.text.delta');
      expect(mock.slowStt.ended).toBe(false);
      abort.abort();
      const id = res.headers.get('x-gatehouse-generation-id');
      let gen: any = null;
      for (let i = 0; i < 50 && gen?.status !== 'cancelled'; i++) {
        await new Promise((r) => setTimeout(r, 100));
        const got = await call('GET', `/generation?id=${id}`);
        gen = got.status === 200 ? got.body.data : null;
      }
      expect(gen).toMatchObject({
        status: 'cancelled',
        model: 'test/transcribe-slow',
        usage_estimated: true,
      });
      expect(mock.slowStt).toMatchObject({ ended: false, closed: true });
    });

    it('refuses missing audio, a wrong format and oversize audio', async () => {
      const missing = await call('POST', '/audio/transcriptions', { model: 'test/whisper' });
      expect(missing.status).toBe(400);
      expect(missing.body.error.message).toMatch(/file/);
      const badStream = await call('POST', '/audio/transcriptions', {
        model: 'test/transcribe',
        input_audio: { data: clip.toString('base64'), format: 'wav' },
        stream: 'yes',
      });
      expect(badStream.status).toBe(400);
      expect(badStream.body.error.message).toMatch(/^stream: must be true or false/);
      const format = await openai.audio.transcriptions
        .create({
          model: 'test/whisper',
          file: await toFile(clip, 'a.wav'),
          response_format: 'xml' as 'json',
        })
        .catch((e) => e);
      expect(format.status).toBe(400);
      expect(format.message).toMatch(/response_format/);
      const chat = await openai.audio.transcriptions
        .create({ model: 'test/gpt', file: await toFile(clip, 'a.wav') })
        .catch((e) => e);
      expect(chat.status).toBe(400);
      const form = new FormData();
      form.append('model', 'test/whisper');
      const noFile = await fetch(`${gw.url}/api/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.apiKey}` },
        body: form,
      });
      expect(noFile.status).toBe(400);
      const big = await openai.audio.transcriptions
        .create({ model: 'test/whisper', file: await toFile(audioBytes(AUDIO_LIMIT + 1), 'big.wav') })
        .catch((e) => e);
      expect(big.status).toBe(413);
      expect(big.message).toMatch(/file is larger than 3000000 bytes.*GATEHOUSE_AUDIO_MAX_BYTES/);
      const bigJson = await call('POST', '/audio/transcriptions', {
        model: 'test/whisper',
        input_audio: { data: audioBytes(AUDIO_LIMIT + 3000).toString('base64'), format: 'wav' },
      });
      expect(bigJson.status).toBe(413);
      expect(bigJson.body.error.message).toMatch(
        /^input_audio is larger than 3000000 bytes.*GATEHOUSE_AUDIO_MAX_BYTES/,
      );
      // A JSON body past the base64 form of the largest audio: Fastify's 413, told with its limit.
      const huge = await call('POST', '/audio/transcriptions', {
        model: 'test/whisper',
        input_audio: { data: 'A'.repeat(4_200_000), format: 'wav' },
      });
      expect(huge.status).toBe(413);
      expect(huge.body.error.message).toMatch(
        /^The JSON body is larger than \d+ bytes.*GATEHOUSE_AUDIO_MAX_BYTES=3000000/,
      );
      expect(mock.received).toHaveLength(0);
    });
  });

  describe('guardrails', () => {
    async function keyWithGuardrail(guardrail: object) {
      const key = await mgmt('POST', '/keys', { name: `k-${Math.random()}` });
      const g = await mgmt('POST', '/guardrails', { name: 'audio rules', ...guardrail });
      expect(g.status).toBe(201);
      await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
        key_hashes: [key.body.data.hash],
      });
      return client(gw.url, key.body.key);
    }

    it('a guardrail that does not allow the model is a 403, on both endpoints', async () => {
      const limited = await keyWithGuardrail({ allowed_models: ['test/gpt'] });
      const speech = await limited('POST', '/audio/speech', {
        model: 'test/tts',
        input: 'hi',
        voice: 'alloy',
      });
      expect(speech.status).toBe(403);
      const stt = await limited('POST', '/audio/transcriptions', {
        model: 'test/whisper',
        input_audio: { data: Buffer.from('RIFF').toString('base64'), format: 'wav' },
      });
      expect(stt.status).toBe(403);
      expect(mock.received).toHaveLength(0);
    });

    it('a content filter blocks the speech input (403, nothing sent) and redacts it where it says so', async () => {
      const filtered = await keyWithGuardrail({
        content_filters: [
          { pattern: 'launch codes', action: 'block', label: 'secrets' },
          { pattern: '\\d{4}-\\d{4}', action: 'redact', label: 'card' },
        ],
      });
      const blocked = await filtered('POST', '/audio/speech', {
        model: 'test/tts',
        input: 'read the launch codes aloud',
        voice: 'alloy',
      });
      expect(blocked.status).toBe(403);
      expect(blocked.body.error.message).toMatch(/secrets/);
      expect(mock.received).toHaveLength(0);
      const redacted = await filtered('POST', '/audio/speech', {
        model: 'test/tts',
        input: 'my card is 1234-5678',
        voice: 'alloy',
      });
      expect(redacted.status).toBe(200);
      const input = String(mock.received[0]?.json?.input);
      expect(input).not.toContain('1234-5678');
      expect(input).toMatch(/^my card is /);
    });
  });
  /**
   * A second gateway: credits enforced (the bootstrap organization is granted some), two requests
   * per key and window, uploads up to the default 25 MiB, and its temp directory watched.
   */
  describe('transcriptions refused before the upload is read', () => {
    const BIG = 5 * 1024 * 1024;
    let limited: TestGateway;
    let uploads: string;
    let priorTmp: string | undefined;
    const uploadDirs = () => readdirSync(uploads).filter((n) => n.startsWith('gatehouse-audio-'));

    beforeAll(async () => {
      limited = await startTestGateway(db, {
        env: {
          GATEHOUSE_CONFIG: configFile,
          GATEHOUSE_CREDITS: 'enforce',
          GATEHOUSE_RATE_LIMIT_REQUESTS: '2',
        },
      });
      const grant = await adminClient(limited.url)('POST', '/admin/credits', {
        organization_id: limited.organizationId,
        amount_usd: 100,
      });
      expect(grant.status).toBe(201);
      // Uploads are saved under the temp directory: this one only sees this suite's.
      uploads = mkdtempSync(join(tmpdir(), 'gatehouse-uploads-'));
      priorTmp = process.env.TMPDIR;
      process.env.TMPDIR = uploads;
    });
    afterAll(async () => {
      if (priorTmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = priorTmp;
      await limited?.stop();
    });

    /** A new API key of the bootstrap organization (its own rate-limit window). */
    const newKey = async (): Promise<string> => {
      const key = await client(limited.url, limited.managementKey)('POST', '/keys', {
        name: `k-${Math.random()}`,
      });
      expect(key.status).toBe(201);
      return key.body.key;
    };
    /** The refusal of a 5 MiB upload naming `model` first: answered before the file is sent, then the connection closed. */
    const refusedEarly = async (key: string, model: string, url = limited.url) => {
      const up = startUpload(url, key, [['model', model]], url === limited.url ? BIG : 2_000_000);
      const res = await up.response();
      await up.closed;
      expect(up.sent()).toBeLessThan(up.total);
      expect(res.headers.connection).toBe('close');
      expect(uploadDirs()).toEqual([]);
      return { ...res, body: JSON.parse(res.text) };
    };
    /** The same call with the file before the model: refused as before, once the upload is read. */
    const refusedLate = async (key: string, model: string) => {
      const form = new FormData();
      form.append('file', new Blob([audioBytes(BIG)], { type: 'audio/mpeg' }), 'long.mp3');
      form.append('model', model);
      const res = await fetch(`${limited.url}/api/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}` },
        body: form,
      });
      return { status: res.status, headers: res.headers, body: (await res.json()) as any };
    };
    const clip = audioBytes(40_000, 4);

    it('a key over its rate limit: two calls admitted (one point each), the third a 429 with Retry-After before its upload', async () => {
      const key = await newKey();
      const openai = new OpenAI({ baseURL: `${limited.url}/api/v1`, apiKey: key, maxRetries: 0 });
      // The openai client sends `model` before the file when the params name it first.
      for (const n of [1, 2]) {
        const ok = await openai.audio.transcriptions.create({
          model: 'test/whisper',
          file: await toFile(clip, `${n}.mp3`),
        });
        expect(ok.text).toBe('the quick brown fox');
      }
      const early = await refusedEarly(key, 'test/whisper');
      expect(early.status).toBe(429);
      expect(Number(early.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(early.body.error).toMatchObject({
        code: 429,
        message: expect.stringMatching(/^Rate limit exceeded for this key; retry in \d+ s$/),
        metadata: { retry_after_ms: expect.any(Number) },
      });
      // The openai client gets the same answer for a large upload (not a broken connection).
      const client429 = await openai.audio.transcriptions
        .create({ model: 'test/whisper', file: await toFile(audioBytes(BIG), 'long.mp3') })
        .catch((e) => e);
      expect(client429).toBeInstanceOf(OpenAI.APIError);
      expect(client429.status).toBe(429);
      expect(client429.message).toMatch(/Rate limit exceeded for this key/);
      // The model after the file: refused as it always was, after the upload.
      const late = await refusedLate(key, 'test/whisper');
      expect(late.status).toBe(429);
      expect(late.headers.get('retry-after')).toBeTruthy();
      expect(late.body.error.message).toMatch(/^Rate limit exceeded for this key; retry in \d+ s$/);
      expect(uploadDirs()).toEqual([]);
    });

    it('a key allowed 2 requests a minute (its usage limits): two uploads admitted, counted once each; the third refused before its upload', async () => {
      // The first gateway: no request rate limit of its own in the way.
      const created = await mgmt('POST', '/keys', { name: `rpm-${Math.random()}`, rpm_limit: 2 });
      expect(created.status).toBe(201);
      const key = created.body.key as string;
      const up = startUpload(gw.url, key, [['model', 'test/whisper']], 200_000);
      up.finish();
      expect((await up.response()).status).toBe(200);
      const openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: key, maxRetries: 0 });
      const second = await openai.audio.transcriptions.create({
        model: 'test/whisper',
        file: await toFile(clip, 'a.mp3'),
      });
      expect(second.text).toBe('the quick brown fox');
      const early = await refusedEarly(key, 'test/whisper', gw.url);
      expect(early.status).toBe(429);
      expect(early.body.error.message).toMatch(/rpm|requests per minute|limit/i);
      expect(early.headers['retry-after']).toBeTruthy();
    });

    it('an organization without credits: a 402 before the upload, as after it', async () => {
      const admin = adminClient(limited.url);
      const org = await admin('POST', '/admin/organizations', { name: `broke-${Math.random()}` });
      expect(org.status).toBe(201);
      // Two requests a key in this gateway: a key for each of the calls below.
      const orgKey = async () => {
        const made = await admin('POST', '/admin/keys', { name: 'broke', organization_id: org.body.data.id });
        expect(made.status).toBe(201);
        return made.body.key as string;
      };
      const early = await refusedEarly(await orgKey(), 'test/whisper');
      expect(early.status).toBe(402);
      expect(early.body.error.message).toMatch(/^Insufficient credits: the organization's balance is \$0/);
      const late = await refusedLate(await orgKey(), 'test/whisper');
      expect(late.status).toBe(402);
      expect(late.body).toEqual(early.body);
      const openai = new OpenAI({ baseURL: `${limited.url}/api/v1`, apiKey: await orgKey(), maxRetries: 0 });
      const client402 = await openai.audio.transcriptions
        .create({ model: 'test/whisper', file: await toFile(audioBytes(BIG), 'long.mp3') })
        .catch((e) => e);
      expect(client402.status).toBe(402);
      expect(mock.received).toHaveLength(0);
    });

    it('a model the guardrail forbids (403) and an unknown model (404): refused before the upload, with the body they get after it', async () => {
      const key = await newKey();
      const mgmtKey = client(limited.url, limited.managementKey);
      const g = await mgmtKey('POST', '/guardrails', { name: 'only gpt', allowed_models: ['test/gpt'] });
      expect(g.status).toBe(201);
      const restricted = await mgmtKey('POST', '/keys', { name: `r-${Math.random()}` });
      await mgmtKey('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
        key_hashes: [restricted.body.data.hash],
      });
      const forbidden = await refusedEarly(restricted.body.key, 'test/whisper');
      expect(forbidden.status).toBe(403);
      expect(forbidden.body).toEqual((await refusedLate(restricted.body.key, 'test/whisper')).body);
      const unknown = await refusedEarly(key, 'test/no-such-model');
      expect(unknown.status).toBe(404);
      expect(unknown.body).toEqual((await refusedLate(key, 'test/no-such-model')).body);
      expect(mock.received).toHaveLength(0);
    });

    it('temp files are removed after an upstream error, a client leaving mid-upload and mid-answer', async () => {
      const key = await newKey();
      const failed = startUpload(limited.url, key, [['model', 'test/transcribe-down']], 300_000);
      failed.finish();
      expect((await failed.response()).status).toBeGreaterThanOrEqual(500);
      expect(await until(() => uploadDirs().length === 0)).toBe(true);

      // Mid-upload: once the server is saving the file, the client goes away.
      const left = startUpload(limited.url, await newKey(), [['model', 'test/whisper']], BIG);
      expect(await until(() => uploadDirs().length === 1)).toBe(true);
      left.abort();
      expect(await until(() => uploadDirs().length === 0)).toBe(true);

      // Mid-answer: a streamed transcription the client leaves after its first delta.
      const streamed = startUpload(
        limited.url,
        await newKey(),
        [
          ['model', 'test/transcribe-slow'],
          ['stream', 'true'],
        ],
        100_000,
      );
      streamed.finish();
      const res = await streamed.answer;
      expect(res.statusCode).toBe(200);
      const delta = await new Promise<Buffer>((r) => res.once('data', r));
      expect(delta.toString()).toContain('transcript.text.delta');
      expect(uploadDirs()).toHaveLength(1);
      streamed.abort();
      expect(await until(() => uploadDirs().length === 0)).toBe(true);
      expect(await until(() => mock.slowStt.closed)).toBe(true);
    });
  });
});
