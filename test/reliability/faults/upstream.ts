/**
 * Upstream faults, for each wire format Gatehouse speaks (OpenAI, Anthropic, Gemini), through a
 * real gateway and the mock upstream over real sockets: a connection reset before the headers, a
 * body or stream cut mid-way, a stall longer than GATEHOUSE_UPSTREAM_TIMEOUT_MS (before the headers
 * and mid-stream, where the stream idle timeout left unset is no longer than it), a slow stream that must pass, malformed JSON on a 200, a truncated stream (clean
 * end without its final event), a malformed stream event and a 200 with an HTML body.
 *
 * What the client must get: the next provider's answer when the model has one and nothing was sent
 * yet; otherwise a 502 in the standard envelope (a timeout is a 502 too: Gatehouse reports an
 * unreachable or silent upstream alike); for a stream already started, the error event of the
 * caller's own format and a clean end (`[DONE]`, Anthropic `error`, Responses `response.failed` +
 * `error`). The gateway stays up and a call that failed before any output is never billed; a stream
 * cut mid-way bills the partial usage it delivered (estimated), as test/routing.test.ts asserts.
 *
 * routing.test.ts already covers fallback on 429/500/a header timeout for OpenAI and one stream dying
 * mid-way on OpenAI; this adds the other faults and formats.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../support/gateway.js';
import { adminClient } from '../../support/http.js';
import { type MockStep, type MockUpstream, startMockUpstream } from '../../support/mock-upstream.js';
import { type Answer, figures, isEnvelope, post, Tally } from './common.js';

/** Short, so that stalls are found quickly; the slow stream lasts several times this. */
const TIMEOUT_MS = 800;
/** A stalled call must be answered within the timeout plus this (undici's timer granularity, CPU). */
const STALL_SLACK_MS = 1_500;

const UPSTREAMS = [
  { name: 'OpenAI', slug: 'openai', kind: 'openai', prefix: 'openai/v1' },
  { name: 'Anthropic', slug: 'anthropic', kind: 'anthropic', prefix: 'anthropic' },
  { name: 'Gemini', slug: 'google-ai-studio', kind: 'google', prefix: 'google/v1beta' },
] as const;
type Upstream = (typeof UPSTREAMS)[number];

type CallerFormat = 'chat' | 'messages' | 'responses';
const CALLER_FORMATS: CallerFormat[] = ['chat', 'messages', 'responses'];

const price = { prompt: 1, completion: 2 };

