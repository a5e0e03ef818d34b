/**
 * Anthropic message threads through a real gateway, with the official client: on models no
 * provider holding threads serves (an OpenAI-format and a Gemini provider), Gatehouse holds the
 * thread — each turn the client sends only its new messages, and the provider gets the whole
 * conversation. Rejections come with Anthropic's error codes, as the client's own error classes;
 * other workspaces' and organizations' keys cannot continue a thread; a model Anthropic's API serves
 * gets the thread passed through, and a call that may only go elsewhere is refused.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, otherTenants } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { waitFor } from './support/processes.js';
import { expectThreadsHeld, expectThreadsRefused, recordingClient } from './support/threads.js';
import { startUpstreams } from './support/upstreams.js';

const price = { prompt: 1, completion: 2 };

describe.each(databases)('message threads (%s)', (db) => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let anthropic: Anthropic;
  /** The owner's second workspace's API key, and another organization's. */
  const others: { name: string; key: string }[] = [];
  beforeAll(async () => {
    const up = await startUpstreams([
      {
        id: 'test/claude-or-gpt',
        endpoints: [
          { provider: 'anthropic', upstream_model: 'claude-x', pricing: price },
          { provider: 'openai', upstream_model: 'gpt-x', pricing: price },
        ],
      },
    ]);
    mock = up.mock;
    gw = await startTestGateway(db, { env: up.env });
    const admin = adminClient(gw.url);
    await admin('POST', '/admin/credits', { organization_id: gw.organizationId, amount_usd: 100 });
    anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
    others.push(...(await otherTenants(gw, `Other ${db}`, 10)));
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  const upstream = () => ({
    requests: () => mock.requests,
    enqueueText: (text: string) => mock.enqueue({ reply: { text } }),
  });

  /** A thread on test/gpt created with `question`, answered with `answer`; its first reply. */
  const createThread = (question: string, answer: string) => {
    mock.enqueue({ reply: { text: answer } });
    return anthropic.beta.messages.create({
      model: 'test/gpt',
      max_tokens: 20,
      messages: [{ role: 'user', content: question }],
      thread: { type: 'create' },
    });
  };

  describe.each(['test/gpt', 'test/gemini'])('%s', (model) => {
    it('holds the thread: each turn sends its new messages, the provider gets the whole conversation', async () => {
      const { client: recording, sent } = recordingClient(`${gw.url}/api`, gw.apiKey);
      await expectThreadsHeld(recording, model, upstream());
      // What the client sent: the thread created once, then continued from each reply with only
      // the new message — Gatehouse never refused it.
      expect(sent.map((b) => b.thread?.type)).toEqual(['create', 'continue', 'continue']);
      expect(sent[2].messages).toEqual([{ role: 'user', content: 'third question' }]);
      expect(sent[2]).not.toHaveProperty('system');
    });
  });

  it('rejects with Anthropic’s codes: a reply continued twice, an unknown id, a changed system prompt', async () => {
    mock.enqueue({ reply: { text: 'one' } }, { reply: { text: 'two' } });
    const create = await anthropic.beta.messages.create({
      model: 'test/gpt',
      max_tokens: 20,
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'hi' }],
      thread: { type: 'create' },
    });
    const cont = (previous: string, extra: object = {}) =>
      anthropic.beta.messages.create({
        model: 'test/gpt',
        max_tokens: 20,
        messages: [{ role: 'user', content: 'more' }],
        thread: { type: 'continue', previous_message_id: previous },
        ...extra,
      });
    const changed = await cont(create.id, { system: 'Be verbose.' }).catch((e: unknown) => e);
    expect(changed).toBeInstanceOf(Anthropic.ThreadFingerprintMismatchError);
    expect((changed as Error).message).toContain('system');
    await cont(create.id);
    expect(await cont(create.id).catch((e: unknown) => e)).toBeInstanceOf(
      Anthropic.ThreadAlreadyContinuedError,
    );
    const unknown = await cont('msg_0000000000000000').catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(Anthropic.ThreadNotFoundError);
    expect((unknown as InstanceType<typeof Anthropic.NotFoundError>).error).toMatchObject({
      type: 'error',
      error: { type: 'not_found_error', details: { error_code: 'thread_not_found' } },
    });
    // The refused calls sent nothing: the create and the one continue reached the provider.
    expect(mock.requests).toHaveLength(2);
  });

  it('another workspace’s and another organization’s keys cannot continue a thread', async () => {
    const create = await createThread('a secret question', 'private answer');
    for (const other of others) {
      const theirs = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: other.key, maxRetries: 0 });
      const err = await theirs.beta.messages
        .create({
          model: 'test/gpt',
          max_tokens: 20,
          messages: [{ role: 'user', content: 'what was asked?' }],
          thread: { type: 'continue', previous_message_id: create.id },
        })
        .catch((e: unknown) => e);
      expect(err, other.name).toBeInstanceOf(Anthropic.ThreadNotFoundError);
    }
    expect(mock.requests).toHaveLength(1);
    // Their attempts claimed nothing: the owner continues.
    mock.enqueue({ reply: { text: 'still mine' } });
    await anthropic.beta.messages.create({
      model: 'test/gpt',
      max_tokens: 20,
      messages: [{ role: 'user', content: 'go on' }],
      thread: { type: 'continue', previous_message_id: create.id },
    });
    expect(JSON.stringify(mock.requests[1]?.body)).toContain('a secret question');
  });

  it('a failed turn can be sent again: the reply it continued is not used up', async () => {
    const create = await createThread('hi', 'one');
    const cont = () =>
      anthropic.beta.messages.create({
        model: 'test/gpt',
        max_tokens: 20,
        messages: [{ role: 'user', content: 'again' }],
        thread: { type: 'continue', previous_message_id: create.id },
      });
    mock.enqueue({ status: 400, error: { message: 'upstream refused this once' } });
    expect(await cont().catch((e: unknown) => e)).toBeInstanceOf(Anthropic.APIError);
    mock.enqueue({ reply: { text: 'two' } });
    const second = await cont();
    expect(second.content).toEqual([expect.objectContaining({ text: 'two' })]);
  });

  it('a stream the client leaves stores nothing and frees the reply it continued', async () => {
    const create = await createThread('hi', 'one');
    const body = {
      model: 'test/gpt',
      max_tokens: 20,
      messages: [{ role: 'user' as const, content: 'tell me more' }],
      thread: { type: 'continue' as const, previous_message_id: create.id },
    };
    mock.enqueue({ reply: { text: 'a long answer that never ends' }, stallAfterEvents: 2 });
    const stream = anthropic.beta.messages.stream(body);
    for await (const e of stream) if (e.type === 'content_block_delta') break;
    stream.abort();
    // Once the gateway has seen the client go, the same turn may be sent again (and not before:
    // until then it is in flight, which the client's thread replays from).
    mock.enqueue({ reply: { text: 'the answer' } });
    const again = await waitFor('the continued reply to be free again', async () => {
      const r = await anthropic.beta.messages.create(body).catch((e: unknown) => e);
      if (r instanceof Anthropic.ThreadContinueInFlightError) return null;
      return r;
    });
    expect(again).toMatchObject({ content: [expect.objectContaining({ text: 'the answer' })] });
    expect(JSON.stringify(mock.requests.at(-1)?.body)).toContain('hi');
  });

  describe('a model Anthropic’s API serves', () => {
    it('passes the thread through to it', async () => {
      mock.enqueue({ reply: { text: 'held by Anthropic' } });
      await anthropic.beta.messages.create({
        model: 'test/claude-or-gpt',
        max_tokens: 20,
        messages: [{ role: 'user', content: 'hi' }],
        thread: { type: 'create' },
      });
      expect(mock.requests[0]?.path).toBe('/anthropic/v1/messages');
      expect(mock.requests[0]?.body.thread).toEqual({ type: 'create' });
    });

    it('refuses a thread that may only go to another provider; the tool runner then sends it whole', () =>
      expectThreadsRefused(anthropic, 'test/claude-or-gpt', upstream(), { provider: { only: ['openai'] } }));
  });
});
