/**
 * The body limit of model calls (GATEHOUSE_INFERENCE_BODY_LIMIT, 50 MiB by default) apart from the
 * management routes' (GATEHOUSE_BODY_LIMIT, 1 MiB): a long session with a phone's photo in base64
 * reaches the provider whole; a body over a lowered limit is a 413 in the caller's own format
 * naming the variable; a request without a valid key is refused before its body is read. Real
 * gateway, the recording mock upstream, raw node:http where the upload must stop half-way.
 */
import { randomBytes } from 'node:crypto';
import { type IncomingMessage, request } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { loadConfig } from '../src/config.js';
import type { TestGateway } from './support/gateway.js';
import { client } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { gatewayWithUpstreams } from './support/upstreams.js';

/** A 3 MB session's worth: ~1 MB of conversation text and a ~1.5 MB photo, base64-encoded (~2 MB). */
const LONG_TEXT = 'The quick brown fox jumps over the lazy dog. '.repeat(23_000);
const PHOTO = randomBytes(1_500_000).toString('base64');

describe('GATEHOUSE_INFERENCE_BODY_LIMIT: its defaults', () => {
  const base = { GATEHOUSE_MASTER_KEY: 'ab'.repeat(32) };

  it('is 50 MiB, apart from the 1 MiB of the other routes, and the default of one batch item', () => {
    const config = loadConfig(base);
    expect(config.inferenceBodyLimit).toBe(52_428_800);
    expect(config.bodyLimit).toBe(1_048_576);
    expect(config.batches.maxItemBytes).toBe(52_428_800);
    const lowered = loadConfig({ ...base, GATEHOUSE_INFERENCE_BODY_LIMIT: '2000000' });
    expect(lowered.batches.maxItemBytes).toBe(2_000_000);
    const item = loadConfig({ ...base, GATEHOUSE_BATCH_MAX_ITEM_BYTES: '4096' });
    expect(item.batches.maxItemBytes).toBe(4096);
    expect(item.inferenceBodyLimit).toBe(52_428_800);
    expect(() => loadConfig({ ...base, GATEHOUSE_INFERENCE_BODY_LIMIT: 'lots' })).toThrow(
      /GATEHOUSE_INFERENCE_BODY_LIMIT/,
    );
  });
});

