/**
 * `POST /responses/compact` through the `openai` client (6.x and 7.x lines): on a model OpenAI's
 * Responses API serves, passed through to OpenAI's compact endpoint; on an Anthropic model, one
 * summarizing call and a compaction item Gatehouse sealed, which a later `responses.create` turns
 * back into the summary (never sent on as a `compaction` item). An altered item, or OpenAI's own on
 * a translated call, is a 400 naming it.
 */
import OpenAI6 from 'openai';
import OpenAI7 from 'openai-v7';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestGateway } from './support/gateway.js';
import { type MockUpstream, wireView } from './support/mock-upstream.js';
import { gatewayWithUpstreams } from './support/upstreams.js';

const CLIENTS = [
  { client: 'openai 6', OpenAI: OpenAI6 as unknown as typeof OpenAI7 },
  { client: 'openai 7', OpenAI: OpenAI7 },
];

const HISTORY = [
  { role: 'user' as const, content: 'Plan a trip to Oslo in May.' },
  { role: 'assistant' as const, content: 'Fly on May 3rd, stay near Aker Brygge.' },
  { role: 'user' as const, content: 'Book the hotel for three nights.' },
];
const SUMMARY =
  'The user plans an Oslo trip in May: flight on May 3rd, a hotel near Aker Brygge for three nights.';

