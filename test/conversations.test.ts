/**
 * OpenAI's Conversations API through a real gateway, with the official `openai` client, against
 * mock upstreams speaking the real wire formats: a conversation created with items, continued with
 * `responses.create({conversation})` on an OpenAI model (passed through) and an Anthropic one
 * (translated), streamed and not — the upstream gets the whole conversation and never the field —
 * then its items listed, paged, read and deleted; a failed call adds nothing; other workspaces and
 * organizations get 404 everywhere.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, otherTenants } from './support/http.js';
import { type MockUpstream, wireView } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

const MODELS = { openai: 'test/gpt', anthropic: 'test/claude' } as const;

/** The conversation an upstream request carried, one line per turn. */
function sent(mock: MockUpstream, index: number): string[] {
  const req = mock.requests[index];
  if (!req) throw new Error(`no upstream request ${index}`);
  return wireView(req).turns.map((t) => `${t.role}: ${t.text}`);
}

/** Each listed item as `role: text`. */
const texts = (items: OpenAI.Conversations.ConversationItem[]) =>
  items.map((i) =>
    i.type === 'message'
      ? `${i.role}: ${i.content.map((p) => ('text' in p ? p.text : '')).join('')}`
      : i.type,
  );

describe.each(databases)('conversations (%s)', (db) => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let openai: OpenAI;
  let call: ReturnType<typeof client>;
  const others: { name: string; key: string }[] = [];
  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway(db, { env: up.env });
    const admin = adminClient(gw.url);
    await admin('POST', '/admin/credits', { organization_id: gw.organizationId, amount_usd: 100 });
    openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    call = client(gw.url, gw.apiKey);
    others.push(...(await otherTenants(gw, `Other ${db}`, 10)));
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  describe.each(Object.entries(MODELS))('served by %s', (kind, model) => {
    it('responses.create({conversation}), plain then streamed: the upstream gets the whole conversation', async () => {
      const conv = await openai.conversations.create({
        metadata: { topic: 'names' },
        items: [
          { type: 'message', role: 'user', content: 'My name is Ada.' },
          { type: 'message', role: 'assistant', content: 'Noted.' },
        ],
      });
      expect(conv).toMatchObject({ object: 'conversation', metadata: { topic: 'names' } });
      expect(conv.id).toMatch(/^conv_/);

      mock.enqueue({ reply: { text: 'Hello Ada.' } }, { reply: { text: 'You are Ada.' } });
      const first = await openai.responses.create({ model, conversation: conv.id, input: 'Hello!' });
      expect(first.output_text).toBe('Hello Ada.');
      expect(first.conversation).toEqual({ id: conv.id });
      expect(mock.requests[0]?.format).toBe(kind === 'openai' ? 'openai-responses' : 'anthropic-messages');
      expect(mock.requests[0]?.body).not.toHaveProperty('conversation');
      expect(sent(mock, 0)).toEqual(['user: My name is Ada.', 'assistant: Noted.', 'user: Hello!']);

      const stream = await openai.responses.create({
        model,
        conversation: { id: conv.id },
        input: 'Who am I?',
        stream: true,
      });
      let done: OpenAI.Responses.Response | null = null;
      for await (const e of stream) if (e.type === 'response.completed') done = e.response;
      expect(done?.conversation).toEqual({ id: conv.id });
      expect(mock.requests[1]?.body).not.toHaveProperty('conversation');
      expect(sent(mock, 1)).toEqual([
        'user: My name is Ada.',
        'assistant: Noted.',
        'user: Hello!',
        'assistant: Hello Ada.',
        'user: Who am I?',
      ]);

      // The streamed turn was added before its stream ended.
      const items = await openai.conversations.items.list(conv.id, { order: 'asc' });
      expect(texts(items.data)).toEqual([
        'user: My name is Ada.',
        'assistant: Noted.',
        'user: Hello!',
        'assistant: Hello Ada.',
        'user: Who am I?',
        'assistant: You are Ada.',
      ]);
      expect(items.data[3]?.id).toBe(first.output[0]?.id);
      expect(items.data[0]).toMatchObject({
        type: 'message',
        status: 'completed',
        content: [{ type: 'input_text', text: 'My name is Ada.' }],
      });
    });
  });

  it('a conversation changes providers between turns: Anthropic, then OpenAI', async () => {
    const conv = await openai.conversations.create({});
    mock.enqueue({ reply: { text: 'Claude here.' } }, { reply: { text: 'GPT here.' } });
    await openai.responses.create({ model: MODELS.anthropic, conversation: conv.id, input: 'hi' });
    await openai.responses.create({ model: MODELS.openai, conversation: conv.id, input: 'and you?' });
    expect(mock.requests[1]?.format).toBe('openai-responses');
    expect(sent(mock, 1)).toEqual(['user: hi', 'assistant: Claude here.', 'user: and you?']);
  });

  it('lists items newest first in pages the client follows; reads, adds and deletes items; deletes the conversation', async () => {
    const conv = await openai.conversations.create({
      items: Array.from({ length: 5 }, (_, i) => ({
        type: 'message' as const,
        role: i % 2 ? ('assistant' as const) : ('user' as const),
        content: `m${i}`,
      })),
    });
    const page = await openai.conversations.items.list(conv.id, { limit: 2 });
    expect(texts(page.data)).toEqual(['user: m4', 'assistant: m3']);
    expect(page.has_more).toBe(true);
    expect(page.last_id).toBe(page.data[1]?.id);
    const all: string[] = [];
    for await (const item of openai.conversations.items.list(conv.id, { limit: 2 }))
      all.push(...texts([item]));
    expect(all).toEqual(['user: m4', 'assistant: m3', 'user: m2', 'assistant: m1', 'user: m0']);

    const added = await openai.conversations.items.create(conv.id, {
      items: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'm5' }] }],
    });
    expect(texts(added.data)).toEqual(['user: m5']);
    const id = added.data[0]?.id as string;
    const one = await openai.conversations.items.retrieve(id, { conversation_id: conv.id });
    expect(one).toEqual(added.data[0]);
    const afterDelete = await openai.conversations.items.delete(id, { conversation_id: conv.id });
    expect(afterDelete).toEqual(conv);
    await expect(
      openai.conversations.items.retrieve(id, { conversation_id: conv.id }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);

    const updated = await openai.conversations.update(conv.id, { metadata: { k: 'v' } });
    expect(updated.metadata).toEqual({ k: 'v' });
    expect(await openai.conversations.retrieve(conv.id)).toEqual(updated);

    expect(await openai.conversations.delete(conv.id)).toEqual({
      id: conv.id,
      object: 'conversation.deleted',
      deleted: true,
    });
    await expect(openai.conversations.retrieve(conv.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const res = await call('POST', '/responses', { model: MODELS.openai, conversation: conv.id, input: 'x' });
    expect(res.status).toBe(404);
    expect(res.body.error.message).toContain(conv.id);
    expect(mock.requests).toHaveLength(0);
  });

  it('a failed call adds nothing to the conversation', async () => {
    const conv = await openai.conversations.create({
      items: [{ type: 'message', role: 'user', content: 'a' }],
    });
    mock.enqueue({ status: 400, error: { message: 'bad request upstream' } });
    await expect(
      openai.responses.create({ model: MODELS.anthropic, conversation: conv.id, input: 'fails' }),
    ).rejects.toThrow();
    mock.enqueue({ reply: { text: 'partial' }, dieAfterEvents: 2 });
    const stream = await openai.responses.create({
      model: MODELS.openai,
      conversation: conv.id,
      input: 'dies',
      stream: true,
    });
    await expect(async () => {
      for await (const e of stream) if (e.type === 'error') throw new Error('stream failed');
    }).rejects.toThrow();
    const items = await openai.conversations.items.list(conv.id, { order: 'asc' });
    expect(texts(items.data)).toEqual(['user: a']);
  });

  it('refuses bad input with a 400 naming the field; management keys get 403', async () => {
    const conv = await openai.conversations.create({});
    const both = await call('POST', '/responses', {
      model: MODELS.openai,
      conversation: conv.id,
      previous_response_id: 'resp_x',
      input: 'x',
    });
    expect(both.status).toBe(400);
    expect(both.body.error.message).toBe('conversation: cannot be used together with previous_response_id');
    const many = await call('POST', `/conversations/${conv.id}/items`, {
      items: Array.from({ length: 21 }, () => ({ role: 'user', content: 'x' })),
    });
    expect(many.status).toBe(400);
    expect(many.body.error.message).toContain('items: at most 20');
    const badRole = await call('POST', '/conversations', { items: [{ role: 'robot', content: 'x' }] });
    expect(badRole.status).toBe(400);
    expect(badRole.body.error.message).toContain('items[0].role');
    const badAfter = await call('GET', `/conversations/${conv.id}/items?after=msg_nope`);
    expect(badAfter.status).toBe(400);
    const empty = await fetch(`${gw.url}/api/v1/conversations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.apiKey}` },
    });
    expect(empty.status).toBe(200);
    const mgmt = client(gw.url, gw.managementKey);
    expect((await mgmt('POST', '/conversations', {})).status).toBe(403);
    expect((await mgmt('GET', `/conversations/${conv.id}`)).status).toBe(403);
    expect(mock.requests).toHaveLength(0);
  });

  it("never shows another workspace's or organization's conversation: 404 on every path, and it stays", async () => {
    const conv = await openai.conversations.create({
      items: [{ type: 'message', role: 'user', content: 'Private.' }],
    });
    const item = (await openai.conversations.items.list(conv.id)).data[0]?.id as string;
    for (const other of others) {
      const as = client(gw.url, other.key);
      for (const [method, path, body] of [
        ['GET', `/conversations/${conv.id}`],
        ['POST', `/conversations/${conv.id}`, { metadata: { stolen: 'yes' } }],
        ['DELETE', `/conversations/${conv.id}`],
        ['GET', `/conversations/${conv.id}/items`],
        ['POST', `/conversations/${conv.id}/items`, { items: [{ role: 'user', content: 'injected' }] }],
        ['GET', `/conversations/${conv.id}/items/${item}`],
        ['DELETE', `/conversations/${conv.id}/items/${item}`],
        ['POST', '/responses', { model: MODELS.openai, conversation: conv.id, input: 'x' }],
      ] as const) {
        const res = await as(method, path, body);
        expect([other.name, method, path, res.status]).toEqual([other.name, method, path, 404]);
        expect(res.text).not.toContain('Private.');
      }
    }
    expect(mock.requests).toHaveLength(0);
    const items = await openai.conversations.items.list(conv.id);
    expect(texts(items.data)).toEqual(['user: Private.']);
    expect((await openai.conversations.retrieve(conv.id)).metadata).toEqual({});
  });
});
