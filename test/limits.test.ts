import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { client } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { REDIS_URL, redisReachable } from './support/redis.js';
import { startUpstreams } from './support/upstreams.js';

/**
 * Usage limits of API keys through a real gateway and a mock upstream: requests per minute,
 * tokens per minute and calls in flight, managed through the keys API.
 */

const chat = (model = 'test/gpt', extra: object = {}) => ({
  model,
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});

/** Per-minute windows are clock minutes: a test starting in a minute's last seconds waits for the next. */
async function awayFromMinuteEdge() {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 8_000) await new Promise((r) => setTimeout(r, left + 50));
}

/** Reads an SSE response to its end. */
async function streamed(url: string, key: string, body: object): Promise<{ status: number; text: string }> {
  const res = await fetch(`${url}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
  });
  return { status: res.status, text: await res.text() };
}

describe('key usage limit defaults in the configuration', () => {
  const base = { GATEHOUSE_DATA_DIR: '/tmp/gatehouse-limits-config', GATEHOUSE_MASTER_KEY: 'a'.repeat(64) };
  it('reads GATEHOUSE_KEY_RPM, _TPM and _CONCURRENCY (unset: no limit) and refuses anything but whole numbers ≥ 1', () => {
    expect(loadConfig(base).keyLimitDefaults).toEqual({
      rpm_limit: null,
      tpm_limit: null,
      concurrency_limit: null,
    });
    expect(
      loadConfig({
        ...base,
        GATEHOUSE_KEY_RPM: '60',
        GATEHOUSE_KEY_TPM: '100000',
        GATEHOUSE_KEY_CONCURRENCY: '8',
      }).keyLimitDefaults,
    ).toEqual({ rpm_limit: 60, tpm_limit: 100000, concurrency_limit: 8 });
    for (const bad of ['0', '-1', '2.5', 'many'])
      expect(() => loadConfig({ ...base, GATEHOUSE_KEY_CONCURRENCY: bad })).toThrow(
        /GATEHOUSE_KEY_CONCURRENCY/,
      );
  });
});

describe.each(databases)('key usage limits in the keys API (%s)', (db) => {
  let gw: TestGateway;
  let mgmt: ReturnType<typeof client>;
  beforeAll(async () => {
    gw = await startTestGateway(db, { env: { GATEHOUSE_KEY_RPM: '30', GATEHOUSE_KEY_CONCURRENCY: '4' } });
    mgmt = client(gw.url, gw.managementKey);
  });
  afterAll(async () => {
    await gw?.stop();
  });

  it('stores, reads and changes rpm_limit, tpm_limit and concurrency_limit (null = no limit)', async () => {
    const created = await mgmt('POST', '/keys', {
      name: 'limited',
      rpm_limit: 10,
      tpm_limit: 5000,
      concurrency_limit: 2,
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ rpm_limit: 10, tpm_limit: 5000, concurrency_limit: 2 });
    const hash = created.body.data.hash;
    const patched = await mgmt('PATCH', `/keys/${hash}`, { rpm_limit: null, tpm_limit: 7000 });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ rpm_limit: null, tpm_limit: 7000, concurrency_limit: 2 });
    const read = await mgmt('GET', `/keys/${hash}`);
    expect(read.body.data).toMatchObject({ rpm_limit: null, tpm_limit: 7000, concurrency_limit: 2 });
    const current = await client(gw.url, created.body.key)('GET', '/key');
    expect(current.body.data).toMatchObject({ rpm_limit: null, tpm_limit: 7000, concurrency_limit: 2 });
  });

  it('gives a new key the configured defaults unless its creation names the limits', async () => {
    const plain = await mgmt('POST', '/keys', { name: 'defaults' });
    expect(plain.body.data).toMatchObject({ rpm_limit: 30, tpm_limit: null, concurrency_limit: 4 });
    const own = await mgmt('POST', '/keys', { name: 'own', rpm_limit: null, concurrency_limit: 9 });
    expect(own.body.data).toMatchObject({ rpm_limit: null, tpm_limit: null, concurrency_limit: 9 });
  });

  it('stores and changes the same limits on guardrails, refusing bad values with a 400', async () => {
    const created = await mgmt('POST', '/guardrails', { name: 'team', rpm_limit: 100, concurrency_limit: 5 });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ rpm_limit: 100, tpm_limit: null, concurrency_limit: 5 });
    const id = created.body.data.id;
    const patched = await mgmt('PATCH', `/guardrails/${id}`, { tpm_limit: 20000, concurrency_limit: null });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ rpm_limit: 100, tpm_limit: 20000, concurrency_limit: null });
    expect((await mgmt('GET', `/guardrails/${id}`)).body.data).toMatchObject({ tpm_limit: 20000 });
    for (const bad of [{ rpm_limit: 0 }, { tpm_limit: 2.5 }, { concurrency_limit: 'two' }]) {
      const res = await mgmt('PATCH', `/guardrails/${id}`, bad);
      expect(res.status, JSON.stringify(bad)).toBe(400);
    }
  });

  it('refuses limits that are not whole numbers of at least 1 with a 400', async () => {
    for (const bad of [{ rpm_limit: 0 }, { tpm_limit: 1.5 }, { concurrency_limit: -1 }, { rpm_limit: 'x' }]) {
      const res = await mgmt('POST', '/keys', { name: 'bad', ...bad });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.body.error.message).toMatch(/rpm_limit|tpm_limit|concurrency_limit/);
    }
    const key = await mgmt('POST', '/keys', { name: 'patched' });
    const res = await mgmt('PATCH', `/keys/${key.body.data.hash}`, { concurrency_limit: 0 });
    expect(res.status).toBe(400);
  });
});

const redisUp = await redisReachable(REDIS_URL);
if (!redisUp) console.warn(`\n!!! Usage limits through Redis SKIPPED: no Redis at ${REDIS_URL} !!!\n`);
const stores = redisUp ? ['memory', 'redis'] : ['memory'];

describe.each(stores)('key usage limits on inference calls (one node, counters in %s)', (store) => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let mgmt: ReturnType<typeof client>;
  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    const shared: Record<string, string> =
      store === 'redis'
        ? { REDIS_URL, GATEHOUSE_REDIS_PREFIX: `gatehouse-test:${randomBytes(6).toString('hex')}` }
        : {};
    gw = await startTestGateway('sqlite', {
      env: { ...up.env, ...shared, GATEHOUSE_RATE_LIMIT_REQUESTS: '10000' },
    });
    mgmt = client(gw.url, gw.managementKey);
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  const newKey = async (name: string, limits: object) => {
    const res = await mgmt('POST', '/keys', { name, ...limits });
    expect(res.status).toBe(201);
    return client(gw.url, res.body.key, { timeoutMs: 20_000 });
  };

  it('answers the request over rpm_limit with 429, a Retry-After and a message naming the limit (translated calls too)', async () => {
    await awayFromMinuteEdge();
    const call = await newKey('rpm-two', { rpm_limit: 2 });
    expect((await call('POST', '/chat/completions', chat())).status).toBe(200);
    // A translated call (chat → Anthropic) counts the same.
    expect((await call('POST', '/chat/completions', chat('test/claude'))).status).toBe(200);
    const refused = await call('POST', '/chat/completions', chat());
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(refused.body.error.message).toMatch(/key "rpm-two" allows 2 requests per minute \(rpm_limit\)/);
    expect(mock.requests).toHaveLength(2);
    // Another key is not affected.
    const other = await newKey('rpm-other', { rpm_limit: 2 });
    expect((await other('POST', '/chat/completions', chat())).status).toBe(200);
  });

  it('refuses the call after one that used up tpm_limit (prompt + completion tokens)', async () => {
    await awayFromMinuteEdge();
    mock.enqueue({ reply: { text: 'long', usage: { prompt_tokens: 60, completion_tokens: 50 } } });
    const call = await newKey('tpm-100', { tpm_limit: 100 });
    expect((await call('POST', '/chat/completions', chat())).status).toBe(200);
    const refused = await call('POST', '/chat/completions', chat());
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBeTruthy();
    expect(refused.body.error.message).toMatch(/key "tpm-100" allows 100 tokens per minute \(tpm_limit\)/);
    expect(mock.requests).toHaveLength(1);
  });

  it('lets a call under tpm_limit through', async () => {
    await awayFromMinuteEdge();
    mock.enqueue({ times: 2, reply: { text: 'short', usage: { prompt_tokens: 10, completion_tokens: 10 } } });
    const call = await newKey('tpm-roomy', { tpm_limit: 100 });
    expect((await call('POST', '/chat/completions', chat())).status).toBe(200);
    expect((await call('POST', '/chat/completions', chat())).status).toBe(200);
  });

  it('refuses the 3rd call in flight on a concurrency_limit of 2, and frees a slot when a call ends', async () => {
    mock.enqueue({ times: 3, delayMs: 600, reply: { text: 'slow' } });
    const call = await newKey('conc-two', { concurrency_limit: 2 });
    const first = [call('POST', '/chat/completions', chat()), call('POST', '/chat/completions', chat())];
    await new Promise((r) => setTimeout(r, 200));
    const third = await call('POST', '/chat/completions', chat());
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toBe('1');
    expect(third.body.error.message).toMatch(/key "conc-two" allows 2 calls in flight \(concurrency_limit\)/);
    expect((await Promise.all(first)).map((r) => r.status)).toEqual([200, 200]);
    expect((await call('POST', '/chat/completions', chat())).status).toBe(200);
  });

  it('holds a streaming call in flight until its stream ends', async () => {
    mock.enqueue({ times: 3, eventDelayMs: 150, reply: { text: 'a streamed answer in several events' } });
    const key = await mgmt('POST', '/keys', { name: 'conc-stream', concurrency_limit: 2 });
    const call = client(gw.url, key.body.key, { timeoutMs: 20_000 });
    const streams = [streamed(gw.url, key.body.key, chat()), streamed(gw.url, key.body.key, chat())];
    await new Promise((r) => setTimeout(r, 300));
    const third = await call('POST', '/chat/completions', chat());
    expect(third.status).toBe(429);
    expect(third.body.error.message).toMatch(/concurrency_limit/);
    for (const s of await Promise.all(streams)) {
      expect(s.status).toBe(200);
      expect(s.text).toContain('[DONE]');
    }
    expect((await call('POST', '/chat/completions', chat())).status).toBe(200);
  });

  it("counts a guardrail's limits over every key it covers, naming the guardrail", async () => {
    await awayFromMinuteEdge();
    const a = await mgmt('POST', '/keys', { name: 'team-a' });
    const b = await mgmt('POST', '/keys', { name: 'team-b' });
    const g = await mgmt('POST', '/guardrails', { name: 'team quota', rpm_limit: 3 });
    const assigned = await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
      key_hashes: [a.body.data.hash, b.body.data.hash],
    });
    expect(assigned.status).toBe(200);
    const callA = client(gw.url, a.body.key);
    const callB = client(gw.url, b.body.key);
    expect((await callA('POST', '/chat/completions', chat())).status).toBe(200);
    expect((await callA('POST', '/chat/completions', chat())).status).toBe(200);
    expect((await callB('POST', '/chat/completions', chat())).status).toBe(200);
    const refused = await callB('POST', '/chat/completions', chat());
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBeTruthy();
    expect(refused.body.error.message).toMatch(
      /guardrail "team quota" allows 3 requests per minute \(rpm_limit\)/,
    );
    expect(mock.requests).toHaveLength(3);
  });

  it("holds a guardrail's concurrency_limit across its keys", async () => {
    mock.enqueue({ times: 2, delayMs: 600, reply: { text: 'slow' } });
    const a = await mgmt('POST', '/keys', { name: 'pool-a' });
    const b = await mgmt('POST', '/keys', { name: 'pool-b' });
    const g = await mgmt('POST', '/guardrails', { name: 'pool', concurrency_limit: 1 });
    await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
      key_hashes: [a.body.data.hash, b.body.data.hash],
    });
    const running = client(gw.url, a.body.key)('POST', '/chat/completions', chat());
    await new Promise((r) => setTimeout(r, 200));
    const refused = await client(gw.url, b.body.key)('POST', '/chat/completions', chat());
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toMatch(/guardrail "pool" allows 1 call in flight/);
    expect((await running).status).toBe(200);
    expect((await client(gw.url, b.body.key)('POST', '/chat/completions', chat())).status).toBe(200);
  });

  it('frees the slot of a stream the caller walked away from', async () => {
    mock.enqueue({ eventDelayMs: 400, reply: { text: 'a long answer the caller will not wait for' } });
    const key = await mgmt('POST', '/keys', { name: 'conc-gone', concurrency_limit: 1 });
    const abort = new AbortController();
    const res = await fetch(`${gw.url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.body.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...chat(), stream: true }),
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    const call = client(gw.url, key.body.key, { timeoutMs: 20_000 });
    expect((await call('POST', '/chat/completions', chat())).status).toBe(429);
    abort.abort();
    let status = 0;
    for (let i = 0; i < 40 && status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 50));
      status = (await call('POST', '/chat/completions', chat())).status;
    }
    expect(status).toBe(200);
  });

  it('leaves batch requests out of the usage limits', async () => {
    mock.enqueue({ times: 3, reply: { text: 'ok', usage: { prompt_tokens: 50, completion_tokens: 50 } } });
    const call = await newKey('batched', { rpm_limit: 1, tpm_limit: 10, concurrency_limit: 1 });
    const created = await call('POST', '/batches', {
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      requests: Array.from({ length: 3 }, (_, i) => ({ custom_id: `b-${i}`, body: chat() })),
    });
    expect(created.status, created.text).toBe(202);
    let batch: any = null;
    for (let i = 0; i < 200 && !['completed', 'failed'].includes(batch?.status); i++) {
      await new Promise((r) => setTimeout(r, 50));
      batch = (await call('GET', `/batches/${created.body.id}`)).body;
    }
    expect(batch.request_counts).toEqual({ completed: 3, failed: 0, total: 3 });
  });

  it('frees the slot of a call that failed upstream', async () => {
    mock.enqueue({ times: 2, status: 500, error: { message: 'boom' } });
    const call = await newKey('conc-fail', { concurrency_limit: 1 });
    expect((await call('POST', '/chat/completions', chat())).status).toBeGreaterThanOrEqual(500);
    expect((await call('POST', '/chat/completions', chat())).status).toBe(200);
  });
});

