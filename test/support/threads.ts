import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'vitest';

/** What a suite's mock upstream offers these checks: what reached it so far, and its next answer. */
export interface ThreadUpstream {
  requests(): { body: unknown; headers?: Record<string, unknown> }[];
  enqueueText(text: string): void;
}

/**
 * An Anthropic client that records the body of every request it sends (what the client itself
 * decided to send: a whole conversation, or a thread's new messages only).
 */
export function recordingClient(baseURL: string, apiKey: string): { client: Anthropic; sent: any[] } {
  const sent: any[] = [];
  const client = new Anthropic({
    baseURL,
    apiKey,
    maxRetries: 0,
    fetch: async (url, init) => {
      if (typeof init?.body === 'string') sent.push(JSON.parse(init.body));
      return fetch(url, init);
    },
  });
  return { client, sent };
}

/**
 * A model no provider holding threads serves (another format's, Claude on Bedrock or Vertex AI):
 * Gatehouse holds the thread. With the client's own thread helper, each turn sends only its new
 * messages, and the provider gets the whole conversation every time, without `thread` or the
 * threads beta flag — streamed turns included.
 */
export async function expectThreadsHeld(
  client: Anthropic,
  model: string,
  upstream: ThreadUpstream,
): Promise<void> {
  const thread = client.beta.messages.thread({ model, max_tokens: 50, system: 'Be brief.' });
  upstream.enqueueText('one');
  const first = await thread.send({ role: 'user', content: 'first question' });
  expect(first.content).toEqual([expect.objectContaining({ type: 'text', text: 'one' })]);
  upstream.enqueueText('two');
  const second = await thread.stream({ role: 'user', content: 'second question' }).finalMessage();
  expect(second.content).toEqual([expect.objectContaining({ type: 'text', text: 'two' })]);
  upstream.enqueueText('three');
  await thread.send({ role: 'user', content: 'third question' });
  expect(thread.previousMessageId).toMatch(/^msg_/);

  const reached = upstream.requests();
  expect(reached).toHaveLength(3);
  for (const r of reached) {
    expect(JSON.stringify(r.body)).not.toContain('"thread"');
    expect(String(r.headers?.['anthropic-beta'] ?? '')).not.toContain('message-threads');
  }
  // The whole conversation in order, with the system prompt the thread was created with.
  const last = JSON.stringify(reached[2]?.body);
  expect(last).toContain('Be brief.');
  const order = ['first question', 'one', 'second question', 'two', 'third question'];
  const at = order.map((s) => last.indexOf(s));
  expect(at.every((i) => i >= 0)).toBe(true);
  expect([...at].sort((a, b) => a - b)).toEqual(at);
}

/**
 * A threaded call that must reach a provider holding no threads (the only one the request allows
 * for a model Anthropic's API serves too): refused as Anthropic refuses what it cannot thread, with
 * nothing sent upstream; the official client's tool runner (which threads by default) then gets its
 * answer unthreaded. `extra`: body fields of both calls (the provider preferences).
 */
export async function expectThreadsRefused(
  anthropic: Anthropic,
  model: string,
  upstream: ThreadUpstream,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const err = await anthropic.beta.messages
    .create({
      model,
      max_tokens: 50,
      messages: [{ role: 'user', content: 'hi' }],
      thread: { type: 'create' },
      ...extra,
    })
    .catch((e: unknown) => e);
  expect(err).toBeInstanceOf(Anthropic.BadRequestError);
  expect((err as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({
    type: 'error',
    error: {
      type: 'invalid_request_error',
      message: expect.stringContaining('thread'),
      details: { error_code: 'thread_unsupported_request', unsupported: ['thread'] },
    },
  });
  expect(upstream.requests()).toHaveLength(0);
  upstream.enqueueText('answered whole');
  const final = await anthropic.beta.messages.toolRunner({
    model,
    max_tokens: 50,
    messages: [{ role: 'user', content: 'hi' }],
    tools: [],
    ...extra,
  });
  expect(final.content).toEqual([expect.objectContaining({ type: 'text', text: 'answered whole' })]);
  expect(upstream.requests()).toHaveLength(1);
  expect(JSON.stringify(upstream.requests()[0]?.body)).not.toContain('thread');
}