function writeCatalog(mockUrl: string): string {
  const config = {
    providers: [
      ...UPSTREAMS.map((u) => ({
        slug: u.slug,
        kind: u.kind,
        base_url: `${mockUrl}/${u.prefix}`,
        api_key: `sk-operator-${u.slug}-000000`,
      })),
      {
        slug: 'groq',
        kind: 'openai-compatible',
        base_url: `${mockUrl}/groq/v1`,
        api_key: 'gsk-operator-00000000',
      },
    ],
    models: UPSTREAMS.flatMap((u) => [
      {
        id: `fault/${u.kind}`,
        endpoints: [{ provider: u.slug, upstream_model: `${u.kind}-x`, pricing: price }],
      },
      {
        id: `fault/${u.kind}-fb`,
        endpoints: [
          { provider: u.slug, upstream_model: `${u.kind}-x`, pricing: price },
          { provider: 'groq', upstream_model: 'llama-fb', pricing: price },
        ],
      },
    ]),
  };
  const file = join(mkdtempSync(join(tmpdir(), 'gatehouse-faults-')), 'catalog.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

function requestBody(format: CallerFormat, model: string, stream: boolean) {
  const text = 'please count from one to eight';
  if (format === 'messages')
    return { model, max_tokens: 200, stream, messages: [{ role: 'user', content: text }] };
  if (format === 'responses') return { model, stream, input: text };
  return { model, stream, messages: [{ role: 'user', content: text }] };
}

const PATHS: Record<CallerFormat, string> = {
  chat: '/chat/completions',
  messages: '/messages',
  responses: '/responses',
};

/** A started stream that failed: the caller format's error event last, and the stream ended. */
function streamFailedCleanly(format: CallerFormat, a: Answer): boolean {
  if (a.status !== 200 || !a.contentType.startsWith('text/event-stream')) return false;
  const ev = a.events;
  if (format === 'chat') {
    const last = ev.at(-1);
    const err = ev.at(-2);
    return (
      last?.raw === '[DONE]' &&
      err?.data?.error?.code === 502 &&
      typeof err.data.error.message === 'string' &&
      err.data.choices?.[0]?.finish_reason === 'error'
    );
  }
  if (format === 'messages') {
    const last = ev.at(-1);
    return last?.event === 'error' && last.data?.type === 'error' && !!last.data.error?.message;
  }
  // Responses: `error` last, after `response.failed` when the response had been created.
  const last = ev.at(-1);
  const created = ev.some((e) => e.event === 'response.created');
  const failed = ev.at(-2);
  return (
    last?.event === 'error' &&
    !!last.data?.message &&
    (!created || (failed?.event === 'response.failed' && failed.data?.response?.status === 'failed'))
  );
}

/** A stream that completed: the caller format's normal ending, with the whole text. */
function streamCompleted(format: CallerFormat, a: Answer): string | null {
  if (a.status !== 200) return null;
  const ev = a.events;
  if (format === 'chat') {
    if (ev.at(-1)?.raw !== '[DONE]') return null;
    if (!ev.some((e) => e.data?.choices?.[0]?.finish_reason === 'stop')) return null;
    return ev.map((e) => e.data?.choices?.[0]?.delta?.content ?? '').join('');
  }
  if (format === 'messages') {
    if (ev.at(-1)?.event !== 'message_stop') return null;
    return ev.map((e) => (e.data?.delta?.type === 'text_delta' ? e.data.delta.text : '')).join('');
  }
  const done = ev.find((e) => e.event === 'response.completed');
  return done ? ev.map((e) => (e.event === 'response.output_text.delta' ? e.data.delta : '')).join('') : null;
}

export function upstreamFaults(): void {
  describe('upstream faults (OpenAI, Anthropic and Gemini wire formats)', () => {
    let gw: TestGateway;
    let mock: MockUpstream;
    const outcomes = new Tally();
    /** Faulted requests by fault kind. */
    const byFault = new Tally();
    let unexpected5xx = 0;
    const stallMs: number[] = [];
    const slowMs: number[] = [];

    beforeAll(async () => {
      mock = await startMockUpstream();
      const file = writeCatalog(mock.url);
      gw = await startTestGateway('sqlite', {
        env: { GATEHOUSE_CONFIG: file, GATEHOUSE_UPSTREAM_TIMEOUT_MS: String(TIMEOUT_MS) },
      });
      await adminClient(gw.url)('POST', '/admin/credits', {
        organization_id: gw.organizationId,
        amount_usd: 100,
      });
    });
    afterAll(async () => {
      await gw?.stop();
      await mock?.close();
    });

    const call = (format: CallerFormat, model: string, stream: boolean) =>
      post(`${gw.url}/api/v1${PATHS[format]}`, gw.apiKey, requestBody(format, model, stream));

    /** One faulted request: `step` is what the upstream does; returns the gateway's answer. */
    async function faulted(u: Upstream, fault: string, step: MockStep, run: () => Promise<Answer>) {
      mock.enqueue({ ...step, match: { path: new RegExp(`^/${u.prefix.split('/')[0]}/`) } });
      const a = await run();
      byFault.add(fault);
      if (a.status >= 500 && a.status !== 502) unexpected5xx++;
      return a;
    }

    /**
     * A single-provider model: a clean 502 envelope (the fault repeats: the last provider is
     * retried once, but not after a timeout). With a fallback: the next provider's 200.
     */
    async function expectRefusedThenFallback(u: Upstream, fault: string, step: MockStep, stream: boolean) {
      const times = step.delayMs ? 1 : 2;
      const single = await faulted(u, fault, { ...step, times }, () =>
        call('chat', `fault/${u.kind}`, stream),
      );
      expect(single.status, `${u.name} ${fault}: ${single.text.slice(0, 300)}`).toBe(502);
      expect(single.contentType).toMatch(/^application\/json/);
      expect(isEnvelope(single.json, 502), single.text).toBe(true);
      expect(single.json.error.message).toContain(u.slug);
      outcomes.add('502 envelope (no fallback configured)');

      const fb = await faulted(u, fault, step, () => call('chat', `fault/${u.kind}-fb`, stream));
      expect(fb.status, `${u.name} ${fault} with fallback: ${fb.text.slice(0, 300)}`).toBe(200);
      if (stream) {
        expect(streamCompleted('chat', fb)).toContain('Hello from llama-fb!');
        expect(fb.events.find((e) => e.data?.provider)?.data.provider).toBe('groq');
      } else {
        expect(fb.json.provider).toBe('groq');
        expect(fb.json.gateway_metadata.attempt).toBe(2);
      }
      outcomes.add('200 from the fallback provider');
      return single;
    }

    describe.each(UPSTREAMS)('$name upstream', (u) => {
      it('before any output: reset, stall, malformed JSON, HTML and a cut body → fallback, else 502', async () => {
        await expectRefusedThenFallback(u, 'reset before headers', { resetBeforeHeaders: true }, false);
        await expectRefusedThenFallback(u, 'reset before headers', { resetBeforeHeaders: true }, true);
        const stalled = await expectRefusedThenFallback(u, 'stall before headers', { delayMs: 4_000 }, false);
        expect(stalled.ms).toBeLessThan(TIMEOUT_MS + STALL_SLACK_MS);
        expect(stalled.json.error.message).toMatch(/timed out/);
        stallMs.push(stalled.ms);
        const stalledStream = await faulted(u, 'stall before headers', { delayMs: 4_000 }, () =>
          call('chat', `fault/${u.kind}`, true),
        );
        expect(stalledStream.status).toBe(502);
        expect(isEnvelope(stalledStream.json, 502)).toBe(true);
        expect(stalledStream.ms).toBeLessThan(TIMEOUT_MS + STALL_SLACK_MS);
        stallMs.push(stalledStream.ms);
        outcomes.add('502 envelope (no fallback configured)');

        const malformed = '{"id":"x","choices":[{"message":{"content":"cut';
        await expectRefusedThenFallback(
          u,
          'malformed JSON on 200',
          { status: 200, body: malformed, headers: { 'content-type': 'application/json' } },
          false,
        );
        const html = '<!doctype html><html><body><h1>502 Bad Gateway</h1>nginx</body></html>';
        const htmlStep = { status: 200, body: html, headers: { 'content-type': 'text/html' } };
        const h = await expectRefusedThenFallback(u, '200 with an HTML body', htmlStep, false);
        expect(h.json.error.message).toMatch(/invalid JSON/);
        // A stream request answered with HTML is refused before the stream starts (so it can fall back).
        const hs = await expectRefusedThenFallback(u, '200 with an HTML body', htmlStep, true);
        expect(hs.json.error.message).toMatch(/text\/html/);
        await expectRefusedThenFallback(u, 'body cut mid-way', { dieAfterEvents: 0 }, false);
      });

      it.each(
        CALLER_FORMATS,
      )('mid-stream to a %s caller: reset, stall, truncation and a malformed event → its error event and a clean end', async (format) => {
        const reply = { text: 'one two three four five six seven eight' };
        const cases: [string, MockStep][] = [
          ['reset mid-stream', { reply, dieAfterEvents: 3 }],
          ['stall mid-stream', { reply, stallAfterEvents: 3 }],
          ['truncated stream (no final event)', { reply, endAfterEvents: 3 }],
          ['malformed stream event', { stream: [{ raw: 'data: {"choices":[{"delta":\n\n' }] }],
        ];
        for (const [fault, step] of cases) {
          const a = await faulted(u, fault, step, () => call(format, `fault/${u.kind}`, true));
          expect(streamFailedCleanly(format, a), `${u.name} → ${format}, ${fault}:\n${a.text}`).toBe(true);
          if (fault.startsWith('stall')) {
            expect(a.ms).toBeLessThan(TIMEOUT_MS + STALL_SLACK_MS);
            stallMs.push(a.ms);
          }
          outcomes.add(`stream error event + clean end (${format})`);
        }
      });

      it('a slow stream (one event per 200 ms, longer than the upstream timeout in total) passes through', async () => {
        const text = 'one two three four five six seven eight';
        const a = await faulted(u, 'slow stream', { reply: { text }, eventDelayMs: 200 }, () =>
          call('chat', `fault/${u.kind}`, true),
        );
        expect(streamCompleted('chat', a), a.text).toBe(text);
        expect(a.ms).toBeGreaterThan(TIMEOUT_MS * 1.5);
        slowMs.push(a.ms);
        outcomes.add('slow stream completed');
      });
    });

    it('stays up, and bills no call that failed before any output', async () => {
      expect((await fetch(`${gw.url}/health`)).status).toBe(200);
      const ok = await call('chat', 'fault/openai', false);
      expect(ok.status).toBe(200);

      await gw.services.accountant.flush();
      const db = gw.services.db;
      const rows = await db.selectFrom('generations').selectAll().execute();
      const failedBefore = rows.filter((r) => r.status === 'error' && r.streamed === 0);
      const failedStreams = rows.filter((r) => r.status === 'error' && r.streamed === 1);
      // A stream that failed before any output is billed nothing; one cut after output bills it.
      const emptyStreams = failedStreams.filter((r) => r.completion_tokens === 0);
      const cutMidStream = failedStreams.filter((r) => r.completion_tokens > 0);
      expect(emptyStreams.length).toBeGreaterThanOrEqual(byFault.get('malformed stream event'));
      expect(emptyStreams.every((r) => r.cost_usd === 0)).toBe(true);
      expect(cutMidStream.every((r) => r.cost_usd > 0 && r.usage_estimated === 1)).toBe(true);
      // Every fault above that answered 502 left a failed generation with no cost.
      expect(failedBefore.length).toBe(outcomes.get('502 envelope (no fallback configured)'));
      expect(failedBefore.every((r) => r.cost_usd === 0 && r.prompt_tokens === 0)).toBe(true);
      const generationCost = rows.reduce((s, r) => s + r.cost_usd, 0);
      const usage = await db
        .selectFrom('usage_events')
        .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.sum<number>('cost_usd').as('usd')])
        .executeTakeFirstOrThrow();
      // Billed exactly what was recorded: one usage event per costed generation, none for failures.
      expect(Number(usage.n)).toBe(rows.filter((r) => r.cost_usd > 0).length);
      expect(Number(usage.usd)).toBeCloseTo(generationCost, 9);
      const credits = await fetch(`${gw.url}/api/v1/credits`, {
        headers: { authorization: `Bearer ${gw.managementKey}` },
      }).then((r) => r.json() as Promise<any>);
      expect(credits.data.total_usage).toBeCloseTo(generationCost, 9);
      // /generation agrees for a failed-mid-stream call (partial usage, estimated).
      const cut = cutMidStream[0];
      if (cut) {
        const g = await fetch(`${gw.url}/api/v1/generation?id=${cut.id}`, {
          headers: { authorization: `Bearer ${gw.apiKey}` },
        }).then((r) => r.json() as Promise<any>);
        expect(g.data).toMatchObject({ id: cut.id, status: 'error', streamed: true });
      }
      expect(unexpected5xx).toBe(0);

      const max = (xs: number[]) => Math.round(Math.max(0, ...xs));
      figures.rows.push(
        ['upstream: requests under fault (3 wire formats)', byFault.total],
        ...[...byFault.counts].map(([k, v]) => [`upstream: — ${k}`, v] as [string, number]),
        ...[...outcomes.counts].map(([k, v]) => [`upstream outcome: ${k}`, v] as [string, number]),
        ['upstream: 5xx other than 502', unexpected5xx],
        [
          'upstream: calls failed before any output (502, or a stream failing at once) billed',
          [...failedBefore, ...emptyStreams].filter((r) => r.cost_usd > 0).length,
        ],
        ['upstream: streams cut after output (partial usage billed, estimated)', cutMidStream.length],
        [
          `upstream: slowest answer to a stall (timeout ${TIMEOUT_MS} ms an attempt; a timed-out provider is not retried)`,
          `${max(stallMs)} ms`,
        ],
        [
          'upstream: slow streams completed (200 ms per event)',
          `${slowMs.length}/3, longest ${max(slowMs)} ms`,
        ],
      );
      figures.notes.push(
        `Upstream: GATEHOUSE_UPSTREAM_TIMEOUT_MS=${TIMEOUT_MS} bounds the wait for an answer (the headers of a stream) and, once a stream has started, the silence between two of its chunks (GATEHOUSE_STREAM_IDLE_TIMEOUT_MS, unset: no longer than the deadline); a stream that keeps sending is never cut.`,
      );
    });
  });
}
