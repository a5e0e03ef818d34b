import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openTestDatabase } from '../../test/support/database.js';
import { databases } from '../../test/support/gateway.js';
import { encodeReasoningState } from '../formats/reasoning-state.js';
import { ConversationsService } from './conversations.js';
import { type StorableResponse, StoredResponsesService } from './service.js';

const DAY = 86_400_000;
const A = { organizationId: 'org-a', workspaceId: 'ws-a1' };
const A2 = { organizationId: 'org-a', workspaceId: 'ws-a2' };
const B = { organizationId: 'org-b', workspaceId: 'ws-b1' };
const ASC = { limit: 100, order: 'asc' as const, include: [] };

function logs() {
  const warned: string[] = [];
  return { warned, log: { warn: (_: object, msg: string) => warned.push(msg) } };
}

let responses = 0;
/** A response answering `text` (and reasoning items when given). */
function response(text: string, ...before: unknown[]): StorableResponse {
  const n = ++responses;
  return {
    id: `resp_${n}`,
    status: 'completed',
    output: [
      ...before,
      {
        type: 'message',
        id: `msg_out${n}`,
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text, annotations: [] }],
      },
    ],
    store: true,
    previous_response_id: null,
  };
}

/** Each item as `role: text` (or its type). */
function texts(items: unknown[]): string[] {
  return (items as Record<string, any>[]).map((item) => {
    if (item.type && item.type !== 'message') return item.type;
    const text =
      typeof item.content === 'string'
        ? item.content
        : item.content.map((p: { text: string }) => p.text).join('');
    return `${item.role}: ${text}`;
  });
}