/**
 * Two gateways sharing one Redis (their own databases, the same API key on each): the counters are
 * Redis's, so the pair admits what one node would. Each burst is split evenly between the nodes.
 */
describe.skipIf(!redisUp)('key usage limits across two nodes sharing Redis', () => {
  const nodes: TestGateway[] = [];
  let mock: MockUpstream;
  const apiKey = `sk-gh-v1-${randomBytes(32).toString('hex')}`;
  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    const env = {
      ...up.env,
      REDIS_URL,
      GATEHOUSE_REDIS_PREFIX: `gatehouse-test:${randomBytes(6).toString('hex')}`,
      GATEHOUSE_BOOTSTRAP_API_KEY: apiKey,
      GATEHOUSE_RATE_LIMIT_REQUESTS: '10000',
    };
    nodes.push(await startTestGateway('sqlite', { env }), await startTestGateway('sqlite', { env }));
  });
  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  /** Sets the shared key's limits on both nodes (each has its own database). */
  async function limit(limits: object) {
    for (const n of nodes) {
      const mgmt = client(n.url, n.managementKey);
      // The bootstrap API key, the only inference key listed.
      const [key] = (await mgmt('GET', '/keys')).body.data;
      const res = await mgmt('PATCH', `/keys/${key.hash}`, {
        rpm_limit: null,
        tpm_limit: null,
        concurrency_limit: null,
        ...limits,
      });
      expect(res.status).toBe(200);
    }
  }

  /** `n` calls at once, alternating between the nodes; their statuses. */
  const burst = async (n: number) =>
    (
      await Promise.all(
        Array.from({ length: n }, (_, i) =>
          client((nodes[i % 2] as TestGateway).url, apiKey, { timeoutMs: 20_000 })(
            'POST',
            '/chat/completions',
            chat(),
          ),
        ),
      )
    ).map((r) => r.status);

  it('admits exactly rpm_limit requests per minute across both nodes', async () => {
    await awayFromMinuteEdge();
    await limit({ rpm_limit: 10 });
    const statuses = await burst(30);
    const served = statuses.filter((s) => s === 200).length;
    console.info(`two nodes, rpm_limit 10, 30 calls at once: ${served} served (overshoot ${served - 10})`);
    expect(served).toBe(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
  });

  it('holds concurrency_limit across both nodes: never more calls upstream at once than the limit', async () => {
    await limit({ concurrency_limit: 3 });
    mock.enqueue({ times: 20, delayMs: 500, reply: { text: 'slow' } });
    const statuses = await burst(20);
    const served = statuses.filter((s) => s === 200).length;
    console.info(
      `two nodes, concurrency_limit 3, 20 calls at once: ${served} served (overshoot ${served - 3})`,
    );
    expect(served).toBe(3);
    expect((await burst(2)).filter((s) => s === 200).length).toBe(2);
  });

  it("counts one node's tokens against the other's next call", async () => {
    await awayFromMinuteEdge();
    await limit({ tpm_limit: 100 });
    mock.enqueue({ reply: { text: 'long', usage: { prompt_tokens: 80, completion_tokens: 40 } } });
    const first = await client((nodes[0] as TestGateway).url, apiKey)('POST', '/chat/completions', chat());
    expect(first.status).toBe(200);
    const next = await client((nodes[1] as TestGateway).url, apiKey)('POST', '/chat/completions', chat());
    expect(next.status).toBe(429);
    expect(next.body.error.message).toMatch(/tpm_limit/);
  });
});
