import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../../../test/support/mock-upstream.js';
import type { ChatChunk } from '../../formats/chat.js';
import { UpstreamError } from '../types.js';
import { OpenAiCompatibleProvider } from './adapter.js';

async function collect(it: AsyncIterable<ChatChunk>): Promise<ChatChunk[]> {
  const out: ChatChunk[] = [];
  for await (const c of it) out.push(c);
  return out;
}

describe('openai-compatible adapter', () => {
  let mock: MockUpstream;
  let provider: OpenAiCompatibleProvider;
  const ctx = { apiKey: null, signal: new AbortController().signal };
  const req = { model: 'llama3', messages: [{ role: 'user' as const, content: 'Hi' }], max_tokens: 20 };

  beforeAll(async () => {
    mock = await startMockUpstream();
    provider = new OpenAiCompatibleProvider({
      slug: 'ollama',
      kind: 'openai-compatible',
      baseUrl: `${mock.url}/v1/`,
      apiKey: null,
      headers: { 'x-extra': 'yes' },
    });
  });
  afterEach(() => mock.reset());
  afterAll(() => mock.close());

  it('sends no Authorization header without a key, plus the configured headers', async () => {
    await provider.chat(req, ctx);
    const r = mock.requests[0]!;
    expect(r.path).toBe('/v1/chat/completions');
    expect(r.headers.authorization).toBeUndefined();
    expect(r.headers['x-extra']).toBe('yes');
    expect(r.body.max_tokens).toBe(20);
  });

  it('tolerates a stream without usage and without [DONE]', async () => {
    mock.enqueue({ reply: { text: 'a b c', omitUsage: true, omitDone: true } });
    const chunks = await collect(await provider.chatStream(req, ctx));
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('a b c');
    expect(chunks.some((c) => c.usage)).toBe(false);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop');
  });

  it('an error payload inside the stream throws UpstreamError', async () => {
    mock.enqueue({
      stream: [
        {
          data: {
            id: 'x',
            object: 'chat.completion.chunk',
            created: 1,
            model: 'llama3',
            choices: [{ index: 0, delta: { content: 'a' }, finish_reason: null }],
          },
        },
        { data: { error: { message: 'model crashed', code: 503 } } },
      ],
    });
    const stream = await provider.chatStream(req, ctx);
    const seen: ChatChunk[] = [];
    const err = await (async () => {
      for await (const c of stream) seen.push(c);
    })().catch((e) => e);
    expect(seen).toHaveLength(1);
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).toMatchObject({ status: 503, retryable: true, message: 'model crashed' });
  });

  it('an invalid JSON body → retryable UpstreamError(502)', async () => {
    mock.enqueue({ body: 'not json at all' });
    await expect(provider.chat(req, ctx)).rejects.toMatchObject({ status: 502, retryable: true });
  });
});
