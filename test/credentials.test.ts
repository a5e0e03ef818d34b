/**
 * Several credentials per provider through the gateway, against a mock upstream that records the
 * key each call carried: weighted spreading, circuit breakers (401 disables, 429 cools down, the
 * probe closes), BYOK isolation, sticky conversations, and the health in /metrics and the operator
 * endpoint.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, makeOrganization } from './support/http.js';
import { keyOf, type MockUpstream, startMockUpstream } from './support/mock-upstream.js';
import { registerSecret } from './support/secrets-audit.js';

const price = { prompt: 1, completion: 2 };
const SECRETS = {
  a: 'sk-spread-a-0000000001',
  b: 'sk-spread-b-0000000002',
  x: 'sk-auth-x-000000000001',
  y: 'sk-auth-y-000000000002',
  z: 'sk-auth-z-000000000003',
  p: 'sk-cool-p-000000000001',
  q: 'sk-cool-q-000000000002',
  solo: 'sk-solo-00000000000001',
  anthropic: 'sk-operator-anthropic-1',
  fireworks: 'fw-operator-0000000001',
  cerebras: 'cb-operator-0000000001',
  s1: 'sk-stream-s1-000000001',
  s2: 'sk-stream-s2-000000002',
};
const BYOK_1 = 'sk-byok-tenant-one-0001';
const BYOK_1_ROTATED = 'sk-byok-tenant-one-0002';
const BYOK_2 = 'sk-byok-tenant-two-0001';

describe('weighted credentials, circuit breakers and sticky routing', () => {
  let gw: TestGateway;
  let mock: MockUpstream;

  beforeAll(async () => {
    // Under the secrets audit, no response or log line of the run may hold the operator's keys.
    for (const secret of Object.values(SECRETS)) registerSecret('provider-key', secret);
    mock = await startMockUpstream();
    const compat = (slug: string, key: string) => ({
      slug,
      kind: 'openai-compatible',
      base_url: `${mock.url}/${slug}/v1`,
      api_key: key,
      model_data: false,
    });
    const model = (id: string, ...providers: string[]) => ({
      id,
      endpoints: providers.map((provider) => ({ provider, upstream_model: `${provider}-m`, pricing: price })),
    });
    const config = {
      providers: [
        {
          slug: 'openai',
          kind: 'openai',
          base_url: `${mock.url}/openai/v1`,
          model_data: false,
          keys: [
            { name: 'a', key: SECRETS.a, weight: 1 },
            { name: 'b', key_env: 'CRED_TEST_KEY_B', weight: 3 },
          ],
        },
        {
          slug: 'deepseek',
          kind: 'openai-compatible',
          base_url: `${mock.url}/deepseek/v1`,
          model_data: false,
          keys: [
            { name: 'x', key: SECRETS.x },
            { name: 'y', key: SECRETS.y },
            { name: 'z', key: SECRETS.z },
          ],
        },
        {
          slug: 'mistral',
          kind: 'openai-compatible',
          base_url: `${mock.url}/mistral/v1`,
          model_data: false,
          keys: [
            { name: 'p', key: SECRETS.p },
            { name: 'q', key: SECRETS.q },
          ],
        },
        compat('together', SECRETS.solo),
        {
          slug: 'anthropic',
          kind: 'anthropic',
          base_url: `${mock.url}/anthropic`,
          model_data: false,
          api_key: SECRETS.anthropic,
        },
        {
          slug: 'novita',
          kind: 'openai-compatible',
          base_url: `${mock.url}/novita/v1`,
          model_data: false,
          keys: [
            { name: 's1', key: SECRETS.s1 },
            { name: 's2', key: SECRETS.s2 },
          ],
        },
        compat('fireworks', SECRETS.fireworks),
        compat('cerebras', SECRETS.cerebras),
      ],
      models: [
        model('test/spread', 'openai'),
        model('test/auth', 'deepseek'),
        model('test/cool', 'mistral'),
        model('test/solo', 'together'),
        model('test/claude', 'anthropic'),
        model('test/sticky', 'fireworks', 'cerebras'),
        model('test/stream', 'novita'),
      ],
    };
    const file = join(mkdtempSync(join(tmpdir(), 'gatehouse-credentials-')), 'gatehouse.json');
    writeFileSync(file, JSON.stringify(config));
    gw = await startTestGateway('sqlite', {
      env: {
        GATEHOUSE_CONFIG: file,
        CRED_TEST_KEY_B: SECRETS.b,
        GATEHOUSE_CREDENTIAL_BREAKER: 'on',
        GATEHOUSE_STICKY_ROUTING: 'on',
        GATEHOUSE_DEV_PROVIDER: 'false',
        GATEHOUSE_RATE_LIMIT_REQUESTS: '100000',
        // A 429 on the last credential goes back to the caller rather than being retried.
        GATEHOUSE_MAX_RETRY_WAIT_MS: '0',
      },
    });
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });

  let turns = 0;
  /** A chat call; each a conversation of its own (sticky routing keeps one conversation in place). */
  const chat = (model: string, extra: Record<string, unknown> = {}, key = gw.apiKey) =>
    client(gw.url, key)('POST', '/chat/completions', {
      model,
      messages: [{ role: 'user', content: `hi ${++turns}` }],
      ...extra,
    });
  /** The keys that reached one provider's path on the mock, in order. */
  const keysAt = (slug: string) =>
    mock.requests.filter((r) => r.method === 'POST' && r.path.startsWith(`/${slug}/`)).map(keyOf);
  const health = async () => {
    const res = await adminClient(gw.url)('GET', '/admin/credentials');
    expect(res.status, res.text).toBe(200);
    return res.body.data as {
      provider: string;
      kind: string;
      name: string;
      fingerprint: string | null;
      weight: number | null;
      state: string;
      consecutive_failures: number;
      last_status: number | null;
      open_until: string | null;
    }[];
  };
  const stateOf = async (provider: string, name: string) =>
    (await health()).find((h) => h.provider === provider && h.name === name);
  const metrics = async () => (await fetch(`${gw.metricsUrl}/metrics`)).text();
  /** Calls `model` until `key` reached `slug` (weighted random choice: bounded, never timed). */
  const callUntil = async (model: string, slug: string, key: string, max = 300) => {
    const before = keysAt(slug).filter((k) => k === key).length;
    for (let i = 0; i < max; i++) {
      const res = await chat(model);
      expect(res.status, res.text).toBe(200);
      if (keysAt(slug).filter((k) => k === key).length > before) return;
    }
    throw new Error(`${key.slice(0, 8)}… never chosen in ${max} calls`);
  };

  it('spreads 1,000 calls over the operator keys by weight (1 : 3, within ±5 points)', async () => {
    const n = 1000;
    for (let i = 0; i < n; i += 20) {
      const batch = await Promise.all(Array.from({ length: 20 }, () => chat('test/spread')));
      for (const r of batch) expect(r.status, r.text).toBe(200);
    }
    const keys = keysAt('openai');
    expect(keys).toHaveLength(n);
    const shareA = keys.filter((k) => k === SECRETS.a).length / n;
    const shareB = keys.filter((k) => k === SECRETS.b).length / n;
    // Expected 25 % / 75 %. The standard deviation of a share over 1,000 draws is
    // sqrt(0.25 × 0.75 / 1000) ≈ 1.37 points: ±5 points is 3.6 σ (a false alarm about 1 in 3,000 runs).
    expect(shareA + shareB).toBe(1);
    expect(Math.abs(shareA - 0.25)).toBeLessThanOrEqual(0.05);

    const listed = (await health()).filter((h) => h.provider === 'openai');
    expect(listed.map((h) => [h.name, h.weight, h.state])).toEqual([
      ['a', 1, 'closed'],
      ['b', 3, 'closed'],
    ]);
    for (const h of listed) expect(h.fingerprint).toMatch(/^sha256:[0-9a-f]{12}$/);
    const text = await metrics();
    expect(text).toMatch(/gatehouse_credential_calls_total\{provider="openai",credential="a"\} \d+/);
    expect(text).toContain(
      'gatehouse_credential_state{provider="openai",credential="b",kind="operator",state="closed"} 1',
    );
  });

  it('disables a key answering 401 (the call moves on to another) and carries on with the others', async () => {
    mock.enqueue({
      match: { apiKey: SECRETS.x },
      status: 401,
      times: 1000,
      error: { message: 'invalid key' },
    });
    await callUntil('test/auth', 'deepseek', SECRETS.x);
    expect(await stateOf('deepseek', 'x')).toMatchObject({ state: 'disabled', last_status: 401 });

    const before = keysAt('deepseek').length;
    for (let i = 0; i < 40; i++) expect((await chat('test/auth')).status).toBe(200);
    const after = keysAt('deepseek').slice(before);
    expect(after).toHaveLength(40); // one upstream request per call: x is no longer tried
    expect(after).not.toContain(SECRETS.x);
    expect(new Set(after)).toEqual(new Set([SECRETS.y, SECRETS.z]));
    expect(await stateOf('deepseek', 'y')).toMatchObject({ state: 'closed' });
    expect(await metrics()).toContain(
      'gatehouse_credential_state{provider="deepseek",credential="x",kind="operator",state="disabled"} 1',
    );
  });

  it('cools a 429 key down for its Retry-After, then one probe call closes it', async () => {
    mock.enqueue({ match: { apiKey: SECRETS.p }, status: 429, headers: { 'retry-after': '1' } });
    await callUntil('test/cool', 'mistral', SECRETS.p); // answered with q's key
    const open = await stateOf('mistral', 'p');
    expect(open).toMatchObject({ state: 'open', last_status: 429, consecutive_failures: 1 });
    expect(open?.open_until).not.toBeNull();
    // After the cooldown the breaker admits one probe; the key answers again, so it closes.
    await new Promise((r) =>
      setTimeout(r, Math.max(0, Date.parse(open?.open_until as string) - Date.now()) + 50),
    );
    expect((await stateOf('mistral', 'p'))?.state).toBe('half-open');
    await callUntil('test/cool', 'mistral', SECRETS.p);
    expect(await stateOf('mistral', 'p')).toMatchObject({ state: 'closed', consecutive_failures: 0 });
    expect(await metrics()).toMatch(
      /gatehouse_credential_failures_total\{provider="mistral",credential="p",status="429"\} 1/,
    );
  });

  it('skips a provider whose only credential is open: 503 with Retry-After, nothing sent upstream', async () => {
    mock.enqueue({ match: { path: /^\/together\// }, status: 429, headers: { 'retry-after': '60' } });
    const first = await chat('test/solo');
    expect(first.status).toBe(429); // the upstream's own answer
    const sent = keysAt('together').length;
    const second = await chat('test/solo');
    expect(second.status, second.text).toBe(503);
    expect(second.body.error.message).toMatch(/cooling down/);
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(keysAt('together')).toHaveLength(sent);
    // Anthropic's wire gets the refusal in its own error format.
    const messages = await client(gw.url, gw.apiKey)('POST', '/messages', {
      model: 'test/solo',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(messages.status).toBe(503);
    expect(messages.body).toMatchObject({ type: 'error', error: { type: expect.any(String) } });
  });

  it('streams through the official clients: a refused key is passed over before the first byte', async () => {
    mock.enqueue({ match: { apiKey: SECRETS.s1 }, status: 401, times: 1000 });
    const openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    const anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
    const hits = () => keysAt('novita').filter((k) => k === SECRETS.s1).length;
    // Until s1 is picked once (weighted random), every stream completes on one key or the other.
    for (let i = 0; i < 300 && hits() === 0; i++) {
      const stream = await openai.chat.completions.create({
        model: 'test/stream',
        messages: [{ role: 'user', content: `stream ${i}` }],
        stream: true,
      });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      expect(text.length).toBeGreaterThan(0);
    }
    expect(hits()).toBe(1);
    expect(await stateOf('novita', 's1')).toMatchObject({ state: 'disabled', last_status: 401 });
    // From then on every stream goes with s2, on the Anthropic wire too (translated).
    const before = keysAt('novita').length;
    for (let i = 0; i < 5; i++) {
      const stream = anthropic.messages.stream({
        model: 'test/stream',
        max_tokens: 32,
        messages: [{ role: 'user', content: `again ${i}` }],
      });
      const done = await stream.finalMessage();
      expect(done.content.length).toBeGreaterThan(0);
    }
    expect(keysAt('novita').slice(before)).toEqual(Array(5).fill(SECRETS.s2));
  });

  it("a tenant's failing BYOK key never disables the operator's key nor another tenant's, and its update clears it", async () => {
    const mgmt = client(gw.url, gw.managementKey);
    const created = await mgmt('POST', '/byok', { provider: 'anthropic', key: BYOK_1 });
    expect(created.status, created.text).toBe(201);
    const byokId = created.body.data.id as string;
    const other = await makeOrganization(gw.url, 'Second tenant');
    expect(
      (await client(gw.url, other.managementKey)('POST', '/byok', { provider: 'anthropic', key: BYOK_2 }))
        .status,
    ).toBe(201);

    mock.enqueue({ match: { apiKey: BYOK_1 }, status: 401, times: 1000, error: { message: 'revoked' } });
    const start = keysAt('anthropic').length;
    expect((await chat('test/claude')).status).toBe(200); // BYOK 401, then the operator's key
    expect(keysAt('anthropic').slice(start)).toEqual([BYOK_1, SECRETS.anthropic]);
    expect((await chat('test/claude')).status).toBe(200); // the BYOK key is skipped now
    expect(keysAt('anthropic').slice(start + 2)).toEqual([SECRETS.anthropic]);

    expect(await stateOf('anthropic', byokId)).toMatchObject({
      kind: 'byok',
      state: 'disabled',
      last_status: 401,
    });
    expect(await stateOf('anthropic', 'default')).toMatchObject({ kind: 'operator', state: 'closed' });
    // The other tenant's BYOK key still carries its calls.
    expect((await chat('test/claude', {}, other.apiKey)).status).toBe(200);
    expect(keysAt('anthropic').at(-1)).toBe(BYOK_2);

    // A new secret is a new credential: tried again.
    expect((await mgmt('PATCH', `/byok/${byokId}`, { key: BYOK_1_ROTATED })).status).toBe(200);
    expect((await chat('test/claude')).status).toBe(200);
    expect(keysAt('anthropic').at(-1)).toBe(BYOK_1_ROTATED);
    expect((await health()).find((h) => h.name === byokId)).toBeUndefined(); // closed, forgotten
  });

  it('sends the next turn of a conversation to the provider and key that served the previous one', async () => {
    const opening = [
      { role: 'system', content: 'You review contracts.' },
      { role: 'user', content: 'Clause 1?' },
    ];
    // Turn 1: fireworks fails once (its breaker stays closed), cerebras serves.
    mock.enqueue({ match: { path: /^\/fireworks\// }, status: 500 });
    const turn1 = await chat('test/sticky', { messages: opening });
    expect(turn1.status).toBe(200);
    const sent = keysAt('fireworks').length;
    // Turn 2 of the same conversation goes straight to cerebras (the cache is warm there).
    const turn2 = await chat('test/sticky', {
      messages: [
        ...opening,
        { role: 'assistant', content: 'It is fine.' },
        { role: 'user', content: 'Clause 2?' },
      ],
    });
    expect(turn2.status).toBe(200);
    expect(keysAt('fireworks')).toHaveLength(sent);
    expect(keysAt('cerebras').at(-1)).toBe(SECRETS.cerebras);
    // Another conversation starts on the first provider; an explicit order wins over stickiness.
    expect((await chat('test/sticky', { messages: [{ role: 'user', content: 'Another one' }] })).status).toBe(
      200,
    );
    expect(keysAt('fireworks')).toHaveLength(sent + 1);
    expect(
      (await chat('test/sticky', { messages: opening, provider: { order: ['fireworks'] } })).status,
    ).toBe(200);
    expect(keysAt('fireworks')).toHaveLength(sent + 2);
    // Another API key's identical conversation is its own.
    const other = await makeOrganization(gw.url, 'Sticky other');
    expect((await chat('test/sticky', { messages: opening }, other.apiKey)).status).toBe(200);
    expect(keysAt('fireworks')).toHaveLength(sent + 3);
  });

  it("keeps a conversation (prompt_cache_key) on one of the provider's weighted keys", async () => {
    const start = keysAt('openai').length;
    for (let i = 0; i < 20; i++)
      expect((await chat('test/spread', { prompt_cache_key: 'conversation-42' })).status).toBe(200);
    const used = new Set(keysAt('openai').slice(start));
    expect(used.size).toBe(1);
  });

  it('never shows a secret in the operator endpoint or /metrics', async () => {
    const body = JSON.stringify(await health());
    const text = await metrics();
    for (const secret of [...Object.values(SECRETS), BYOK_1, BYOK_1_ROTATED, BYOK_2]) {
      expect(body).not.toContain(secret);
      expect(text).not.toContain(secret);
    }
    const anon = await client(gw.url)('GET', '/admin/credentials');
    expect(anon.status).toBe(401);
  });
});
