import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../../../test/support/mock-upstream.js';
import type { ChatChunk } from '../../formats/chat.js';
import { UpstreamError } from '../types.js';
import { AnthropicProvider } from './adapter.js';

describe('anthropic adapter', () => {
  let mock: MockUpstream;
  const ctx = { apiKey: 'sk-ant-0123456789', signal: new AbortController().signal };
  const req = { model: 'claude-x', messages: [{ role: 'user' as const, content: 'Hi' }] };

  beforeAll(async () => {
    mock = await startMockUpstream();
  });
  afterEach(() => mock.reset());
  afterAll(() => mock.close());

  it('accepts a base URL with or without /v1 and honours header overrides', async () => {
    for (const baseUrl of [mock.url, `${mock.url}/v1`, `${mock.url}/v1/`]) {
      const p = new AnthropicProvider({
        slug: 'anthropic',
        kind: 'anthropic',
        baseUrl,
        apiKey: null,
        headers: { 'anthropic-beta': 'x' },
      });
      await p.chat(req, ctx);
    }
    expect(mock.requests.map((r) => r.path)).toEqual(['/v1/messages', '/v1/messages', '/v1/messages']);
    expect(mock.requests[0]!.headers['anthropic-beta']).toBe('x');
    expect(mock.requests[0]!.body.max_tokens).toBe(4096);
  });

  it("a translated request's betas go as the anthropic-beta header, after the configured ones", async () => {
    const p = new AnthropicProvider({
      slug: 'anthropic',
      kind: 'anthropic',
      baseUrl: mock.url,
      apiKey: null,
      headers: { 'anthropic-beta': 'operator-beta' },
    });
    const beta = 'interleaved-thinking-2025-05-14,context-management-2025-06-27';
    await p.chat({ ...req, anthropic_beta: beta }, ctx);
    for await (const _ of await p.chatStream({ ...req, stream: true, anthropic_beta: beta }, ctx));
    await new AnthropicProvider({
      slug: 'anthropic',
      kind: 'anthropic',
      baseUrl: mock.url,
      apiKey: null,
    }).chat({ ...req, anthropic_beta: beta }, ctx);
    expect(mock.requests.map((r) => r.headers['anthropic-beta'])).toEqual([
      `operator-beta,${beta}`,
      `operator-beta,${beta}`,
      beta,
    ]);
    // A header only: the body has no trace of it.
    for (const r of mock.requests) expect(JSON.stringify(r.body)).not.toContain('beta');
  });

  it('an error event mid-stream makes the iterator throw a retryable UpstreamError', async () => {
    mock.enqueue({
      stream: [
        {
          event: 'message_start',
          data: {
            type: 'message_start',
            message: {
              id: 'msg_1',
              type: 'message',
              role: 'assistant',
              model: 'claude-x',
              content: [],
              usage: { input_tokens: 3, output_tokens: 1 },
            },
          },
        },
        {
          event: 'content_block_start',
          data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        },
        {
          event: 'content_block_delta',
          data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } },
        },
        {
          event: 'error',
          data: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
        },
      ],
    });
    const p = new AnthropicProvider({
      slug: 'anthropic',
      kind: 'anthropic',
      baseUrl: mock.url,
      apiKey: null,
    });
    const stream = await p.chatStream(req, ctx);
    const seen: ChatChunk[] = [];
    const err = await (async () => {
      for await (const c of stream) seen.push(c);
    })().catch((e) => e);
    expect(seen.map((c) => c.choices[0]?.delta.content)).toEqual(['', 'Hel']);
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).toMatchObject({ status: 529, retryable: true, message: 'Overloaded' });
  });

  it('a stream that ends cleanly before message_stop is reported as cut off', async () => {
    mock.enqueue({
      stream: [
        {
          event: 'message_start',
          data: { type: 'message_start', message: { id: 'msg_1', content: [], usage: {} } },
        },
      ],
    });
    const p = new AnthropicProvider({
      slug: 'anthropic',
      kind: 'anthropic',
      baseUrl: mock.url,
      apiKey: null,
    });
    const stream = await p.chatStream(req, ctx);
    const err = await (async () => {
      for await (const _ of stream) {
      }
    })().catch((e) => e);
    expect(err).toMatchObject({ status: 502, retryable: true });
  });
});
