/**
 * Video job callbacks against a real HTTPS receiver: the event and its headers as OpenRouter sends
 * them, retries on failures worth one (and none on a refusal), loopback refused unless allowed,
 * and shutdown sending what has ended while dropping retries not yet due.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type HttpsReceiver, startHttpsReceiver } from '../../../test/support/https-receiver.js';
import { waitFor } from '../../../test/support/processes.js';
import type { VideoJob } from '../jobs/store.js';
import { IDEMPOTENCY_HEADER, SIGNATURE_HEADER, VideoCallbacks } from './video-callbacks.js';

const log = pino({ level: 'silent' });
const SECRET = 'whsec_test-signing-secret';

/** What a receiver does (OpenRouter's documented check): HMAC-SHA256 of "<t>,<raw body>", recent t. */
function verified(header: unknown, body: string, secret = SECRET): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(typeof header === 'string' ? header : '');
  if (!m) return false;
  const expected = createHmac('sha256', secret).update(`${m[1]},${body}`).digest();
  const fresh = Math.abs(Date.now() / 1000 - Number(m[1])) < 300;
  return fresh && timingSafeEqual(expected, Buffer.from(m[2] ?? '', 'hex'));
}

describe('video job callbacks', () => {
  let receiver: HttpsReceiver;
  const jobs = new Map<string, VideoJob>();
  const store = { get: async (id: string) => jobs.get(id) ?? null };
  const job = (id: string, over: Partial<VideoJob> = {}): VideoJob => {
    const j: VideoJob = {
      id,
      model: 'media/video-model',
      status: 'completed',
      outputs: [{ key: 'video/a.mp4', url: 'https://cdn.example/a.mp4', contentType: 'video/mp4' }],
      costUsd: 0.25,
      error: null,
      createdAt: 1,
      completedAt: 2,
      callbackUrl: `${receiver.url}/hooks/video?team=7`,
      pollingUrl: `https://gw.example/api/v1/videos/${id}`,
      workspaceId: 'ws-unsigned',
      ...over,
    };
    jobs.set(id, j);
    return j;
  };
  // Workspace `ws-signed` signs its events; `ws-sealed` has a secret this process cannot read.
  const secrets = {
    callbackUrl: async () => null,
    signingSecret: async (ws: string) => {
      if (ws === 'ws-sealed') throw new Error('no master key');
      return ws === 'ws-signed' ? SECRET : null;
    },
  };
  const callbacks = (over: { allowPrivate?: boolean; retryDelaysMs?: number[] } = {}) =>
    new VideoCallbacks(log, store, secrets, {
      allowPrivate: true,
      timeoutMs: 5_000,
      ca: receiver.ca,
      retryDelaysMs: [20, 20],
      ...over,
    });

  beforeAll(async () => {
    receiver = await startHttpsReceiver();
  });
  afterAll(() => receiver?.close());
  beforeEach(() => {
    receiver.received.length = 0;
  });

  it('POSTs the ended job’s event, as its poll answers it, with its idempotency key', async () => {
    const cb = callbacks();
    job('gen-vid-1-done');
    cb.ended('gen-vid-1-done');
    await waitFor('the event', () => receiver.received[0]);
    const [got] = receiver.received;
    expect(got?.path).toBe('/hooks/video?team=7');
    expect(got?.headers['content-type']).toBe('application/json');
    expect(got?.headers[IDEMPOTENCY_HEADER]).toBe('gen-vid-1-done-completed');
    const event = JSON.parse(got?.body ?? '');
    expect(event).toEqual({
      type: 'video.generation.completed',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      data: {
        id: 'gen-vid-1-done',
        polling_url: 'https://gw.example/api/v1/videos/gen-vid-1-done',
        status: 'completed',
        unsigned_urls: ['https://cdn.example/a.mp4'],
        usage: { cost: 0.25, is_byok: false },
        model: 'media/video-model',
      },
    });
    // A failed job's event carries its error; a job without a callback sends nothing.
    job('gen-vid-1-fail', { status: 'failed', error: 'the provider failed', outputs: [], costUsd: null });
    job('gen-vid-1-none', { callbackUrl: null });
    cb.ended('gen-vid-1-none');
    cb.ended('gen-vid-1-fail');
    await waitFor('the failed event', () => receiver.received[1]);
    await cb.close();
    expect(receiver.received).toHaveLength(2);
    expect(receiver.received[1]?.headers[IDEMPOTENCY_HEADER]).toBe('gen-vid-1-fail-failed');
    expect(JSON.parse(receiver.received[1]?.body ?? '')).toMatchObject({
      type: 'video.generation.failed',
      data: { status: 'failed', error: 'the provider failed' },
    });
  });

  it('signs the events of a workspace with a signing secret, every attempt afresh', async () => {
    const cb = callbacks();
    receiver.answer(503);
    cb.send(job('gen-vid-5-signed', { workspaceId: 'ws-signed' }));
    await waitFor('the retry', () => receiver.received[1]);
    for (const got of receiver.received) {
      expect(verified(got.headers[SIGNATURE_HEADER], got.body)).toBe(true);
      // Not under another secret, and not for another body.
      expect(verified(got.headers[SIGNATURE_HEADER], got.body, 'whsec_other')).toBe(false);
      expect(verified(got.headers[SIGNATURE_HEADER], `${got.body} `)).toBe(false);
    }
    // A workspace without one: no signature header at all.
    receiver.received.length = 0;
    cb.send(job('gen-vid-5-plain'));
    await waitFor('the unsigned event', () => receiver.received[0]);
    expect(receiver.received[0]?.headers[SIGNATURE_HEADER]).toBeUndefined();
    // A secret this process cannot read: nothing is sent (an unsigned event would be refused).
    receiver.received.length = 0;
    cb.send(job('gen-vid-5-sealed', { workspaceId: 'ws-sealed' }));
    await cb.close();
    expect(receiver.received).toHaveLength(0);
  });

  it('retries a 5xx and a 429, not a 4xx refusal; gives up after the last delay', async () => {
    const cb = callbacks();
    receiver.answer(503, 429);
    cb.send(job('gen-vid-2-retry'));
    await waitFor('the third attempt', () => receiver.received[2]);
    expect(receiver.received.map((r) => r.headers[IDEMPOTENCY_HEADER])).toEqual(
      Array(3).fill('gen-vid-2-retry-completed'),
    );
    receiver.received.length = 0;
    receiver.answer(400);
    cb.send(job('gen-vid-2-refused'));
    receiver.answer(500, 500, 500);
    cb.send(job('gen-vid-2-down'));
    await waitFor('every attempt', () => receiver.received.length >= 4 && receiver.received);
    await new Promise((r) => setTimeout(r, 150));
    // The refusal once; the 5xx three times (the first try and two retries), then given up.
    const keys = receiver.received.map((r) => r.headers[IDEMPOTENCY_HEADER]);
    expect(keys.filter((k) => k === 'gen-vid-2-refused-completed')).toHaveLength(1);
    expect(keys.filter((k) => k === 'gen-vid-2-down-completed')).toHaveLength(3);
    await cb.close();
  });

  it('refuses a loopback callback unless internal addresses are allowed', async () => {
    const cb = callbacks({ allowPrivate: false });
    cb.send(job('gen-vid-3-private'));
    await cb.close();
    expect(receiver.received).toHaveLength(0);
  });

  it('closing sends what has ended, and drops retries not yet due', async () => {
    const cb = callbacks({ retryDelaysMs: [60_000] });
    receiver.answer(503);
    cb.send(job('gen-vid-4-later'));
    job('gen-vid-4-last');
    await waitFor('the first attempt', () => receiver.received[0]);
    cb.ended('gen-vid-4-last');
    await cb.close();
    expect(receiver.received.map((r) => r.headers[IDEMPOTENCY_HEADER])).toEqual([
      'gen-vid-4-later-completed',
      'gen-vid-4-last-completed',
    ]);
    // Closed: nothing more goes out.
    cb.send(job('gen-vid-4-after'));
    await new Promise((r) => setTimeout(r, 100));
    expect(receiver.received).toHaveLength(2);
  });
});