describe.each(CLIENTS)('$client: responses.compact through Gatehouse', ({ OpenAI }) => {
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

  it('an OpenAI model: the body goes to OpenAI /v1/responses/compact as sent (model rewritten), the answer relayed', async () => {
    const res = await openai.responses.compact({
      model: 'test/gpt',
      input: HISTORY,
      instructions: 'Be a travel agent.',
      // Gatehouse's own field: read, never sent on.
      provider: { allow_fallbacks: false },
    } as OpenAI7.Responses.ResponseCompactParams);
    expect(mock.requests).toHaveLength(1);
    const sent = mock.requests[0];
    expect(sent?.path).toBe('/openai/v1/responses/compact');
    expect(sent?.body).toEqual({ model: 'gpt-x', input: HISTORY, instructions: 'Be a travel agent.' });
    expect(res.object).toBe('response.compaction');
    expect(res.output.map((i) => i.type)).toEqual(['message', 'message', 'compaction']);
    expect((res.output[2] as { encrypted_content: string }).encrypted_content).toMatch(/^openai-sealed\./);
    expect(res.usage.input_tokens).toBeGreaterThan(0);
  });

  it('an Anthropic model: one summarizing call, the user messages and a sealed item; the next turn carries the summary', async () => {
    mock.enqueue({ reply: { text: SUMMARY, usage: { prompt_tokens: 40, completion_tokens: 20 } } });
    const { data: res, response } = await openai.responses
      .compact({ model: 'test/claude', input: HISTORY })
      .withResponse();
    expect(response.headers.get('x-gatehouse-route')).toBe('translated');
    // The summarizing call: the conversation as a transcript, under the summarizer's system prompt.
    expect(mock.requests).toHaveLength(1);
    const summarizing = wireView(mock.requests[0]!);
    expect(mock.requests[0]?.format).toBe('anthropic-messages');
    expect(summarizing.system).toContain('summary');
    const asked = JSON.stringify(summarizing.turns);
    for (const m of HISTORY) expect(asked).toContain(m.content);

    expect(res.object).toBe('response.compaction');
    expect(res.usage).toMatchObject({ input_tokens: 40, output_tokens: 20, total_tokens: 60 });
    expect(res.output).toEqual([
      expect.objectContaining({
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: HISTORY[0]?.content }],
      }),
      expect.objectContaining({
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: HISTORY[2]?.content }],
      }),
      expect.objectContaining({
        type: 'compaction',
        encrypted_content: expect.stringMatching(/^gatehouse\.cp1\./),
      }),
    ]);
    const item = res.output[2] as { encrypted_content: string };
    // Opaque: the summary cannot be read from it.
    expect(item.encrypted_content).not.toContain('Oslo');
    expect(Buffer.from(item.encrypted_content.split('.').at(-1) ?? '', 'base64').toString()).not.toContain(
      'Oslo',
    );

    // Billed and recorded as a generation.
    const id = response.headers.get('x-gatehouse-generation-id');
    const gen = await fetch(`${gw.url}/api/v1/generation?id=${id}`, {
      headers: { authorization: `Bearer ${gw.apiKey}` },
    });
    expect(gen.status).toBe(200);
    expect(((await gen.json()) as { data: unknown }).data).toMatchObject({
      tokens_prompt: 40,
      tokens_completion: 20,
    });

    mock.reset();
    const next = await openai.responses.create({
      model: 'test/claude',
      input: [
        ...(res.output as OpenAI7.Responses.ResponseInputItem[]),
        { role: 'user', content: 'And a museum?' },
      ],
    });
    expect(next.output_text).toBeTruthy();
    const sent = mock.requests[0];
    expect(sent?.format).toBe('anthropic-messages');
    const body = JSON.stringify(sent?.body);
    expect(body).toContain(`Summary of the earlier conversation:\\n\\n${SUMMARY}`);
    expect(body).toContain('And a museum?');
    expect(body).not.toContain('compaction');
    expect(body).not.toContain('gatehouse.cp1.');
  });

  it("on an OpenAI model, Gatehouse's item becomes the summary message; OpenAI's own goes as it is", async () => {
    mock.enqueue({ reply: { text: SUMMARY } });
    const ours = await openai.responses.compact({ model: 'test/claude', input: HISTORY });
    const theirs = { type: 'compaction' as const, encrypted_content: 'openai-sealed.abc' };
    mock.reset();
    await openai.responses.create({
      model: 'test/gpt',
      input: [
        ...(ours.output as OpenAI7.Responses.ResponseInputItem[]),
        theirs,
        { role: 'user', content: 'Go on.' },
      ],
    });
    const input = mock.requests[0]?.body.input as Record<string, unknown>[];
    expect(mock.requests[0]?.path).toBe('/openai/v1/responses');
    expect(input.map((i) => i.type ?? i.role)).toEqual([
      'message',
      'message',
      'message',
      'compaction',
      'user',
    ]);
    expect(JSON.stringify(input[2])).toContain(SUMMARY);
    expect(input[3]).toEqual(theirs);
  });

  it('an altered compaction item is a 400 naming it; nothing goes upstream', async () => {
    mock.enqueue({ reply: { text: SUMMARY } });
    const res = await openai.responses.compact({ model: 'test/claude', input: HISTORY });
    const item = res.output[2] as { encrypted_content: string };
    const sealed = item.encrypted_content;
    const tampered = `${sealed.slice(0, -6)}${sealed.slice(-6) === 'AAAAAA' ? 'BBBBBB' : 'AAAAAA'}`;
    mock.reset();
    for (const model of ['test/claude', 'test/gpt']) {
      const err = await openai.responses
        .create({
          model,
          input: [
            { type: 'compaction', encrypted_content: tampered },
            { role: 'user', content: 'Go on.' },
          ],
        })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect((err as Error).message).toContain('input[0].encrypted_content');
    }
    expect(mock.requests).toHaveLength(0);
  });

  it("OpenAI's compaction item on a translated call is a 400 naming it", async () => {
    const err = await openai.responses
      .create({
        model: 'test/claude',
        input: [
          { role: 'user', content: 'Hi' },
          { type: 'compaction', encrypted_content: 'openai-sealed.abc' },
        ],
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as Error).message).toMatch(/input\[1\]: .*encrypted by OpenAI/);
    expect(mock.requests).toHaveLength(0);
  });

  it('a model that writes no summary: a 502, no compaction item', async () => {
    mock.enqueue({ reply: { text: '' } });
    const err = await openai.responses
      .compact({ model: 'test/claude', input: HISTORY })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect((err as { status: number }).status).toBe(502);
    expect((err as Error).message).toContain('returned no summary');
  });

  it('compacts a stored conversation named by previous_response_id', async () => {
    mock.enqueue({ reply: { text: 'Fly on May 3rd.' } });
    const first = await openai.responses.create({ model: 'test/claude', input: 'Plan a trip to Oslo.' });
    mock.enqueue({ reply: { text: SUMMARY } });
    const res = await openai.responses.compact({ model: 'test/claude', previous_response_id: first.id });
    const asked = JSON.stringify(wireView(mock.requests[1]!).turns);
    expect(asked).toContain('Plan a trip to Oslo.');
    expect(asked).toContain('Fly on May 3rd.');
    expect(res.output.map((i) => i.type)).toEqual(['message', 'compaction']);
  });
});