describe.each(databases)('conversations (%s)', (kind) => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let clock: number;
  let conversations: ConversationsService;
  let stored: StoredResponsesService;
  beforeAll(async () => {
    db = await openTestDatabase(kind);
  });
  afterAll(async () => {
    await db?.drop();
  });
  beforeEach(() => {
    clock = Date.UTC(2026, 0, 1);
    const deps = { db: db.handle.db, retentionMs: 30 * DAY, now: () => clock };
    conversations = new ConversationsService(deps);
    stored = new StoredResponsesService({ ...deps, conversations });
  });

  /** One `/responses` turn as the endpoint runs it: expand, then save what the model answered. */
  async function turn(scope: typeof A, body: Record<string, unknown>, answer: StorableResponse) {
    const t = await stored.expand(body, scope, logs().log);
    const saved = await stored.save(t, answer, 'anthropic');
    return { sent: t.body as Record<string, unknown>, saved };
  }

  it('creates a conversation with items and metadata; lists them in OpenAI shapes, paged both ways', async () => {
    const conv = await conversations.create(A, {
      metadata: { topic: 'demo' },
      items: [
        { type: 'message', role: 'user', content: 'one' },
        { role: 'assistant', content: 'two' },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'three' }] },
        { type: 'function_call', call_id: 'call_1', name: 'f', arguments: '{}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'done', id: 'fco_mine' },
      ],
    });
    expect(conv).toEqual({
      id: expect.stringMatching(/^conv_[0-9a-f]{48}$/),
      object: 'conversation',
      created_at: Math.floor(clock / 1000),
      metadata: { topic: 'demo' },
    });
    expect(await conversations.get(A, conv.id)).toEqual(conv);

    const all = await conversations.items(A, conv.id, ASC);
    expect(texts(all.data)).toEqual([
      'user: one',
      'assistant: two',
      'user: three',
      'function_call',
      'function_call_output',
    ]);
    expect(all.data[0]).toEqual({
      id: expect.stringMatching(/^msg_/),
      type: 'message',
      role: 'user',
      status: 'completed',
      content: [{ type: 'input_text', text: 'one' }],
    });
    expect(all.data[1]?.content).toEqual([{ type: 'output_text', text: 'two', annotations: [] }]);
    expect(all.data[3]?.id).toMatch(/^fc_/);
    expect(all.data[4]?.id).toBe('fco_mine');
    expect(all).toMatchObject({ first_id: all.data[0]?.id, last_id: 'fco_mine', has_more: false });

    // Newest first by default; pages follow `after`.
    const page1 = await conversations.items(A, conv.id, { limit: 2, order: 'desc', include: [] });
    expect(texts(page1.data)).toEqual(['function_call_output', 'function_call']);
    expect(page1.has_more).toBe(true);
    const page2 = await conversations.items(A, conv.id, {
      limit: 2,
      order: 'desc',
      after: page1.last_id as string,
      include: [],
    });
    expect(texts(page2.data)).toEqual(['user: three', 'assistant: two']);
    const page3 = await conversations.items(A, conv.id, {
      limit: 2,
      order: 'desc',
      after: page2.last_id as string,
      include: [],
    });
    expect(texts(page3.data)).toEqual(['user: one']);
    expect(page3.has_more).toBe(false);
    await expect(conversations.items(A, conv.id, { ...ASC, after: 'msg_nope' })).rejects.toThrow(/after/);
  });

  it('adds items at the end, reads and deletes one, updates metadata, deletes the conversation', async () => {
    const conv = await conversations.create(A, { items: [{ role: 'user', content: 'first' }] });
    const added = await conversations.addItems(A, conv.id, {
      items: [
        { role: 'assistant', content: 'second' },
        { role: 'user', content: 'third' },
      ],
    });
    expect(added).toMatchObject({ object: 'list', has_more: false });
    expect(texts(added.data)).toEqual(['assistant: second', 'user: third']);
    expect(texts((await conversations.items(A, conv.id, ASC)).data)).toEqual([
      'user: first',
      'assistant: second',
      'user: third',
    ]);

    const second = added.data[0]?.id as string;
    expect(await conversations.item(A, conv.id, second)).toEqual(added.data[0]);
    expect(await conversations.deleteItem(A, conv.id, second)).toEqual(conv);
    await expect(conversations.item(A, conv.id, second)).rejects.toThrow(/404|No item/);
    await expect(conversations.deleteItem(A, conv.id, second)).rejects.toThrow(/No item/);
    // A later addition goes after the last item, deleted ones leaving no hole in the list.
    await conversations.addItems(A, conv.id, { items: [{ role: 'assistant', content: 'fourth' }] });
    expect(texts((await conversations.items(A, conv.id, ASC)).data)).toEqual([
      'user: first',
      'user: third',
      'assistant: fourth',
    ]);

    expect((await conversations.update(A, conv.id, { metadata: { a: 'b' } })).metadata).toEqual({ a: 'b' });
    expect((await conversations.update(A, conv.id, { metadata: null })).metadata).toEqual({});

    expect(await conversations.delete(A, conv.id)).toEqual({
      id: conv.id,
      object: 'conversation.deleted',
      deleted: true,
    });
    await expect(conversations.get(A, conv.id)).rejects.toThrow(/No conversation/);
    await expect(conversations.delete(A, conv.id)).rejects.toThrow(/No conversation/);
  });

  it('refuses what OpenAI refuses, naming the field', async () => {
    const many = Array.from({ length: 21 }, () => ({ role: 'user', content: 'x' }));
    await expect(conversations.create(A, { items: many })).rejects.toThrow(/items: at most 20/);
    const meta = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    await expect(conversations.create(A, { metadata: meta })).rejects.toThrow(/metadata: at most 16/);
    await expect(conversations.create(A, { metadata: { n: 1 } })).rejects.toThrow(
      /metadata.n: must be a string/,
    );
    await expect(
      conversations.create(A, { items: [{ type: 'item_reference', id: 'msg_1' }] }),
    ).rejects.toThrow(/items\[0\]: item references/);
    await expect(conversations.create(A, { items: [{ role: 'robot', content: 'x' }] })).rejects.toThrow(
      /items\[0\].role/,
    );
    const conv = await conversations.create(A, {});
    await expect(conversations.addItems(A, conv.id, {})).rejects.toThrow(/items: required/);
    await expect(conversations.update(A, conv.id, {})).rejects.toThrow(/metadata: required/);
    await expect(
      stored.expand(
        { model: 'm', input: 'x', conversation: conv.id, previous_response_id: 'resp_1' },
        A,
        logs().log,
      ),
    ).rejects.toThrow(/conversation: cannot be used together with previous_response_id/);
    await expect(stored.expand({ model: 'm', input: 'x', conversation: 7 }, A, logs().log)).rejects.toThrow(
      /conversation: must be/,
    );
  });

  it('a /responses turn: the conversation goes before the input, the turn is added after it', async () => {
    const conv = await conversations.create(A, { items: [{ role: 'user', content: 'my name is Ada' }] });
    const first = await turn(
      A,
      { model: 'm', instructions: 'be brief', input: 'hello', conversation: conv.id },
      response('Hello Ada.'),
    );
    // The provider gets the whole conversation and never the field.
    expect(first.sent).not.toHaveProperty('conversation');
    expect(texts(first.sent.input as unknown[])).toEqual(['user: my name is Ada', 'user: hello']);
    expect(first.saved.conversation).toEqual({ id: conv.id });

    const second = await turn(
      A,
      { model: 'm', input: [{ role: 'user', content: 'my name?' }], conversation: { id: conv.id } },
      response('Ada.'),
    );
    expect(texts(second.sent.input as unknown[])).toEqual([
      'user: my name is Ada',
      'user: hello',
      'assistant: Hello Ada.',
      'user: my name?',
    ]);
    const listed = await conversations.items(A, conv.id, ASC);
    expect(texts(listed.data)).toEqual([
      'user: my name is Ada',
      'user: hello',
      'assistant: Hello Ada.',
      'user: my name?',
      'assistant: Ada.',
    ]);
    // Output items keep the ids the response gave them.
    expect(listed.data[2]?.id).toBe((first.saved.output[0] as { id: string }).id);

    // A failed response adds nothing; store: false still adds the turn (the conversation is its own store).
    await turn(
      A,
      { model: 'm', input: 'boom', conversation: conv.id },
      { ...response('x'), status: 'failed' },
    );
    await turn(A, { model: 'm', input: 'quiet', store: false, conversation: conv.id }, response('ok'));
    expect(texts((await conversations.items(A, conv.id, ASC)).data).slice(5)).toEqual([
      'user: quiet',
      'assistant: ok',
    ]);
  });

  it('a streamed turn is added once its final response has gone out', async () => {
    const conv = await conversations.create(A, {});
    const t = await stored.expand({ model: 'm', input: 'stream it', conversation: conv.id }, A, logs().log);
    const final = response('streamed');
    async function* events() {
      yield {
        event: 'response.created',
        data: { response: { ...final, output: [], status: 'in_progress' } },
      };
      yield { event: 'response.completed', data: { response: final } };
    }
    const seen: unknown[] = [];
    for await (const e of stored.tap(t, events(), 'anthropic')) seen.push(e.data);
    expect(seen).toEqual([
      { response: expect.objectContaining({ conversation: { id: conv.id } }) },
      { response: expect.objectContaining({ conversation: { id: conv.id } }) },
    ]);
    expect(texts((await conversations.items(A, conv.id, ASC)).data)).toEqual([
      'user: stream it',
      'assistant: streamed',
    ]);
  });

  it("reasoning state round-trips; summaries without a provider's state are not sent again", async () => {
    const state = encodeReasoningState([{ type: 'reasoning.text', text: 'think', signature: 'sig-1' }]);
    const withState = { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: state };
    const summaryOnly = { type: 'reasoning', id: 'rs_2', summary: [{ type: 'summary_text', text: 's' }] };
    const conv = await conversations.create(A, {});
    await turn(A, { model: 'm', input: 'q1', conversation: conv.id }, response('a1', withState, summaryOnly));
    const next = await turn(A, { model: 'm', input: 'q2', conversation: conv.id }, response('a2'));
    const sent = next.sent.input as Record<string, unknown>[];
    expect(sent.filter((i) => i.type === 'reasoning')).toEqual([withState]);
    // Listed, both are there.
    const listed = await conversations.items(A, conv.id, ASC);
    expect(listed.data.filter((i) => i.type === 'reasoning').map((i) => i.id)).toEqual(['rs_1', 'rs_2']);
  });

  it("is the workspace's own: another workspace or organization gets 404 everywhere", async () => {
    const conv = await conversations.create(A, { items: [{ role: 'user', content: 'private' }] });
    const item = (await conversations.items(A, conv.id, ASC)).data[0]?.id as string;
    for (const other of [A2, B]) {
      await expect(conversations.get(other, conv.id)).rejects.toThrow(/No conversation/);
      await expect(conversations.items(other, conv.id, ASC)).rejects.toThrow(/No conversation/);
      await expect(conversations.item(other, conv.id, item)).rejects.toThrow(/No conversation/);
      await expect(
        conversations.addItems(other, conv.id, { items: [{ role: 'user', content: 'x' }] }),
      ).rejects.toThrow(/No conversation/);
      await expect(conversations.deleteItem(other, conv.id, item)).rejects.toThrow(/No conversation/);
      await expect(conversations.update(other, conv.id, { metadata: {} })).rejects.toThrow(/No conversation/);
      await expect(conversations.delete(other, conv.id)).rejects.toThrow(/No conversation/);
      await expect(
        stored.expand({ model: 'm', input: 'x', conversation: conv.id }, other, logs().log),
      ).rejects.toMatchObject({
        status: 404,
        message: expect.stringMatching(/^conversation: no conversation/),
      });
    }
    expect(texts((await conversations.items(A, conv.id, ASC)).data)).toEqual(['user: private']);
  });

  it('is kept the retention after its last write, then purged with its items', async () => {
    const conv = await conversations.create(A, { items: [{ role: 'user', content: 'old' }] });
    clock += 20 * DAY;
    await conversations.addItems(A, conv.id, { items: [{ role: 'user', content: 'newer' }] });
    clock += 20 * DAY;
    // 40 days after it was created, 20 after its last write: still there.
    expect((await conversations.items(A, conv.id, ASC)).data).toHaveLength(2);
    clock += 11 * DAY;
    await expect(conversations.get(A, conv.id)).rejects.toThrow(/No conversation/);
    expect(await stored.purgeExpired()).toBeGreaterThanOrEqual(1);
    const left = await db.handle.db
      .selectFrom('conversation_items')
      .select('id')
      .where('conversation_id', '=', conv.id)
      .execute();
    expect(left).toEqual([]);
  });

  it('with retention 0 no conversation is created', async () => {
    const off = new ConversationsService({ db: db.handle.db, retentionMs: 0 });
    await expect(off.create(A, {})).rejects.toThrow(/not kept/);
  });

  it('concurrent additions to one conversation all land, in distinct places', async () => {
    const conv = await conversations.create(A, {});
    await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        conversations.addItems(A, conv.id, {
          items: [
            { role: 'user', content: `q${i}` },
            { role: 'assistant', content: `a${i}` },
          ],
        }),
      ),
    );
    const listed = texts((await conversations.items(A, conv.id, ASC)).data);
    expect(listed).toHaveLength(16);
    // Each call's two items stay together.
    for (let i = 0; i < 16; i += 2) expect(listed[i + 1]?.slice(-1)).toBe(listed[i]?.slice(-1));
  });
});
