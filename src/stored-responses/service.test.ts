/**
 * The stored-responses service over a real database (SQLite and PostgreSQL): what a turn stores,
 * how a later body is expanded from it, scoping, deletion, retention and purge.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openTestDatabase } from '../../test/support/database.js';
import { databases } from '../../test/support/gateway.js';
import { type StorableResponse, StoredResponsesService } from './service.js';

const DAY = 86_400_000;
const A = { organizationId: 'org-a', workspaceId: 'ws-a1' };
const A2 = { organizationId: 'org-a', workspaceId: 'ws-a2' };
const B = { organizationId: 'org-b', workspaceId: 'ws-b1' };

/** Collects what the service logs. */
function logs() {
  const warned: string[] = [];
  return { warned, log: { warn: (_: object, msg: string) => warned.push(msg) } };
}

/** A response as the endpoint builds it: one message item, and a function call when asked. */
function response(id: string, text: string, call?: { name: string; args: string }): StorableResponse {
  const base = id.replace(/^resp_/, '');
  const output: unknown[] = [
    {
      type: 'message',
      id: `msg_${base}_0`,
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
    },
  ];
  if (call)
    output.push({
      type: 'function_call',
      id: `fc_${base}_1`,
      call_id: `call_${base}`,
      name: call.name,
      arguments: call.args,
      status: 'completed',
    });
  return { id, status: 'completed', output, store: false, previous_response_id: null };
}

/** Each input item of a body as `role: text`. */
function texts(body: unknown): string[] {
  return ((body as { input: Record<string, unknown>[] }).input ?? []).map((item) => {
    if (item.type === 'function_call') return `call: ${item.name}(${item.arguments})`;
    if (item.type === 'function_call_output') return `result: ${item.output}`;
    const content = item.content;
    const text =
      typeof content === 'string' ? content : (content as { text: string }[]).map((p) => p.text).join('');
    return `${item.role}: ${text}`;
  });
}

