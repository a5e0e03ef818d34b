import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../../../test/support/mock-upstream.js';
import type { ChatChunk } from '../../formats/chat.js';
import { AzureProvider } from './adapter.js';

const FILTERS = {
  hate: { filtered: false, severity: 'safe' },
  violence: { filtered: false, severity: 'medium' },
  jailbreak: { filtered: false, detected: false },
};

describe('azure adapter', () => {
  let mock: MockUpstream;
  let provider: AzureProvider;
  const ctx = { apiKey: 'az-key', signal: new AbortController().signal };
  const req = { model: 'gpt-4o', messages: [{ role: 'user' as const, content: 'Hi' }] };

  beforeAll(async () => {
    mock = await startMockUpstream();
    provider = new AzureProvider({
      slug: 'my-azure',
      kind: 'azure',
      baseUrl: mock.url,
      apiKey: 'az-key',
      // An operator header never replaces the api-key, nor adds an Authorization header.
      headers: { Authorization: 'Bearer stray', 'x-ms-client': 'gatehouse' },
      azure: { apiVersion: '2025-01-01-preview', deployments: { 'gpt-4o': 'prod-4o' } },
    });
  });
  afterEach(() => mock.reset());
  afterAll(() => mock.close());

  it('calls the deployment with api-key only, and reports Azure filter results as safeguards', async () => {
    mock.enqueue({
      body: {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        created: 1,
        model: 'gpt-4o',
        prompt_filter_results: [{ prompt_index: 0, content_filter_results: FILTERS }],
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: 'ok' },
            finish_reason: 'stop',
            content_filter_results: { self_harm: { filtered: true, severity: 'high' } },
          },
        ],
        usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
      },
    });
    const res = await provider.chat(req, ctx);
    const r = mock.requests[0]!;
    expect(r.path).toBe('/openai/deployments/prod-4o/chat/completions');
    expect(r.query).toEqual({ 'api-version': '2025-01-01-preview' });
    expect(r.headers['api-key']).toBe('az-key');
    expect(r.headers.authorization).toBeUndefined();
    expect(r.headers['x-ms-client']).toBe('gatehouse');
    expect(res.choices[0]!.message.content).toBe('ok');
    expect(res.provider_safeguards).toEqual([
      expect.objectContaining({ slug: 'azure-hate', status: { type: 'passed' }, matches: 0 }),
      expect.objectContaining({ slug: 'azure-violence', status: { type: 'flagged' }, matches: 1 }),
      expect.objectContaining({ slug: 'azure-jailbreak', status: { type: 'passed' } }),
      {
        type: 'content_filter',
        status: { type: 'blocked' },
        label: 'Azure content filter: self_harm (high)',
        slug: 'azure-self_harm',
        matches: 1,
        stage: 'response',
      },
    ]);
  });

  it('a legacy completion goes to the deployment’s completions route, as it was sent', async () => {
    mock.enqueue({ reply: { text: 'def fib' } });
    const done = await provider.forward(
      {
        wire: 'openai-completions',
        body: { model: 'gpt-4o', prompt: 'x', suffix: 'y' },
        headers: {},
        stream: false,
      },
      ctx,
    );
    const r = mock.requests[0]!;
    expect(r.path).toBe('/openai/deployments/prod-4o/completions');
    expect(r.query).toEqual({ 'api-version': '2025-01-01-preview' });
    expect(r.body).toEqual({ model: 'prod-4o', prompt: 'x', suffix: 'y' });
    expect((done.json as { choices: { text: string }[] }).choices[0]?.text).toBe('def fib');
  });

  it("a tool result's image goes in a user message after the tool message", async () => {
    await provider.chat(
      {
        model: 'gpt-4o',
        messages: [
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'shot', arguments: '{}' } }],
          },
          {
            role: 'tool',
            tool_call_id: 'c1',
            content: [
              { type: 'text', text: 'done' },
              { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
            ],
          },
        ],
      },
      ctx,
    );
    expect(mock.requests[0]!.body.messages.slice(1)).toEqual([
      { role: 'tool', tool_call_id: 'c1', content: 'done' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Attached to the result of tool call c1 (shot):' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
        ],
      },
    ]);
  });

  it('a stream carries the prompt filter results on the chunk that brought them', async () => {
    const chunk = (extra: object) => ({
      id: 'c',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'gpt-4o',
      ...extra,
    });
    mock.enqueue({
      stream: [
        {
          data: chunk({
            choices: [],
            prompt_filter_results: [{ prompt_index: 0, content_filter_results: FILTERS }],
          }),
        },
        { data: chunk({ choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: null }] }) },
        { data: chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }) },
        { data: '[DONE]' },
      ],
    });
    const chunks: ChatChunk[] = [];
    for await (const c of await provider.chatStream({ ...req, stream: true }, ctx)) chunks.push(c);
    expect(chunks[0]!.provider_safeguards?.map((s) => s.slug)).toEqual([
      'azure-hate',
      'azure-violence',
      'azure-jailbreak',
    ]);
    expect(chunks.slice(1).every((c) => c.provider_safeguards === undefined)).toBe(true);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('hi');
  });

  it('a model without a deployment entry goes to a deployment of its own name', async () => {
    await provider.embeddings({ model: 'text-embedding-3-small', input: 'x' }, ctx);
    expect(mock.requests[0]!.path).toBe('/openai/deployments/text-embedding-3-small/embeddings');
    expect(mock.requests[0]!.body.model).toBe('text-embedding-3-small');
  });
});
