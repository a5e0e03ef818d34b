/**
 * Message threads held by Gatehouse, over a real database (SQLite and PostgreSQL): how a continue
 * is expanded into the whole conversation, each reply continued once, the rejections Anthropic's
 * clients recover from, scoping, expiry and purge.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openTestDatabase } from '../../test/support/database.js';
import { databases } from '../../test/support/gateway.js';
import { waitFor } from '../../test/support/processes.js';
import { ApiError } from '../lib/errors.js';
import { MessageThreadsService } from './service.js';

const DAY = 86_400_000;
const A = { organizationId: 'org-a', workspaceId: 'ws-a1' };
const A2 = { organizationId: 'org-a', workspaceId: 'ws-a2' };

const log = { warn: () => {} };
const user = (text: string) => ({ role: 'user', content: text });
const reply = (id: string, text: string) => ({
  id,
  type: 'message',
  role: 'assistant',
  model: 'm',
  content: [{ type: 'text', text }],
  stop_reason: 'end_turn',
  usage: { input_tokens: 1, output_tokens: 1 },
});

/** The rejection a call gets: its status and `error.details.error_code`. */
async function rejection(p: Promise<unknown>): Promise<{ status: number; code: unknown }> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  const e = err as ApiError;
  return {
    status: e.status,
    code: (e.metadata?.details as { error_code?: unknown } | undefined)?.error_code,
  };
}

