import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../../../test/support/mock-upstream.js';
import { SEARCH_BESIDE_FUNCTIONS } from '../../formats/capabilities.js';
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

  it('Gemini 3 and later search beside function tools (server-side invocations); Gemini 2 does not', async () => {
    mock.reset();
    const p = new GoogleProvider({ slug: 'g', kind: 'google', baseUrl: `${mock.url}/v1beta`, apiKey: null });
    const ctx = { apiKey: 'k', signal: new AbortController().signal };
    const ask = (model: string) => ({
      model,
      messages: [{ role: 'user' as const, content: 'Hi' }],
      tools: [{ type: 'function' as const, function: { name: 'f' } }],
      web_search: { origin: 'web_search' },
    });
    for (const model of ['gemini-3-pro-preview', 'gemini-2.5-pro']) await p.chat(ask(model), ctx);
    const [three, two] = mock.requests.map((r) => r.body);
    expect(three.tools).toEqual([{ functionDeclarations: [{ name: 'f' }] }, { googleSearch: {} }]);
    expect(three.toolConfig).toEqual({ includeServerSideToolInvocations: true });
    expect(two.tools).toEqual([{ functionDeclarations: [{ name: 'f' }] }]);
    expect(two).not.toHaveProperty('toolConfig');
    // The engine lists the search as dropped only where it was.
    expect(p.traits.forModel!('gemini-3-pro-preview').keeps).toEqual(['web_search']);
    expect(p.traits.forModel!('gemini-2.5-pro').keeps).toBeUndefined();
    // One asked for outright beside functions is refused before any call where the model cannot.
    expect(p.traits.forModel!('gemini-2.5-pro').refuses).toEqual([SEARCH_BESIDE_FUNCTIONS]);
    expect(p.traits.forModel!('gemini-3-pro-preview').refuses).toBeUndefined();
    // An alias naming no generation may be a Gemini 3: not refused here, Gemini decides.
    expect(p.traits.forModel!('gemini-flash-latest').refuses).toBeUndefined();
  });
});
