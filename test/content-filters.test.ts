import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, makeOrganization } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

/**
 * Guardrail content filters against a real gateway: what reaches the provider (the mock records
 * it) and what the caller gets back.
 */
describe('content filters', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let mgmt: ReturnType<typeof client>;
  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway('sqlite', { env: { ...up.env, GATEHOUSE_RATE_LIMIT_REQUESTS: '1000' } });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    mgmt = client(gw.url, gw.managementKey);
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  /** A fresh API key with one guardrail assigned to it. */
  async function keyWithGuardrail(guardrail: object) {
    const key = await mgmt('POST', '/keys', { name: `k-${Math.random()}` });
    const g = await mgmt('POST', '/guardrails', { name: 'filters under test', ...guardrail });
    expect(g.status).toBe(201);
    await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
      key_hashes: [key.body.data.hash],
    });
    return { call: client(gw.url, key.body.key), guardrailId: g.body.data.id as string };
  }

  /** Everything the provider received (the recorded request body, as JSON text). */
  const sent = (i = 0) => JSON.stringify(mock.requests[i]?.body ?? null);
  const chat = (content: unknown, extra: object = {}) => ({
    model: 'test/gpt',
    messages: [{ role: 'user', content }],
    ...extra,
  });

  describe('custom patterns run in linear time', () => {
    it("answers promptly on a pathological pattern, and another tenant's concurrent call completes", async () => {
      const { call } = await keyWithGuardrail({
        content_filters: [{ pattern: '(a|a)+$', action: 'block', label: 'evil' }],
      });
      const other = await makeOrganization(gw.url, 'Neighbour');
      await adminClient(gw.url)('POST', '/admin/credits', {
        organization_id: other.organizationId,
        amount_usd: 10,
      });
      const neighbour = client(gw.url, other.apiKey);
      // A backtracking engine needs ~2^40 steps on this prompt: hours, with every tenant stalled.
      const prompt = `${'a'.repeat(40)}b`;
      const [filtered, theirs] = await Promise.all([
        call('POST', '/chat/completions', {
          model: 'test/gpt',
          messages: [{ role: 'user', content: prompt }],
        }),
        neighbour('POST', '/chat/completions', {
          model: 'test/gpt',
          messages: [{ role: 'user', content: 'hi' }],
        }),
      ]);
      expect(filtered.status).toBe(200);
      expect(theirs.status).toBe(200);
      // The pattern still matches what it should.
      const blocked = await call('POST', '/chat/completions', {
        model: 'test/gpt',
        messages: [{ role: 'user', content: 'a'.repeat(40) }],
      });
      expect(blocked.status).toBe(403);
      expect(blocked.body.error.message).toContain('evil');
    }, 20_000);

    it('refuses patterns RE2 cannot run with 400 naming the pattern and why', async () => {
      for (const [pattern, why] of [
        ['(a)\\1', /backreferences/],
        ['secret(?=\\d)', /lookaround/],
        ['(?<!x)y', /lookaround/],
      ] as const) {
        const res = await mgmt('POST', '/guardrails', {
          name: 'bad pattern',
          content_filters: [
            { pattern: 'fine', action: 'flag' },
            { pattern, action: 'block' },
          ],
        });
        expect(res.status, pattern).toBe(400);
        expect(res.body.error.message).toContain('content_filters[1].pattern');
        expect(res.body.error.message).toContain(JSON.stringify(pattern));
        expect(res.body.error.message).toMatch(why);
      }
      const g = await mgmt('POST', '/guardrails', { name: 'ok pattern' });
      const patched = await mgmt('PATCH', `/guardrails/${g.body.data.id}`, {
        content_filters: [{ pattern: '(?=x)', action: 'redact' }],
      });
      expect(patched.status).toBe(400);
      expect(patched.body.error.message).toMatch(/not supported.*RE2/);
    });

    it('a stored pattern RE2 cannot run fails closed: the call is refused, nothing is sent', async () => {
      const { call, guardrailId } = await keyWithGuardrail({
        content_filters: [{ pattern: 'x', action: 'redact', label: 'legacy' }],
      });
      // As stored before patterns were checked on write.
      await gw.services.db
        .updateTable('guardrails')
        .set({ content_filters: JSON.stringify([{ pattern: 'a(?=b)', action: 'redact', label: 'legacy' }]) })
        .where('id', '=', guardrailId)
        .execute();
      gw.services.policy.invalidate();
      const res = await call('POST', '/chat/completions', {
        model: 'test/gpt',
        messages: [{ role: 'user', content: 'hello' }],
      });
      expect(res.status).toBe(403);
      expect(res.body.error.message).toMatch(/legacy.*not supported/);
      expect(res.body.error.message).not.toContain('a(?=b)');
      expect(mock.requests).toHaveLength(0);
    });
  });

  describe('what the provider reads, not how it is encoded', () => {
    it('blocks PII hidden by zero-width spaces, fullwidth forms, non-breaking hyphens and dots', async () => {
      const { call } = await keyWithGuardrail({
        content_filter_builtins: [
          { slug: 'email', action: 'block' },
          { slug: 'ssn', action: 'block' },
          { slug: 'credit-card', action: 'block' },
        ],
      });
      for (const [text, label] of [
        ['mail ada\u200b@example.com', 'Email'],
        ['mail ada＠example.com', 'Email'],
        ['ssn １２３-４５-６７８９', 'Social Security'],
        ['ssn 123\u201145\u20116789', 'Social Security'],
        ['card 4111.1111.1111.1111', 'Credit card'],
      ] as const) {
        const res = await call('POST', '/chat/completions', chat(text));
        expect(res.status, text).toBe(403);
        expect(res.body.error.message).toContain(label);
      }
      expect(mock.requests).toHaveLength(0);
    });

    it('redacts the original characters, whatever their encoding', async () => {
      const { call } = await keyWithGuardrail({
        content_filter_builtins: [{ slug: 'email', action: 'redact' }],
      });
      const res = await call('POST', '/chat/completions', chat('write to ada\u200b＠example.com today'));
      expect(res.status).toBe(200);
      expect(mock.requests[0]?.body.messages[0].content).toBe('write to [REDACTED:EMAIL] today');
    });

    it('catches an SSN split across two text parts of one message (chat and messages formats)', async () => {
      const { call } = await keyWithGuardrail({
        content_filter_builtins: [{ slug: 'ssn', action: 'redact' }],
      });
      const parts = [
        { type: 'text', text: 'my ssn is 123-45' },
        { type: 'text', text: '-6789, thanks' },
      ];
      const res = await call('POST', '/chat/completions', chat(parts));
      expect(res.status).toBe(200);
      expect(mock.requests[0]?.body.messages[0].content).toEqual([
        { type: 'text', text: 'my ssn is [REDACTED:SSN]' },
        { type: 'text', text: ', thanks' },
      ]);
      expect(res.body.safeguard_results[0]).toMatchObject({ status: { type: 'redacted' }, matches: 1 });

      const anthropic = await call('POST', '/messages', {
        model: 'test/claude',
        max_tokens: 10,
        messages: [{ role: 'user', content: parts }],
      });
      expect(anthropic.status).toBe(200);
      expect(sent(1)).not.toContain('6789');
      expect(sent(1)).toContain('[REDACTED:SSN]');

      const blocking = await keyWithGuardrail({
        content_filter_builtins: [{ slug: 'ssn', action: 'block' }],
      });
      const refused = await blocking.call('POST', '/chat/completions', chat(parts));
      expect(refused.status).toBe(403);
      expect(mock.requests).toHaveLength(2);
    });
  });
});
