import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

/**
 * A request a provider's adapter cannot translate (an image form the Anthropic or Gemini wire
 * cannot take): nothing is sent there; another provider of the model serves it when one can,
 * else the caller gets a 400 in its own format naming the field — never a 502 "could not be
 * reached", and never a mark against the credential's health.
 */
describe('requests an adapter cannot translate', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let api: ReturnType<typeof client>;
  let openai: OpenAI;
  const price = { prompt: 1, completion: 2 };
  // Neither Anthropic's nor Gemini's wire takes a gs:// image (only data: and http(s) URLs).
  const gsImage = (model: string, extra: object = {}) => ({
    model,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'what is this?' },
          { type: 'image_url', image_url: { url: 'gs://bucket/cat.png' } },
        ],
      },
    ],
    ...extra,
  });

  beforeAll(async () => {
    const up = await startUpstreams([
      {
        id: 'test/claude-then-gpt',
        endpoints: [
          { provider: 'anthropic', upstream_model: 'claude-both', pricing: price },
          { provider: 'openai', upstream_model: 'gpt-both', pricing: price },
        ],
      },
    ]);
    mock = up.mock;
    gw = await startTestGateway('sqlite', { env: up.env });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    api = client(gw.url, gw.apiKey);
    openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  it('chat → Anthropic: a 400 in the OpenAI format naming the field, and nothing sent', async () => {
    const err = await openai.chat.completions.create(gsImage('test/claude') as never).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.status).toBe(400);
    expect(err.message).toMatch(
      /cannot be sent to anthropic: image_url must be a data: URL or an http\(s\) URL/,
    );
    expect(err.message).not.toMatch(/could not be reached/);
    expect(mock.requests).toHaveLength(0);
  });

  it('the same when streamed: the 400 comes before any stream', async () => {
    const res = await api('POST', '/chat/completions', gsImage('test/claude', { stream: true }));
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('image_url');
    expect(mock.requests).toHaveLength(0);
  });

  it('/messages → Gemini: a 400 as Anthropic’s error object', async () => {
    const res = await api('POST', '/messages', {
      model: 'test/gemini',
      max_tokens: 50,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'image', source: { type: 'url', url: 'gs://bucket/cat.png' } },
          ],
        },
      ],
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringMatching(/google-ai-studio: image_url/) },
    });
    expect(mock.requests).toHaveLength(0);
  });

  it('the model’s next provider serves it when that one can take it', async () => {
    mock.enqueue({ reply: { text: 'a cat' } });
    const res = await api('POST', '/chat/completions', gsImage('test/claude-then-gpt'));
    expect(res.status).toBe(200);
    expect(res.body.provider).toBe('openai');
    expect(res.body.choices[0].message.content).toBe('a cat');
    // Only OpenAI was called, with the image as sent.
    expect(mock.requests.map((r) => r.path.split('/')[1])).toEqual(['openai']);
    expect(JSON.stringify(mock.requests[0]?.body)).toContain('gs://bucket/cat.png');
    const gen = await api('GET', `/generation?id=${res.body.id}`);
    expect(gen.body.data.provider_responses.map((p: any) => [p.provider_name, p.status])).toEqual([
      ['anthropic', null],
      ['openai', 200],
    ]);
  });

  it('counts against no credential: the provider still serves the next good call', async () => {
    // More refusals than the breaker's failure threshold (3 by default).
    for (let i = 0; i < 4; i++) {
      const res = await api('POST', '/chat/completions', gsImage('test/claude'));
      expect(res.status).toBe(400);
    }
    mock.enqueue({ reply: { text: 'still here' } });
    const ok = await api('POST', '/chat/completions', {
      model: 'test/claude',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(ok.status).toBe(200);
    expect(ok.body.choices[0].message.content).toBe('still here');
  });
});
