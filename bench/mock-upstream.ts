/**
 * A minimal, instant OpenAI-compatible and Anthropic upstream for the benchmark (node:http,
 * 127.0.0.1 only).
 *
 * `POST …/chat/completions` answers a fixed small completion with usage; with `"stream": true` it
 * answers the streamed variant: a role chunk, two content chunks, a finish chunk, a usage chunk and
 * `data: [DONE]`, written back to back. `POST …/v1/messages` answers the same as an Anthropic
 * message; streamed, Anthropic's event sequence (`event:` lines included): message_start (input
 * tokens), content_block_start, two text deltas, content_block_stop, message_delta (stop reason,
 * output tokens), message_stop. Every body is built once per model name, nothing is recorded
 * and nothing is logged, so the mock costs the same whether the load generator calls it directly
 * or through a gateway. (test/support/mock-upstream.ts records every request; it is not used here.)
 *
 * Run as its own process so it shares no event loop with the load generator or the gateway:
 *   node --import tsx bench/mock-upstream.ts --port 18001
 * It prints `{"ready":true,"port":N}` on stdout once listening.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';

const CREATED = 1_700_000_000;

const completion = (model: string) =>
  Buffer.from(
    JSON.stringify({
      id: 'chatcmpl-bench',
      object: 'chat.completion',
      created: CREATED,
      model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Hello from the benchmark mock.' },
          finish_reason: 'stop',
          logprobs: null,
        },
      ],
      usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 },
    }),
  );

const chunk = (model: string, extra: Record<string, unknown>) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: CREATED, model, ...extra })}\n\n`;

export const streamFrames = (model: string) =>
  [
    chunk(model, { choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] }),
    chunk(model, { choices: [{ index: 0, delta: { content: 'Hello from ' }, finish_reason: null }] }),
    chunk(model, { choices: [{ index: 0, delta: { content: 'the benchmark mock.' }, finish_reason: null }] }),
    chunk(model, { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }),
    chunk(model, { choices: [], usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 } }),
    'data: [DONE]\n\n',
  ].map((f) => Buffer.from(f));

const message = (model: string) =>
  Buffer.from(
    JSON.stringify({
      id: 'msg_bench',
      type: 'message',
      role: 'assistant',
      model,
      content: [{ type: 'text', text: 'Hello from the benchmark mock.' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 7 },
    }),
  );

const event = (type: string, data: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

export const messageFrames = (model: string) =>
  [
    event('message_start', {
      message: {
        id: 'msg_bench',
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 12, output_tokens: 1 },
      },
    }),
    event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hello from ' } }),
    event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'the benchmark mock.' } }),
    event('content_block_stop', { index: 0 }),
    event('message_delta', {
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: 7 },
    }),
    event('message_stop', {}),
  ].map((f) => Buffer.from(f));

type Bodies = { json: Buffer; frames: Buffer[] };
/** Pre-rendered bodies per wire and model name (the few names a run uses). */
const bodies = { chat: new Map<string, Bodies>(), messages: new Map<string, Bodies>() };
function bodiesFor(wire: 'chat' | 'messages', model: string) {
  const cache = bodies[wire];
  let b = cache.get(model);
  if (!b) {
    b =
      wire === 'chat'
        ? { json: completion(model), frames: streamFrames(model) }
        : { json: message(model), frames: messageFrames(model) };
    if (cache.size < 16) cache.set(model, b);
  }
  return b;
}

/** Which wire a request path asks for; null: not served. */
function wireOf(url: string | undefined): 'chat' | 'messages' | null {
  // Clients may add a query (the Anthropic SDK's `?beta=true`).
  const path = url?.includes('?') ? url.slice(0, url.indexOf('?')) : url;
  if (path?.endsWith('/chat/completions')) return 'chat';
  if (path?.endsWith('/v1/messages')) return 'messages';
  return null;
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const wire = wireOf(req.url);
  if (req.method !== 'POST' || !wire) {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"error":{"message":"not found"}}');
    return;
  }
  const parts: Buffer[] = [];
  req.on('data', (c: Buffer) => parts.push(c));
  req.on('end', () => {
    let body: { model?: unknown; stream?: unknown };
    try {
      body = JSON.parse(Buffer.concat(parts).toString('utf8'));
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"invalid JSON"}}');
      return;
    }
    const b = bodiesFor(wire, typeof body.model === 'string' ? body.model : 'mock');
    if (body.stream === true) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      for (const f of b.frames) res.write(f);
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': b.json.length });
    res.end(b.json);
  });
}

export interface MockUpstream {
  server: Server;
  port: number;
  /** `http://127.0.0.1:<port>/v1` */
  baseUrl: string;
  close(): Promise<void>;
}

export async function startMockUpstream(port = 0): Promise<MockUpstream> {
  const server = createServer(handle);
  // Gateways keep upstream sockets alive for long; never close one under them between phases.
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = 125_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const actual = (server.address() as AddressInfo).port;
  return {
    server,
    port: actual,
    baseUrl: `http://127.0.0.1:${actual}/v1`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const i = process.argv.indexOf('--port');
  const port = i > 0 ? Number(process.argv[i + 1]) : 0;
  const mock = await startMockUpstream(port);
  process.stdout.write(`${JSON.stringify({ ready: true, port: mock.port })}\n`);
  const stop = () => void mock.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