describe('model calls larger than 1 MiB (the default limit)', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ gw, mock, stop } = await gatewayWithUpstreams());
  });
  afterAll(() => stop?.());
  beforeEach(() => mock.reset());

  it('a ~3 MB /messages body (long text and a base64 image) reaches the Anthropic provider whole', async () => {
    const messages = [
      {
        role: 'user',
        content: [
          { type: 'text', text: LONG_TEXT },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PHOTO } },
          { type: 'text', text: 'What is in this photo?' },
        ],
      },
    ];
    const body = { model: 'test/claude', max_tokens: 100, messages };
    expect(JSON.stringify(body).length).toBeGreaterThan(3_000_000);
    const res = await client(gw.url, gw.apiKey)('POST', '/messages', body, {
      'anthropic-version': '2023-06-01',
    });
    expect(res.status, res.text.slice(0, 300)).toBe(200);
    expect(res.body.type).toBe('message');
    expect(mock.requests).toHaveLength(1);
    const sent = mock.requests[0]!;
    expect(sent.format).toBe('anthropic-messages');
    expect(sent.body.messages).toEqual(messages);
    expect(JSON.stringify(sent.body.messages).length).toBe(JSON.stringify(messages).length);
  });

  it('a ~3 MB /chat/completions body reaches the OpenAI provider whole', async () => {
    const messages = [
      {
        role: 'user',
        content: [
          { type: 'text', text: LONG_TEXT },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PHOTO}` } },
        ],
      },
    ];
    const body = { model: 'test/gpt', messages };
    expect(JSON.stringify(body).length).toBeGreaterThan(3_000_000);
    const res = await client(gw.url, gw.apiKey)('POST', '/chat/completions', body);
    expect(res.status, res.text.slice(0, 300)).toBe(200);
    expect(res.body.object).toBe('chat.completion');
    expect(mock.requests).toHaveLength(1);
    const sent = mock.requests[0]!;
    expect(sent.format).toBe('openai-chat');
    expect(sent.body.messages).toEqual(messages);
  });

  it('a management route still refuses a 2 MB body with 413 (GATEHOUSE_BODY_LIMIT)', async () => {
    const res = await client(gw.url, gw.managementKey)('POST', '/keys', { name: 'x'.repeat(2_000_000) });
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({ code: 413 });
    expect(res.body.error.message).not.toMatch(/GATEHOUSE_INFERENCE_BODY_LIMIT/);
  });
});

/**
 * POSTs a body of `total` bytes (its Content-Length) over node:http, sending only its first 64 KiB,
 * and resolves with the answer: one comes only if the server answers without the rest.
 */
function partialUpload(url: string, path: string, headers: Record<string, string>, total: number) {
  const { hostname, port } = new URL(url);
  const req = request({
    host: hostname,
    port,
    method: 'POST',
    path: `/api/v1${path}`,
    headers: { ...headers, 'content-type': 'application/json', 'content-length': total },
  });
  // The server may close the connection under the unsent rest once it has answered.
  req.on('error', () => {});
  const first = Buffer.alloc(64 * 1024, 'a');
  first.write('{"model":"test/claude","messages":[{"role":"user","content":"');
  req.write(first);
  return new Promise<{ status: number; body: any }>((resolve, reject) => {
    req.once('response', async (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      for await (const c of res) chunks.push(c as Buffer);
      req.destroy();
      resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) });
    });
    req.once('error', reject);
  });
}

describe('a lowered GATEHOUSE_INFERENCE_BODY_LIMIT', () => {
  const LIMIT = 64 * 1024;
  let gw: TestGateway;
  let mock: MockUpstream;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ gw, mock, stop } = await gatewayWithUpstreams({ GATEHOUSE_INFERENCE_BODY_LIMIT: String(LIMIT) }));
  });
  afterAll(() => stop?.());
  beforeEach(() => mock.reset());

  const over = (model: string) => ({
    model,
    max_tokens: 10,
    messages: [{ role: 'user', content: 'x'.repeat(LIMIT) }],
  });

  it('a body over it is a 413 in the caller’s format naming the variable; nothing reaches the provider', async () => {
    const call = client(gw.url, gw.apiKey);
    const messages = await call('POST', '/messages', over('test/claude'));
    expect(messages.status).toBe(413);
    expect(messages.body).toMatchObject({
      type: 'error',
      error: { type: 'request_too_large', message: expect.stringMatching(/GATEHOUSE_INFERENCE_BODY_LIMIT/) },
    });
    expect(messages.body.error.message).toContain(String(LIMIT));
    // Every route whose body goes to a model.
    const paths = [
      '/chat/completions',
      '/responses',
      '/responses/compact',
      '/responses/input_tokens',
      '/messages/count_tokens',
      '/embeddings',
      '/rerank',
      '/audio/speech',
    ];
    for (const path of paths) {
      const res = await call('POST', path, over('test/gpt'));
      expect(res.status, path).toBe(413);
      expect(res.body.error.message, path).toMatch(/GATEHOUSE_INFERENCE_BODY_LIMIT/);
    }
    expect(mock.requests).toHaveLength(0);
    // Under it, served.
    const under = await call('POST', '/chat/completions', {
      model: 'test/gpt',
      messages: [{ role: 'user', content: 'x'.repeat(LIMIT / 2) }],
    });
    expect(under.status).toBe(200);
  });

  it('a WebSocket message over it closes the socket, and the handshake tells Codex the limit', async () => {
    const ws = new WebSocket(`${gw.url.replace('http', 'ws')}/api/v1/responses`, {
      headers: { authorization: `Bearer ${gw.apiKey}` },
    });
    const headers = await new Promise<Record<string, unknown>>((resolve, reject) => {
      let seen: Record<string, unknown> = {};
      ws.once('upgrade', (res) => {
        seen = res.headers;
      });
      ws.once('open', () => resolve(seen)).once('error', reject);
    });
    expect(headers['x-codex-websocket-max-message-bytes']).toBe(String(LIMIT));
    const code = new Promise<number>((resolve) => ws.once('close', (c) => resolve(c)));
    ws.send(JSON.stringify({ type: 'response.create', model: 'test/gpt', input: 'x'.repeat(LIMIT) }));
    expect(await code).toBe(1009);
    expect(mock.requests).toHaveLength(0);
  });

  it('a 10 MB body without a valid key is a 401, not a 413, answered before the body is sent', async () => {
    // Authentication runs before the body is read: the answer comes with 64 KiB of 10 MB sent,
    // nothing of the body waited for or held.
    const total = 10 * 1024 * 1024;
    const keys: Record<string, string>[] = [
      {},
      { 'x-api-key': 'gh-not-a-key' },
      { authorization: 'Bearer gh-not-a-key' },
    ];
    for (const headers of keys) {
      const res = await partialUpload(gw.url, '/messages', headers, total);
      expect(res.status, JSON.stringify(headers)).toBe(401);
      // In the caller's format, as any refusal of /messages.
      expect(res.body).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    }
    expect(mock.requests).toHaveLength(0);
  });
});
