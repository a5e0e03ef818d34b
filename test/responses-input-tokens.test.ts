/**
 * `POST /responses/input_tokens` through the `openai` client's `responses.inputTokens.count` (6.x
 * and 7.x lines): OpenAI's own count for its models (the body as sent), Anthropic's count of the
 * translated request for a Claude model, an estimate marked as one elsewhere. Nothing is billed.
 */
import OpenAI6 from 'openai';
import OpenAI7 from 'openai-v7';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestGateway } from './support/gateway.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { gatewayWithUpstreams } from './support/upstreams.js';

const CLIENTS = [
  { client: 'openai 6', OpenAI: OpenAI6 as unknown as typeof OpenAI7 },
  { client: 'openai 7', OpenAI: OpenAI7 },
];

const BODY = {
  instructions: 'Answer briefly.',
  input: [{ role: 'user' as const, content: 'How many tokens is this?' }],
  tools: [
    {
      type: 'function' as const,
      name: 'weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
      strict: false,
    },
  ],
};

describe.each(CLIENTS)('$client: responses.inputTokens.count through Gatehouse', ({ OpenAI }) => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let openai: OpenAI7;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ gw, mock, stop } = await gatewayWithUpstreams());
    openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(() => stop?.());
  beforeEach(() => mock.reset());

  it("an OpenAI model: the body goes to OpenAI's /responses/input_tokens as sent, its count relayed", async () => {
    mock.enqueue({ reply: { usage: { prompt_tokens: 37, completion_tokens: 0 } } });
    const { data, response } = await openai.responses.inputTokens
      .count({ model: 'test/gpt', ...BODY })
      .withResponse();
    expect(data).toEqual({ object: 'response.input_tokens', input_tokens: 37 });
    expect(response.headers.get('x-gatehouse-route')).toBe('passthrough');
    expect(response.headers.get('x-gatehouse-generation-id')).toBeNull();
    expect(mock.requests).toHaveLength(1);
    expect(mock.requests[0]?.path).toBe('/openai/v1/responses/input_tokens');
    expect(mock.requests[0]?.body).toEqual({ model: 'gpt-x', ...BODY });
  });

  it("an Anthropic model: the translated request counted by Anthropic's count_tokens", async () => {
    mock.enqueue({ reply: { usage: { prompt_tokens: 52, completion_tokens: 0 } } });
    const { data, response } = await openai.responses.inputTokens
      .count({ model: 'test/claude', ...BODY })
      .withResponse();
    expect(data).toEqual({ object: 'response.input_tokens', input_tokens: 52 });
    expect(response.headers.get('x-gatehouse-route')).toBe('translated');
    expect(response.headers.get('x-gatehouse-provider')).toBe('anthropic');
    expect(mock.requests).toHaveLength(1);
    const sent = mock.requests[0];
    expect(sent?.format).toBe('anthropic-count-tokens');
    expect(sent?.body).toEqual({
      model: 'claude-x',
      system: 'Answer briefly.',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'How many tokens is this?' }] }],
      tools: [expect.objectContaining({ name: 'weather', input_schema: BODY.tools[0]?.parameters })],
    });
  });

  it('a model whose provider counts nothing: an estimate, marked as one', async () => {
    const { data, response } = await openai.responses.inputTokens
      .count({ model: 'test/gemini', ...BODY })
      .withResponse();
    expect(data).toMatchObject({ object: 'response.input_tokens', estimated: true });
    expect(data.input_tokens).toBeGreaterThan(0);
    expect(response.headers.get('x-gatehouse-route')).toBe('estimated');
    expect(mock.requests).toHaveLength(0);
  });

  it('a Gatehouse compaction item is counted as its summary; an unknown previous response is a 404', async () => {
    mock.enqueue({ reply: { text: 'The user asked about tokens.' } });
    const compacted = await openai.responses.compact({ model: 'test/claude', input: BODY.input });
    mock.reset();
    await openai.responses.inputTokens.count({
      model: 'test/claude',
      input: [
        ...(compacted.output as OpenAI7.Responses.ResponseInputItem[]),
        { role: 'user', content: 'More?' },
      ],
    });
    const sent = JSON.stringify(mock.requests[0]?.body);
    expect(sent).toContain('The user asked about tokens.');
    expect(sent).not.toContain('gatehouse.cp1.');

    const err = await openai.responses.inputTokens
      .count({ model: 'test/gpt', previous_response_id: 'resp_unknown', input: 'hi' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
  });
});
