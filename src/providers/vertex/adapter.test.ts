import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type MockVertex, startMockVertex, vertexSettings } from '../../../test/support/mock-vertex.js';
import { SEARCH_BESIDE_FUNCTIONS } from '../../formats/capabilities.js';
import { UpstreamError } from '../types.js';
import { VertexProvider } from './adapter.js';

describe('vertex adapter', () => {
  let mock: MockVertex;
  let provider: VertexProvider;
  const ctx = { apiKey: null, signal: new AbortController().signal };
  const ask = (model: string) => ({ model, messages: [{ role: 'user' as const, content: 'Hi' }] });

  beforeAll(async () => {
    mock = await startMockVertex();
    provider = new VertexProvider({
      slug: 'gv',
      kind: 'vertex',
      baseUrl: mock.url,
      apiKey: null,
      // An operator header never replaces the token.
      headers: { Authorization: 'Bearer stray', 'x-goog-user-project': 'billing-1' },
      ...vertexSettings(mock, { 'my-tuned-claude': 'anthropic', 'claude-lookalike': 'google' }),
    });
  });
  beforeEach(() => mock.reset());
  afterAll(() => mock.close());

  it('picks the publisher by model id, overridable per model, and the lanes with it', () => {
    expect(provider.publisherOf('claude-opus-4-1@20250805')).toBe('anthropic');
    expect(provider.publisherOf('gemini-2.5-pro')).toBe('google');
    expect(provider.publisherOf('my-tuned-claude')).toBe('anthropic');
    expect(provider.publisherOf('claude-lookalike')).toBe('google');
    const traits = (m: string) => provider.traits.forModel!(m);
    expect([...traits('claude-opus-4-1@20250805').natives]).toEqual([
      'anthropic-messages',
      'anthropic-count-tokens',
    ]);
    expect(traits('claude-opus-4-1@20250805').target).toBe('anthropic');
    expect([...traits('gemini-2.5-pro').natives]).toEqual([]);
    expect(traits('gemini-2.5-pro').target).toBe('google');
    expect(provider.traits.keyOptional).toBe(true);
    // No Gemini here searches beside function tools (no server-side invocations): asked, refused.
    for (const m of ['gemini-2.5-pro', 'gemini-3-pro-preview'])
      expect(traits(m).refuses).toEqual([SEARCH_BESIDE_FUNCTIONS]);
    expect(traits('claude-opus-4-1@20250805').refuses).toBeUndefined();
  });

  it('sends the token, not an operator Authorization header; other operator headers travel', async () => {
    await provider.chat(ask('my-tuned-claude'), ctx);
    const req = mock.requests[0]!;
    expect(req.path).toMatch(/\/publishers\/anthropic\/models\/my-tuned-claude:rawPredict$/);
    expect(req.headers.authorization).toBe(`Bearer ${mock.issued[mock.issued.length - 1]}`);
    expect(req.headers['x-goog-user-project']).toBe('billing-1');
  });

  it("Gemini: a tool result's image goes as inline data after the function response", async () => {
    await provider.chat(
      {
        model: 'gemini-2.5-pro',
        messages: [
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'shot', arguments: '{}' } }],
          },
          {
            role: 'tool',
            tool_call_id: 'c1',
            content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }],
          },
        ],
      },
      ctx,
    );
    const req = mock.requests[0]!;
    expect(req.path).toMatch(/\/publishers\/google\/models\/gemini-2\.5-pro:generateContent$/);
    expect(req.body.contents.at(-1)).toEqual({
      role: 'user',
      parts: [
        { functionResponse: { name: 'shot', response: { result: '(image attached below)' } } },
        { text: 'Attached to the result of tool call c1 (shot):' },
        { inlineData: { mimeType: 'image/png', data: 'AAAA' } },
      ],
    });
  });

  it('Gemini 3: no search beside function tools (Vertex AI has no server-side tool invocations)', async () => {
    expect(provider.traits.forModel!('gemini-3-pro-preview').keeps).toBeUndefined();
    const serverPart = { toolCall: { id: 's1', toolType: 'GOOGLE_SEARCH_WEB', args: {} } };
    await provider.chat(
      {
        model: 'gemini-3-pro-preview',
        tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
        web_search: { origin: 'web_search' },
        messages: [
          { role: 'user', content: 'Hi' },
          {
            role: 'assistant',
            content: 'Hello',
            reasoning_details: [
              {
                type: 'reasoning.encrypted',
                data: JSON.stringify({ geminiServerPart: serverPart, textBefore: 0, callsBefore: 0 }),
                format: 'google-gemini-v1',
              },
            ],
          },
          { role: 'user', content: 'Again' },
        ],
      },
      ctx,
    );
    const body = mock.requests[0]!.body;
    expect(body.tools).toEqual([{ functionDeclarations: [{ name: 'f', parameters: { type: 'OBJECT' } }] }]);
    expect(body).not.toHaveProperty('toolConfig');
    // A server part from the Gemini API (a fallback) is left out: Vertex knows no such part.
    expect(body.contents[1]).toEqual({ role: 'model', parts: [{ text: 'Hello' }] });
  });

  it('a model id Vertex could not have is a 400 and nothing is sent', async () => {
    for (const model of ['../../x', 'a/b', 'gemini:evil', '..']) {
      const err = await provider.chat(ask(model), ctx).catch((e) => e);
      expect(err, model).toBeInstanceOf(UpstreamError);
      expect(err.status, model).toBe(400);
    }
    expect(mock.requests).toHaveLength(0);
  });

  it('serves /messages bodies for Claude models only, and no embeddings from Claude', async () => {
    const body = { model: 'gemini-2.5-pro', max_tokens: 5, messages: [] };
    const lane = provider.forward({ wire: 'anthropic-messages', body, headers: {}, stream: false }, ctx);
    await expect(lane).rejects.toMatchObject({ status: 400 });
    await expect(provider.embeddings({ model: 'claude-x', input: 'a' }, ctx)).rejects.toMatchObject({
      status: 400,
    });
    expect(mock.requests).toHaveLength(0);
  });
});