describe.each(databases)('stored responses (%s)', (kind) => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let clock: number;
  let service: StoredResponsesService;
  beforeAll(async () => {
    db = await openTestDatabase(kind);
  });
  afterAll(async () => {
    await db?.drop();
  });
  beforeEach(() => {
    clock = Date.UTC(2026, 0, 1);
    service = new StoredResponsesService({ db: db.handle.db, retentionMs: 30 * DAY, now: () => clock });
  });
  const fresh = (prefix: string) => `resp_${prefix}${randomBytes(4).toString('hex')}`;

  /** One turn end to end, as the endpoint runs it: expand, then save what the model answered. */
  async function turn(scope: typeof A, body: Record<string, unknown>, answer: StorableResponse) {
    const t = await service.expand(body, scope, logs().log);
    const saved = await service.save(t, answer, 'anthropic');
    return { expanded: t.body as Record<string, unknown>, saved };
  }

  it('stores a turn by default and rebuilds the conversation for previous_response_id', async () => {
    const first = fresh('a');
    const r1 = await turn(A, { model: 'm', instructions: 'be brief', input: 'hi' }, response(first, 'hello'));
    expect(r1.saved).toMatchObject({ id: first, store: true, previous_response_id: null });

    const second = fresh('b');
    const r2 = await turn(
      A,
      { model: 'm', previous_response_id: first, input: [{ role: 'user', content: 'again' }] },
      response(second, 'hello again'),
    );
    expect(r2.saved).toMatchObject({ store: true, previous_response_id: first });
    // Earlier instructions are not carried (as OpenAI does); earlier input and output are.
    expect(r2.expanded).toEqual({
      model: 'm',
      input: [
        { type: 'message', role: 'user', content: 'hi' },
        response(first, 'hello').output[0],
        { role: 'user', content: 'again' },
      ],
    });

    // A third turn continues both, in order.
    const t3 = await service.expand(
      { model: 'm', previous_response_id: second, input: 'third' },
      A,
      logs().log,
    );
    expect(texts(t3.body)).toEqual([
      'user: hi',
      'assistant: hello',
      'user: again',
      'assistant: hello again',
      'user: third',
    ]);
    expect(t3.chain).toEqual([first, second]);
  });

  /** The error a promise rejects with, as `status message`. */
  const refusal = (p: Promise<unknown>) =>
    p.then(
      () => 'resolved',
      (err: { status?: number; message: string }) => `${err.status} ${err.message}`,
    );

  it('replaces item_reference inputs with the stored items, in place', async () => {
    const id = fresh('c');
    await turn(
      A,
      { model: 'm', input: 'weather?' },
      response(id, 'Looking.', { name: 'weather', args: '{}' }),
    );
    const base = id.replace('resp_', '');
    const t = await service.expand(
      {
        model: 'm',
        input: [
          { role: 'user', content: 'weather?' },
          { type: 'item_reference', id: `msg_${base}_0` },
          { id: `fc_${base}_1` }, // a bare reference, as OpenAI accepts it
          { type: 'function_call_output', call_id: `call_${base}`, output: 'sunny' },
        ],
      },
      A,
      logs().log,
    );
    expect(texts(t.body)).toEqual([
      'user: weather?',
      'assistant: Looking.',
      'call: weather({})',
      'result: sunny',
    ]);
    // What is stored for this turn is the resolved input.
    expect(texts({ input: t.input })).toEqual(texts(t.body));
    expect(t.chain).toEqual([]);
  });

  it("answers 404 naming the id for unknown ids and for another workspace's or organization's", async () => {
    const id = fresh('d');
    await turn(A, { model: 'm', input: 'mine' }, response(id, 'yours'));
    const item = `msg_${id.replace('resp_', '')}_0`;
    for (const scope of [A2, B]) {
      expect(
        await refusal(
          service.expand({ model: 'm', previous_response_id: id, input: 'x' }, scope, logs().log),
        ),
      ).toBe(
        `404 previous_response_id: no stored response with id '${id}' in this workspace (it may have expired or been deleted)`,
      );
      expect(
        await refusal(
          service.expand({ model: 'm', input: [{ type: 'item_reference', id: item }] }, scope, logs().log),
        ),
      ).toBe(`404 input[0]: no stored item with id '${item}' in this workspace`);
      expect(await refusal(service.get(scope, id))).toBe(
        `404 No stored response with id '${id}' in this workspace`,
      );
      expect(await refusal(service.delete(scope, id))).toBe(
        `404 No stored response with id '${id}' in this workspace`,
      );
    }
    // Still there for its own workspace.
    expect((await service.get(A, id)).id).toBe(id);
  });

  it('refuses malformed references with a 400 naming the field', async () => {
    const bad = (body: Record<string, unknown>) =>
      refusal(service.expand({ model: 'm', ...body }, A, logs().log));
    expect(await bad({ input: 'x', store: 'yes' })).toBe('400 store: must be a boolean');
    expect(await bad({ input: 'x', previous_response_id: 5 })).toBe(
      '400 previous_response_id: must be a non-empty string',
    );
    expect(await bad({ input: ['x', { type: 'item_reference' }] })).toBe(
      '400 input[1].id: must be a non-empty string',
    );
  });

  it('stores nothing with store: false, with retention 0, or for a management key', async () => {
    const off = new StoredResponsesService({ db: db.handle.db, retentionMs: 0, now: () => clock });
    const cases = [
      [service, { model: 'm', input: 'x', store: false }, A],
      [off, { model: 'm', input: 'x' }, A],
      [service, { model: 'm', input: 'x' }, { ...A, isManagement: true }],
    ] as const;
    for (const [svc, body, caller] of cases) {
      const id = fresh('e');
      const t = await svc.expand(body, caller, logs().log);
      expect(t.store).toBe(false);
      expect((await svc.save(t, response(id, 'x'), 'openai')).store).toBe(false);
      expect(await refusal(service.get(A, id))).toMatch(/^404 /);
    }
  });

  it('returns the stored response; DELETE removes it and its items, and a later turn naming it is a 404', async () => {
    const first = fresh('f');
    const second = fresh('g');
    await turn(A, { model: 'm', input: 'one' }, response(first, 'uno'));
    const { saved } = await turn(
      A,
      { model: 'm', previous_response_id: first, input: 'two' },
      response(second, 'dos'),
    );
    expect(await service.get(A, second)).toEqual(JSON.parse(JSON.stringify(saved)));

    expect(await service.delete(A, first)).toEqual({ id: first, object: 'response', deleted: true });
    expect(await refusal(service.get(A, first))).toMatch(/^404 /);
    expect(await refusal(service.delete(A, first))).toMatch(/^404 /);
    const item = `msg_${first.replace('resp_', '')}_0`;
    expect(await refusal(service.expand({ model: 'm', input: [{ id: item }] }, A, logs().log))).toMatch(
      new RegExp(`^404 input\\[0\\]: no stored item with id '${item}'`),
    );
    // The conversation continuing it cannot be rebuilt without it: said, not silently shortened.
    expect(
      await refusal(service.expand({ model: 'm', previous_response_id: second, input: 'x' }, A, logs().log)),
    ).toBe(
      `404 previous_response_id: the conversation's earlier response '${first}' has expired or was deleted`,
    );
    const left = await db.handle.db
      .selectFrom('stored_response_items')
      .select('id')
      .where('response_id', '=', first)
      .execute();
    expect(left).toEqual([]);
  });

  it('serves nothing past the retention period, and purges expired rows (on a write after the purge interval)', async () => {
    const svc = new StoredResponsesService({
      db: db.handle.db,
      retentionMs: DAY,
      purgeEveryMs: DAY,
      now: () => clock,
    });
    const old = fresh('h');
    await svc.save(await svc.expand({ model: 'm', input: 'x' }, A, logs().log), response(old, 'x'), 'openai');
    clock += DAY - 1;
    expect((await svc.get(A, old)).id).toBe(old);
    clock += 1;
    expect(await refusal(svc.get(A, old))).toMatch(/^404 /);
    expect(
      await refusal(svc.expand({ model: 'm', previous_response_id: old, input: 'x' }, A, logs().log)),
    ).toMatch(/^404 previous_response_id/);
    const rows = () =>
      db.handle.db.selectFrom('stored_responses').select('id').where('id', '=', old).execute();
    expect(await rows()).toHaveLength(1); // expired, not yet purged

    // The next write past the purge interval purges (in the background).
    clock += DAY;
    await svc.save(
      await svc.expand({ model: 'm', input: 'y' }, A, logs().log),
      response(fresh('i'), 'y'),
      'openai',
    );
    await expect.poll(rows).toHaveLength(0);
    const items = await db.handle.db
      .selectFrom('stored_response_items')
      .select('id')
      .where('response_id', '=', old)
      .execute();
    expect(items).toEqual([]);
  });

  it('does not fail the call when the write fails: the response says store: false and the failure is logged', async () => {
    const id = fresh('j');
    await turn(A, { model: 'm', input: 'x' }, response(id, 'x'));
    const { warned, log } = logs();
    const t = await service.expand({ model: 'm', input: 'x' }, A, log);
    const again = await service.save(t, response(id, 'a second response under the same id'), 'openai');
    expect(again.store).toBe(false);
    expect(warned).toEqual(['storing the response failed; it cannot be referenced']);
    expect(((await service.get(A, id)).output[0] as { content: { text: string }[] }).content[0]?.text).toBe(
      'x',
    );

    // An input too deeply nested to serialize (unknown fields ride along) likewise.
    let deep: unknown[] = [];
    for (let i = 0; i < 20_000; i++) deep = [deep];
    const nested = await service.expand(
      { model: 'm', input: [{ role: 'user', content: 'x', extra: deep }] },
      A,
      log,
    );
    expect((await service.save(nested, response(fresh('n'), 'x'), 'openai')).store).toBe(false);
    expect(warned).toHaveLength(2);
  });

  it('stores a streamed response once its final event has passed, before the stream ends', async () => {
    const id = fresh('k');
    const final = response(id, 'streamed');
    async function* events() {
      yield {
        event: 'response.created',
        data: { response: { ...final, output: [], status: 'in_progress' } },
      };
      yield { event: 'response.output_text.delta', data: { delta: 'streamed' } };
      yield { event: 'response.completed', data: { response: final } };
    }
    const t = await service.expand({ model: 'm', input: 'x', stream: true }, A, logs().log);
    const seen: unknown[] = [];
    for await (const e of service.tap(t, events(), 'openai')) {
      seen.push(e.data);
      if (e.event === 'response.completed') expect(await refusal(service.get(A, id))).toMatch(/^404 /);
    }
    // Every snapshot says it is stored; the stream's end waited for the write.
    expect(
      seen
        .filter((d) => 'response' in (d as object))
        .map((d) => (d as { response: StorableResponse }).response.store),
    ).toEqual([true, true]);
    expect((await service.get(A, id)).store).toBe(true);
  });
});