describe.each(databases)('message threads (%s)', (kind) => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let clock: number;
  let threads: MessageThreadsService;
  beforeAll(async () => {
    db = await openTestDatabase(kind);
  });
  afterAll(async () => {
    await db?.drop();
  });
  beforeEach(() => {
    clock = Date.UTC(2026, 0, 1);
    threads = new MessageThreadsService({
      db: db.handle.db,
      retentionMs: 30 * DAY,
      inFlightMs: 60_000,
      now: () => clock,
    });
  });
  const fresh = () => `msg_${randomBytes(6).toString('hex')}`;
  /** When the claim on reply `id` was last written (taken or refreshed). */
  const claimedAt = async (id: string) =>
    Number(
      (
        await db.handle.db
          .selectFrom('message_threads')
          .select('continued_at')
          .where('id', '=', id)
          .executeTakeFirstOrThrow()
      ).continued_at,
    );

  /** One answered turn, as the endpoint runs it: begin, then save the reply; the body sent. */
  async function turn(scope: typeof A, body: Record<string, unknown>, id: string, text: string) {
    const t = await threads.begin(body, scope, log);
    if (!t) throw new Error('not threaded');
    await threads.save(t, reply(id, text));
    await threads.release(t);
    return t.body;
  }

  it('expands a continue into the whole conversation: the thread’s system and tools, every turn, the new messages', async () => {
    const [m1, m2, m3] = [fresh(), fresh(), fresh()];
    const tools = [{ name: 'weather', input_schema: { type: 'object' } }];
    const created = await turn(
      A,
      {
        model: 'test/gpt',
        max_tokens: 10,
        system: 'be brief',
        tools,
        messages: [user('hi')],
        thread: { type: 'create' },
      },
      m1,
      'hello',
    );
    expect(created).toEqual({
      model: 'test/gpt',
      max_tokens: 10,
      system: 'be brief',
      tools,
      messages: [user('hi')],
    });
    const second = await turn(
      A,
      {
        model: 'test/gpt',
        max_tokens: 10,
        messages: [user('and?')],
        thread: { type: 'continue', previous_message_id: m1 },
      },
      m2,
      'and more',
    );
    expect(second).toEqual({
      model: 'test/gpt',
      max_tokens: 10,
      system: 'be brief',
      tools,
      messages: [user('hi'), { role: 'assistant', content: [{ type: 'text', text: 'hello' }] }, user('and?')],
    });
    // A third turn on another model: the conversation goes with it.
    const third = await turn(
      A,
      {
        model: 'test/gemini',
        max_tokens: 10,
        messages: [user('last')],
        thread: { type: 'continue', previous_message_id: m2 },
      },
      m3,
      'done',
    );
    expect((third.messages as unknown[]).map((m) => JSON.stringify(m))).toEqual(
      [
        user('hi'),
        { role: 'assistant', content: [{ type: 'text', text: 'hello' }] },
        user('and?'),
        { role: 'assistant', content: [{ type: 'text', text: 'and more' }] },
        user('last'),
      ].map((m) => JSON.stringify(m)),
    );
    expect(third.model).toBe('test/gemini');
  });

  it('drops the earlier turns’ cache breakpoints and keeps the new messages’', async () => {
    const m1 = fresh();
    const marked = (text: string) => ({
      role: 'user',
      content: [{ type: 'text', text, cache_control: { type: 'ephemeral' } }],
    });
    await turn(A, { model: 'm', messages: [marked('old')], thread: { type: 'create' } }, m1, 'ok');
    const t = await threads.begin(
      { model: 'm', messages: [marked('new')], thread: { type: 'continue', previous_message_id: m1 } },
      A,
      log,
    );
    expect(t?.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'old' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'ok' }] },
      marked('new'),
    ]);
  });

  it('continues a reply once: thread_already_continued after, thread_continue_in_flight during', async () => {
    const [m1, m2] = [fresh(), fresh()];
    await turn(A, { model: 'm', messages: [user('hi')], thread: { type: 'create' } }, m1, 'hello');
    const cont = {
      model: 'm',
      messages: [user('next')],
      thread: { type: 'continue', previous_message_id: m1 },
    };
    const running = await threads.begin(cont, A, log);
    expect(await rejection(threads.begin(cont, A, log))).toEqual({
      status: 400,
      code: 'thread_continue_in_flight',
    });
    await threads.save(running as never, reply(m2, 'next one'));
    expect(await rejection(threads.begin(cont, A, log))).toEqual({
      status: 400,
      code: 'thread_already_continued',
    });
    // The newest reply continues.
    expect(
      await threads.begin({ ...cont, thread: { type: 'continue', previous_message_id: m2 } }, A, log),
    ).not.toBeNull();
  });

  it('gives a failed continue’s claim back, and takes over one left running past its time', async () => {
    const m1 = fresh();
    await turn(A, { model: 'm', messages: [user('hi')], thread: { type: 'create' } }, m1, 'hello');
    const cont = {
      model: 'm',
      messages: [user('next')],
      thread: { type: 'continue', previous_message_id: m1 },
    };
    const failed = await threads.begin(cont, A, log);
    await threads.release(failed as never);
    const left = await threads.begin(cont, A, log);
    expect(left).not.toBeNull();
    // Its process died: no release. Within the in-flight time the reply is busy, after it free.
    clock += 30_000;
    expect((await rejection(threads.begin(cont, A, log))).code).toBe('thread_continue_in_flight');
    clock += 31_000;
    const taken = await threads.begin(cont, A, log);
    expect(taken).not.toBeNull();
    // The first, if it comes back and gives up, cannot give back the claim now held by the second.
    await threads.release(left as never);
    expect((await rejection(threads.begin(cont, A, log))).code).toBe('thread_continue_in_flight');
    await threads.release(taken as never);
  });

  it('a continue running longer than the in-flight time keeps its claim: it is refreshed while it runs', async () => {
    const beating = new MessageThreadsService({
      db: db.handle.db,
      retentionMs: 30 * DAY,
      inFlightMs: 60_000,
      beatMs: 10,
      now: () => clock,
    });
    const [m1, m2] = [fresh(), fresh()];
    await turn(A, { model: 'm', messages: [user('hi')], thread: { type: 'create' } }, m1, 'hello');
    const cont = {
      model: 'm',
      messages: [user('next')],
      thread: { type: 'continue', previous_message_id: m1 },
    };
    const long = await beating.begin(cont, A, log);
    // Ten minutes of streaming, in steps shorter than the in-flight time, each followed by a beat.
    for (let i = 0; i < 10; i++) {
      clock += 59_000;
      await waitFor('a beat', async () => (await claimedAt(m1)) === clock, { everyMs: 5 });
      expect((await rejection(threads.begin(cont, A, log))).code).toBe('thread_continue_in_flight');
    }
    await beating.save(long as never, reply(m2, 'a long one'));
    await beating.release(long as never);
    expect((await rejection(threads.begin(cont, A, log))).code).toBe('thread_already_continued');
    // A failed long continue gives back its claim as last refreshed.
    const next = { ...cont, thread: { type: 'continue', previous_message_id: m2 } };
    const failing = await beating.begin(next, A, log);
    clock += 59_000;
    await waitFor('a beat', async () => (await claimedAt(m2)) === clock, { everyMs: 5 });
    await beating.release(failing as never);
    expect(await threads.begin(next, A, log)).not.toBeNull();
  });

  it('thread_not_found for an unknown id, another workspace’s, and an expired thread; purge removes it', async () => {
    const m1 = fresh();
    await turn(A, { model: 'm', messages: [user('hi')], thread: { type: 'create' } }, m1, 'hello');
    const cont = (id: string) => ({
      model: 'm',
      messages: [user('next')],
      thread: { type: 'continue', previous_message_id: id },
    });
    expect(await rejection(threads.begin(cont('msg_unknown'), A, log))).toEqual({
      status: 404,
      code: 'thread_not_found',
    });
    expect(await rejection(threads.begin(cont(m1), A2, log))).toEqual({
      status: 404,
      code: 'thread_not_found',
    });
    clock += 31 * DAY;
    expect((await rejection(threads.begin(cont(m1), A, log))).code).toBe('thread_not_found');
    expect(await threads.purgeExpired()).toBeGreaterThanOrEqual(1);
    const left = await db.handle.db.selectFrom('message_threads').select('id').where('id', '=', m1).execute();
    expect(left).toEqual([]);
  });

  it('a later turn keeps the whole thread alive: its earlier turns expire with it', async () => {
    const [m1, m2] = [fresh(), fresh()];
    await turn(A, { model: 'm', messages: [user('hi')], thread: { type: 'create' } }, m1, 'hello');
    clock += 20 * DAY;
    await turn(
      A,
      { model: 'm', messages: [user('b')], thread: { type: 'continue', previous_message_id: m1 } },
      m2,
      'c',
    );
    clock += 20 * DAY;
    const t = await threads.begin(
      { model: 'm', messages: [user('d')], thread: { type: 'continue', previous_message_id: m2 } },
      A,
      log,
    );
    expect(t?.body.messages).toHaveLength(5);
  });

  it('thread_fingerprint_mismatch for a system or tools other than the thread’s; the same ones repeated pass', async () => {
    const m1 = fresh();
    await turn(
      A,
      { model: 'm', system: 'be brief', messages: [user('hi')], thread: { type: 'create' } },
      m1,
      'hello',
    );
    const cont = {
      model: 'm',
      messages: [user('next')],
      thread: { type: 'continue', previous_message_id: m1 },
    };
    const refused = await threads
      .begin({ ...cont, system: 'be verbose', tools: [] }, A, log)
      .catch((e: ApiError) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).status).toBe(400);
    expect((refused as ApiError).message).toMatch(/^system, tools: /);
    expect((refused as ApiError).metadata).toEqual({
      details: { error_code: 'thread_fingerprint_mismatch' },
    });
    // The refusal gave the claim back: the same turn with the thread's own system goes through.
    const t = await threads.begin({ ...cont, system: 'be brief' }, A, log);
    expect(t?.body.system).toBe('be brief');
  });

  it('checks what the caller sent, not what a preset completed: its system prompt is not a change', async () => {
    const m1 = fresh();
    await turn(
      A,
      { model: 'm', system: 'mine', messages: [user('hi')], thread: { type: 'create' } },
      m1,
      'hello',
    );
    const sent = {
      model: 'm',
      messages: [user('next')],
      thread: { type: 'continue', previous_message_id: m1 },
    };
    const completed = { ...sent, system: 'the preset’s prompt' };
    const t = await threads.begin(completed, A, log, sent);
    expect(t?.body.system).toBe('mine');
  });

  it('refuses a thread of another type or a continue without an id; a body without thread is not held', async () => {
    expect(await threads.begin({ model: 'm', messages: [] }, A, log)).toBeNull();
    expect((await rejection(threads.begin({ model: 'm', thread: { type: 'fork' } }, A, log))).status).toBe(
      400,
    );
    expect(
      (await rejection(threads.begin({ model: 'm', thread: { type: 'continue' } }, A, log))).status,
    ).toBe(400);
  });

  it('stores nothing for an answer that is not a whole message', async () => {
    const t = await threads.begin({ model: 'm', messages: [user('hi')], thread: { type: 'create' } }, A, log);
    await threads.save(t as never, { type: 'error', error: { type: 'api_error' } });
    expect(t?.saved).toBe(false);
  });
});
