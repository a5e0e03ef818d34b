/**
 * Stored responses through a real gateway and mock upstreams speaking the real wire formats: a
 * turn stored, then continued with `previous_response_id` or `item_reference` inputs on an
 * OpenAI-format and an Anthropic-format provider (and across them); GET and DELETE; other
 * workspaces' and organizations' keys see nothing; `store: false` stores nothing.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, otherTenants } from './support/http.js';
import { type MockUpstream, wireView } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

const MODELS = { openai: 'test/gpt', anthropic: 'test/claude' } as const;

/** The conversation an upstream request carried, one line per turn. */
function conversation(mock: MockUpstream, index: number): string[] {
  const req = mock.requests[index];
  if (!req) throw new Error(`no upstream request ${index}`);
  return wireView(req).turns.map((t) =>
    [
      `${t.role}:`,
      t.text,
      ...t.toolCalls.map((c) => `call ${c.name}(${JSON.stringify(c.args)})`),
      ...t.toolResults.map((r) => `result ${JSON.stringify(r.content)}`),
    ]
      .filter(Boolean)
      .join(' '),
  );
}

describe.each(databases)('stored responses (%s)', (db) => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let openai: OpenAI;
  let call: ReturnType<typeof client>;
  /** The owner's second workspace's API key, and another organization's. */
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

  describe.each(Object.entries(MODELS))('served by %s', (_kind, model) => {
    it('continues a stored turn with previous_response_id: the upstream gets the earlier turns', async () => {
      mock.enqueue({ reply: { text: 'Hi, I am the model.' } }, { reply: { text: 'You said hi.' } });
      const first = await openai.responses.create({ model, instructions: 'be brief', input: 'hi' });
      expect(first).toMatchObject({
        store: true,
        previous_response_id: null,
        output_text: 'Hi, I am the model.',
      });
      expect(first.id).toMatch(/^resp_/);

      const second = await openai.responses.create({
        model,
        previous_response_id: first.id,
        input: 'what did I say?',
      });
      expect(second).toMatchObject({
        store: true,
        previous_response_id: first.id,
        output_text: 'You said hi.',
      });
      expect(conversation(mock, 1)).toEqual([
        'user: hi',
        'assistant: Hi, I am the model.',
        'user: what did I say?',
      ]);
      // Instructions belong to their own request (as on OpenAI): the first turn's are not carried.
      expect(wireView(mock.requests[1]!).system).toBeNull();
    });

    it('resolves item_reference inputs in a tool loop (text, reasoning and function call items)', async () => {
      mock.enqueue(
        {
          reply: {
            reasoning: 'The user wants weather.',
            text: 'Let me look.',
            tool_calls: [{ id: 'call_w1', name: 'weather', arguments: { city: 'Oslo' } }],
          },
        },
        { reply: { text: 'Sunny in Oslo.' } },
      );
      const tools = [
        {
          type: 'function' as const,
          name: 'weather',
          description: 'Weather of a city',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
          strict: false,
        },
      ];
      const first = await openai.responses.create({ model, input: 'Weather in Oslo?', tools });
      const kinds = first.output.map((item) => item.type);
      expect(kinds).toEqual(['reasoning', 'message', 'function_call']);
      const fc = first.output.find((item) => item.type === 'function_call');
      if (fc?.type !== 'function_call') throw new Error('no function call');

      const second = await openai.responses.create({
        model,
        tools,
        input: [
          { role: 'user', content: 'Weather in Oslo?' },
          ...first.output.map((item) => ({ type: 'item_reference' as const, id: item.id as string })),
          { type: 'function_call_output', call_id: fc.call_id, output: 'sunny' },
        ],
      });
      expect(second.output_text).toBe('Sunny in Oslo.');
      expect(conversation(mock, 1)).toEqual([
        'user: Weather in Oslo?',
        'assistant: Let me look. call weather({"city":"Oslo"})',
        'user: result "sunny"',
      ]);
    });

    it('stores a streamed response under its id once the stream is done', async () => {
      mock.enqueue({ reply: { text: 'Streamed hello.' } }, { reply: { text: 'Again.' } });
      const stream = await openai.responses.create({ model, input: 'stream please', stream: true });
      let done: OpenAI.Responses.Response | null = null;
      const ids = new Set<string>();
      for await (const e of stream) {
        if ('response' in e) ids.add(e.response.id);
        if (e.type === 'response.completed') done = e.response;
      }
      if (!done) throw new Error('no response.completed');
      expect(ids).toEqual(new Set([done.id])); // one id from created to completed
      expect(done).toMatchObject({ store: true });
      const stored = await openai.responses.retrieve(done.id);
      expect(stored.output).toEqual(done.output);
      expect(stored.output_text).toBe('Streamed hello.');

      await openai.responses.create({ model, previous_response_id: done.id, input: 'more' });
      expect(conversation(mock, 1)).toEqual([
        'user: stream please',
        'assistant: Streamed hello.',
        'user: more',
      ]);
    });

    it('a stream cut off mid-way: its response.failed says store as the snapshots before it did, and nothing is stored', async () => {
      mock.enqueue({ reply: { text: 'This answer will not arrive whole.' }, dieAfterEvents: 2 });
      const stream = await openai.responses.create({ model, input: 'stream please', stream: true });
      const snapshots: { type: string; store: unknown; id: string }[] = [];
      const types: string[] = [];
      for await (const e of stream) {
        types.push(e.type);
        if ('response' in e)
          snapshots.push({
            type: e.type,
            store: (e.response as { store?: unknown }).store,
            id: e.response.id,
          });
      }
      expect(types.slice(-2)).toEqual(['response.failed', 'error']);
      expect(snapshots.length).toBeGreaterThan(1);
      for (const s of snapshots) expect(s.store).toBe(true);
      expect((await call('GET', `/responses/${snapshots[0]?.id}`)).status).toBe(404);
    });
  });

  it('continues on another provider: a conversation stored from Anthropic, with its reasoning, goes to OpenAI', async () => {
    mock.enqueue(
      { reply: { reasoning: 'Thinking in Claude.', text: 'Claude here.' } },
      { reply: { text: 'GPT here.' } },
    );
    const first = await openai.responses.create({ model: MODELS.anthropic, input: 'hello' });
    expect(first.output.map((i) => i.type)).toEqual(['reasoning', 'message']);
    const second = await openai.responses.create({
      model: MODELS.openai,
      previous_response_id: first.id,
      input: 'and you?',
    });
    expect(second.output_text).toBe('GPT here.');
    // OpenAI serves /responses natively: the earlier turns go to its Responses API as input items
    // (the Anthropic turn's unsigned reasoning summary is not sent back).
    expect(mock.requests[1]?.format).toBe('openai-responses');
    expect(JSON.stringify(mock.requests[1]?.body.input)).not.toContain('Thinking in Claude.');
    expect(conversation(mock, 1)).toEqual(['user: hello', 'assistant: Claude here.', 'user: and you?']);
  });

  it('GET returns the stored response; DELETE removes it, in the shapes OpenAI uses', async () => {
    mock.enqueue({ reply: { text: 'Keep me.' } });
    const created = await openai.responses.create({ model: MODELS.openai, input: 'store this' });
    const got = await call('GET', `/responses/${created.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(JSON.parse(JSON.stringify(created)));
    expect((await openai.responses.retrieve(created.id)).output_text).toBe('Keep me.');

    const deleted = await call('DELETE', `/responses/${created.id}`);
    expect(deleted).toMatchObject({
      status: 200,
      body: { id: created.id, object: 'response', deleted: true },
    });
    const gone = await call('GET', `/responses/${created.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body.error.message).toContain(created.id);
    expect((await call('DELETE', `/responses/${created.id}`)).status).toBe(404);
    const follow = await call('POST', '/responses', {
      model: MODELS.openai,
      previous_response_id: created.id,
      input: 'x',
    });
    expect(follow.status).toBe(404);
    expect(follow.body.error.message).toContain(created.id);
    expect(mock.requests).toHaveLength(1); // the refused follow-up never went upstream
  });

  it.each(
    Object.entries(MODELS),
  )('background: true (%s) is served in the foreground: the answer is done, and a poll of it reads the same', async (_kind, model) => {
    mock.enqueue({ reply: { text: 'Done in the foreground.' } });
    const res = await openai.responses
      .create({ model, input: 'take your time', background: true })
      .withResponse();
    expect(res.data.status).toBe('completed');
    expect(res.data.output_text).toBe('Done in the foreground.');
    expect(res.response.headers.get('x-gatehouse-dropped-fields')).toContain('background');
    // OpenAI would have answered `queued` and finished it out of Gatehouse's sight (nor billed).
    expect(mock.requests[0]?.body.background).toBeUndefined();
    // A client's polling loop ends at once.
    const polled = await openai.responses.retrieve(res.data.id);
    expect(polled).toMatchObject({
      id: res.data.id,
      status: 'completed',
      output_text: 'Done in the foreground.',
    });
  });

  it("never shows another workspace's or organization's responses: 404 on every path, and they stay", async () => {
    mock.enqueue({ reply: { text: 'Private.' } });
    const mine = await openai.responses.create({ model: MODELS.openai, input: 'mine' });
    const item = mine.output[0]?.id as string;
    for (const other of others) {
      const as = client(gw.url, other.key);
      for (const [method, path] of [
        ['GET', `/responses/${mine.id}`],
        ['DELETE', `/responses/${mine.id}`],
      ] as const) {
        const res = await as(method, path);
        expect([other.name, res.status, typeof res.body.error?.message]).toEqual([other.name, 404, 'string']);
      }
      const prev = await as('POST', '/responses', {
        model: MODELS.openai,
        previous_response_id: mine.id,
        input: 'x',
      });
      expect([other.name, prev.status]).toEqual([other.name, 404]);
      expect(prev.body.error.message).toContain(mine.id);
      const ref = await as('POST', '/responses', {
        model: MODELS.openai,
        input: [{ type: 'item_reference', id: item }],
      });
      expect([other.name, ref.status]).toEqual([other.name, 404]);
      expect(ref.body.error.message).toContain(item);
      expect(JSON.stringify([prev.body, ref.body])).not.toContain('Private.');
    }
    expect(mock.requests).toHaveLength(1);
    expect((await call('GET', `/responses/${mine.id}`)).status).toBe(200);
  });

  it('stores nothing with store: false', async () => {
    mock.enqueue({ reply: { text: 'Forget me.' } }, { reply: { text: 'Forget me too.' } });
    const res = await openai.responses.create({ model: MODELS.openai, input: 'x', store: false });
    expect(res).toMatchObject({ store: false });
    const stream = await openai.responses.create({
      model: MODELS.openai,
      input: 'y',
      store: false,
      stream: true,
    });
    let streamed = '';
    for await (const e of stream) if (e.type === 'response.completed') streamed = e.response.id;
    for (const id of [res.id, streamed]) expect((await call('GET', `/responses/${id}`)).status).toBe(404);
    const rows = await gw.services.db
      .selectFrom('stored_responses')
      .select('id')
      .where('id', 'in', [res.id, streamed])
      .execute();
    expect(rows).toEqual([]);
  });

  it('refuses malformed references with a 400 naming the field, and unknown ids with a 404 naming them', async () => {
    const bad = await call('POST', '/responses', {
      model: MODELS.openai,
      input: 'x',
      previous_response_id: 7,
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toBe('previous_response_id: must be a non-empty string');
    const unknown = await call('POST', '/responses', {
      model: MODELS.openai,
      input: ['hi', { type: 'item_reference', id: 'msg_nope' }].map((x) =>
        typeof x === 'string' ? { role: 'user', content: x } : x,
      ),
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.message).toBe("input[1]: no stored item with id 'msg_nope' in this workspace");
    expect(mock.requests).toHaveLength(0);
  });
});
