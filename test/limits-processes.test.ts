/**
 * Usage limits of a key across two real `serve` processes sharing PostgreSQL and Redis (as a
 * deployment runs them): requests per minute, calls in flight and tokens per minute hold across
 * both, and the overshoot is measured (printed) — the in-process variant is in limits.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, postgresUrl } from './support/gateway.js';
import { client } from './support/http.js';
import { type MockUpstream, startMockUpstream } from './support/mock-upstream.js';
import {
  type GatehouseProcess,
  killAll,
  newKeys,
  type SharedDatabase,
  sharedDatabase,
  startProcess,
  waitFor,
} from './support/processes.js';
import { REDIS_URL, redisReachable } from './support/redis.js';

const redisUp = await redisReachable(REDIS_URL);
const price = { prompt: 1, completion: 2 };
const chat = (model: string) => ({ model, messages: [{ role: 'user', content: 'hi' }] });

/** Per-minute windows are clock minutes: a test starting in a minute's last seconds waits for the next. */
async function awayFromMinuteEdge() {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 15_000) await new Promise((r) => setTimeout(r, left + 50));
}

/** An OpenAI-format upstream that holds every request until the test releases them all. */
async function holdingUpstream() {
  const seen: IncomingMessage[] = [];
  const held: (() => void)[] = [];
  const server: Server = createServer((req, res) => {
    seen.push(req);
    req.resume();
    held.push(() =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'chatcmpl-held',
          object: 'chat.completion',
          created: 1,
          model: 'gpt-held',
          choices: [{ index: 0, message: { role: 'assistant', content: 'held' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      ),
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    releaseAll: () => {
      for (const r of held.splice(0)) r();
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe.skipIf(!postgresUrl || !redisUp)(
  'usage limits across two serve processes on PostgreSQL and Redis',
  () => {
    let db: SharedDatabase;
    let mock: MockUpstream;
    let hold: Awaited<ReturnType<typeof holdingUpstream>>;
    const nodes: GatehouseProcess[] = [];
    const keys = newKeys();

    beforeAll(async () => {
      mock = await startMockUpstream();
      hold = await holdingUpstream();
      const config = {
        providers: [
          {
            slug: 'openai',
            kind: 'openai',
            base_url: `${mock.url}/v1`,
            api_key: 'sk-op-0000',
            native_batches: false,
          },
          { slug: 'held', kind: 'openai-compatible', base_url: hold.url, discover_models: false },
        ],
        models: [
          { id: 'test/gpt', endpoints: [{ provider: 'openai', upstream_model: 'gpt-x', pricing: price }] },
          { id: 'test/held', endpoints: [{ provider: 'held', upstream_model: 'gpt-held', pricing: price }] },
        ],
      };
      const file = join(mkdtempSync(join(tmpdir(), 'gatehouse-limits-')), 'gatehouse.json');
      writeFileSync(file, JSON.stringify(config));
      db = await sharedDatabase('postgres');
      const env = {
        GATEHOUSE_CONFIG: file,
        REDIS_URL,
        GATEHOUSE_REDIS_PREFIX: `gatehouse-test:${randomBytes(6).toString('hex')}`,
        GATEHOUSE_RATE_LIMIT_REQUESTS: '10000',
        GATEHOUSE_WORKER: 'off',
      };
      nodes.push(
        ...(await Promise.all(
          ['node-a', 'node-b'].map((name) => startProcess('serve', { name, db, keys, env, readyMs: 60_000 })),
        )),
      );
      const admin = client(nodes[0]!.url, ADMIN_TOKEN);
      const orgs = await admin('GET', '/admin/organizations');
      await admin('POST', '/admin/credits', { organization_id: orgs.body.data[0].id, amount_usd: 100 });
      // The credits reach the other node through the cluster bus.
      await waitFor('node-b to see the credits', async () => {
        mock.enqueue({ reply: { text: 'ok' } });
        return (
          (await client(nodes[1]!.url, keys.apiKey)('POST', '/chat/completions', chat('test/gpt'))).status ===
          200
        );
      });
    }, 120_000);
    afterAll(async () => {
      await killAll();
      await db?.drop();
      await mock?.close();
      hold?.releaseAll();
      await hold?.close();
    });
    beforeEach(() => mock.reset());

    /** A new API key with `limits` (new: cached on neither node). */
    async function keyWith(limits: object): Promise<string> {
      const res = await client(nodes[0]!.url, keys.managementKey)('POST', '/keys', {
        name: `limited-${randomBytes(3).toString('hex')}`,
        ...limits,
      });
      expect(res.status, res.text).toBe(201);
      return res.body.key as string;
    }

    /** `n` calls at once, alternating between the nodes; their statuses. */
    const burst = async (key: string, n: number, model = 'test/gpt') =>
      (
        await Promise.all(
          Array.from({ length: n }, (_, i) =>
            client(nodes[i % 2]!.url, key, { timeoutMs: 60_000 })('POST', '/chat/completions', chat(model)),
          ),
        )
      ).map((r) => r.status);

    it('rpm_limit: the cluster admits exactly the limit', async () => {
      await awayFromMinuteEdge();
      const key = await keyWith({ rpm_limit: 10 });
      const statuses = await burst(key, 30);
      const served = statuses.filter((s) => s === 200).length;
      console.info(
        `two serve processes, rpm_limit 10, 30 calls at once: ${served} served (overshoot ${served - 10})`,
      );
      expect(served).toBe(10);
      expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    }, 60_000);

    it('concurrency_limit: never more calls upstream at once than the limit', async () => {
      const key = await keyWith({ concurrency_limit: 3 });
      const calls = Array.from({ length: 12 }, (_, i) =>
        client(nodes[i % 2]!.url, key, { timeoutMs: 60_000 })('POST', '/chat/completions', chat('test/held')),
      );
      // The upstream answers none of them until every call was either refused or reached it: all
      // 12 overlap. (A refusal can come back before an admitted call reaches the upstream, so both
      // are waited for.)
      let refused = 0;
      for (const c of calls) void c.then((r) => void (r.status === 429 && refused++));
      let atOnce = 0;
      try {
        await waitFor('every call to be refused or upstream', () => refused + hold.seen.length >= 12, {
          timeoutMs: 30_000,
        });
        atOnce = hold.seen.length;
      } finally {
        hold.releaseAll(); // a timeout must not leave calls open into the processes' shutdown
      }
      console.info(
        `two serve processes, concurrency_limit 3, 12 calls at once: ${atOnce} upstream at once (overshoot ${atOnce - 3})`,
      );
      expect(atOnce).toBe(3);
      expect(refused).toBe(9);
      expect((await Promise.all(calls)).filter((r) => r.status === 200)).toHaveLength(3);
      // The slots are free again, on both nodes.
      const again = await burst(key, 2);
      expect(again).toEqual([200, 200]);
    }, 60_000);

    it("tpm_limit: one node's tokens refuse the other's next call; a burst overshoots by the calls in flight", async () => {
      await awayFromMinuteEdge();
      const key = await keyWith({ tpm_limit: 100 });
      // One at a time, alternating: 40 tokens each → 40, 80, 120: the 4th call is refused.
      mock.enqueue({ times: 50, reply: { text: 'x', usage: { prompt_tokens: 30, completion_tokens: 10 } } });
      const sequential: number[] = [];
      for (let i = 0; i < 5; i++)
        sequential.push(
          (await client(nodes[i % 2]!.url, key)('POST', '/chat/completions', chat('test/gpt'))).status,
        );
      expect(sequential).toEqual([200, 200, 200, 429, 429]);

      // At once, on a fresh key: every call admitted before the first one ends and is counted.
      const burstKey = await keyWith({ tpm_limit: 100 });
      const statuses = await burst(burstKey, 20);
      const served = statuses.filter((s) => s === 200).length;
      console.info(
        `two serve processes, tpm_limit 100, 20 calls of 40 tokens at once: ${served} served, ${served * 40} tokens (overshoot ${served * 40 - 100} tokens; 3 calls when one at a time)`,
      );
      expect(served).toBeGreaterThanOrEqual(3);
      expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
    }, 60_000);
  },
);
