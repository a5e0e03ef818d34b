import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../../../test/support/mock-upstream.js';
import { GoogleProvider } from './adapter.js';

describe('google adapter', () => {
  let mock: MockUpstream;
  beforeAll(async () => {
    mock = await startMockUpstream();
  });
  afterAll(() => mock.close());

  it('calls the model paths with the key in x-goog-api-key, never in the URL', async () => {
    const p = new GoogleProvider({
      slug: 'google-ai-studio',
      kind: 'google',
      baseUrl: `${mock.url}/v1beta/`,
      apiKey: null,
    });
    const ctx = { apiKey: 'AIza-secret-123', signal: new AbortController().signal };
    const res = await p.chat({ model: 'models/gemini-x', messages: [{ role: 'user', content: 'Hi' }] }, ctx);
    expect(res.choices[0]!.message.content).toBe('Hello from gemini-x!');
    const stream = await p.chatStream(
      { model: 'gemini-x', messages: [{ role: 'user', content: 'Hi' }] },
      ctx,
    );
    for await (const _ of stream) {
    }
    await p.embeddings({ model: 'text-embedding-004', input: 'x' }, ctx);
    expect(
      mock.requests.map(
        (r) => `${r.path}${Object.keys(r.query).length ? `?${new URLSearchParams(r.query)}` : ''}`,
      ),
    ).toEqual([
      '/v1beta/models/gemini-x:generateContent',
      '/v1beta/models/gemini-x:streamGenerateContent?alt=sse',
      '/v1beta/models/text-embedding-004:batchEmbedContents',
    ]);
    for (const r of mock.requests) expect(r.headers['x-goog-api-key']).toBe('AIza-secret-123');
  });
});
