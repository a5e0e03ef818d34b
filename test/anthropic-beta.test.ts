/**
 * The caller's `anthropic-beta` header on calls that are translated: carried to an Anthropic-format
 * provider (a `/chat/completions` or `/responses` caller naming an Anthropic model), left out and
 * listed in `x-gatehouse-dropped-fields` for any other provider (an OpenAI lane included). Real
 * gateway, the recording mock upstream, the official `openai` client.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { adminClient } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { gatewayWithUpstreams } from './support/upstreams.js';

const HEADER = 'x-gatehouse-dropped-fields';
const BETAS = 'interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14';

describe('anthropic-beta on translated calls', () => {
  let ctx: Awaited<ReturnType<typeof gatewayWithUpstreams>>;
  let mock: MockUpstream;
  let openai: OpenAI;
  beforeAll(async () => {
    ctx = await gatewayWithUpstreams();
    mock = ctx.mock;
    await adminClient(ctx.gw.url)('POST', '/admin/credits', {
      organization_id: ctx.gw.organizationId,
      amount_usd: 100,
    });
    openai = new OpenAI({
      baseURL: `${ctx.gw.url}/api/v1`,
      apiKey: ctx.gw.apiKey,
      maxRetries: 0,
      defaultHeaders: { 'anthropic-beta': BETAS },
    });
  });
  afterAll(async () => ctx?.stop());
  beforeEach(() => mock.reset());

  it('/chat/completions → an Anthropic model: the betas reach Anthropic as the header, streamed or not', async () => {
    mock.enqueue({ reply: { text: 'whole' } }, { reply: { text: 'streamed' } });
    const { data, response } = await openai.chat.completions
      .create({ model: 'test/claude', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe('whole');
    expect(response.headers.get(HEADER)).toBeNull();
    const stream = await openai.chat.completions.create({
      model: 'test/claude',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('streamed');

    expect(mock.requests.map((r) => [r.format, r.headers['anthropic-beta']])).toEqual([
      ['anthropic-messages', BETAS],
      ['anthropic-messages', BETAS],
    ]);
    // A header, never a body field; the operator's key, never the gateway's.
    for (const r of mock.requests) {
      expect(JSON.stringify(r.body)).not.toContain('beta');
      expect(r.headers['x-api-key']).toBe('sk-operator-anthropic-00');
    }
  });

  it('/responses → an Anthropic model: the betas reach Anthropic', async () => {
    mock.enqueue({ reply: { text: 'from claude' } });
    const { data, response } = await openai.responses
      .create({ model: 'test/claude', input: 'hi', store: false })
      .withResponse();
    expect(data.output_text).toBe('from claude');
    expect(response.headers.get(HEADER)).toBeNull();
    expect(mock.requests[0]?.format).toBe('anthropic-messages');
    expect(mock.requests[0]?.headers['anthropic-beta']).toBe(BETAS);
  });

  it('repeated anthropic-beta headers are joined into one list', async () => {
    mock.enqueue({ reply: { text: 'ok' } });
    const headers = new Headers({
      authorization: `Bearer ${ctx.gw.apiKey}`,
      'content-type': 'application/json',
    });
    headers.append('anthropic-beta', 'a-2025-01-01');
    headers.append('anthropic-beta', 'b-2025-01-01');
    const res = await fetch(`${ctx.gw.url}/api/v1/chat/completions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ model: 'test/claude', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    expect(mock.requests[0]?.headers['anthropic-beta']).toBe('a-2025-01-01,b-2025-01-01');
  });

  it.each([
    ['/chat/completions on an OpenAI lane', 'test/gpt', 'chat'],
    ['/responses on an OpenAI lane', 'test/gpt', 'responses'],
    ['/chat/completions translated to Gemini', 'test/gemini', 'chat'],
    ['/responses translated to Gemini', 'test/gemini', 'responses'],
  ] as const)('%s: not sent, listed as dropped', async (_name, model, endpoint) => {
    mock.enqueue({ reply: { text: 'ok' } });
    const { response } =
      endpoint === 'chat'
        ? await openai.chat.completions
            .create({ model, messages: [{ role: 'user', content: 'hi' }] })
            .withResponse()
        : await openai.responses.create({ model, input: 'hi', store: false }).withResponse();
    expect(response.status).toBe(200);
    expect(response.headers.get(HEADER)?.split(',')).toContain('anthropic-beta');
    expect(mock.requests).toHaveLength(1);
    expect(mock.requests[0]?.headers['anthropic-beta']).toBeUndefined();
  });
});
