/**
 * A changed provider entry of GATEHOUSE_CONFIG (base URL, key, headers) takes effect on a catalog
 * reload, without a restart — through the operator endpoint and through SIGHUP to a real `serve`
 * process: the next call reaches the new upstream with the new key; a call in flight finishes on
 * the upstream it started with; a reload with an invalid provider entry is refused naming the
 * field, and the gateway keeps serving with what it had.
 */
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';
import { type MockUpstream, startMockUpstream } from './support/mock-upstream.js';
import {
  GiveUp,
  killAll,
  newKeys,
  type SharedDatabase,
  sharedDatabase,
  startProcess,
  waitFor,
} from './support/processes.js';

const KEY_A = 'sk-operator-first-000000';
const KEY_B = 'sk-operator-second-00000';

/** A GATEHOUSE_CONFIG with one OpenAI provider at `baseUrl` and `test/gpt` on it. */
function configFor(baseUrl: string, apiKey: string, headers?: Record<string, string>): object {
  return {
    providers: [
      { slug: 'openai', kind: 'openai', base_url: baseUrl, api_key: apiKey, ...(headers ? { headers } : {}) },
    ],
    models: [
      {
        id: 'test/gpt',
        endpoints: [{ provider: 'openai', upstream_model: 'gpt-x', pricing: { prompt: 1, completion: 2 } }],
      },
    ],
  };
}

const chat = { model: 'test/gpt', messages: [{ role: 'user', content: 'hi' }] };

/** An OpenAI-format upstream that answers each request only once the test releases it. */
async function holdingUpstream() {
  const seen: IncomingMessage[] = [];
  const releases: (() => void)[] = [];
  const server: Server = createServer((req, res) => {
    seen.push(req);
    req.resume();
    releases.push(() =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'chatcmpl-held',
          object: 'chat.completion',
          created: 1,
          model: 'gpt-x',
          choices: [
            { index: 0, message: { role: 'assistant', content: 'held answer' }, finish_reason: 'stop' },
          ],
          usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
        }),
      ),
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    release: () => releases.shift()?.(),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe('provider adapters rebuilt on a catalog reload', () => {
  let first: MockUpstream;
  let second: MockUpstream;
  let file: string;
  const write = (cfg: object | string) =>
    writeFileSync(file, typeof cfg === 'string' ? cfg : JSON.stringify(cfg));
  beforeAll(async () => {
    first = await startMockUpstream();
    second = await startMockUpstream();
    file = join(mkdtempSync(join(tmpdir(), 'gatehouse-reload-')), 'gatehouse.json');
  });
  afterAll(async () => {
    await first?.close();
    await second?.close();
  });

  describe('POST /admin/catalog/reload', () => {
    let gw: TestGateway;
    beforeAll(async () => {
      write(configFor(`${first.url}/v1`, KEY_A));
      gw = await startTestGateway('sqlite', { env: { GATEHOUSE_CONFIG: file } });
    });
    afterAll(async () => gw?.stop());

    it('the next call reaches the new base URL with the new key and headers', async () => {
      first.reset();
      second.reset();
      const call = client(gw.url, gw.apiKey);
      expect((await call('POST', '/chat/completions', chat)).status).toBe(200);
      expect(first.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${KEY_A}`]);

      write(configFor(`${second.url}/v1`, KEY_B, { 'x-team': 'blue' }));
      const reloaded = await adminClient(gw.url)('POST', '/admin/catalog/reload');
      expect(reloaded.status, reloaded.text).toBe(200);
      const res = await call('POST', '/chat/completions', chat);
      expect(res.status, res.text).toBe(200);
      expect(first.requests).toHaveLength(1);
      expect(second.requests).toHaveLength(1);
      expect(second.requests[0]?.headers).toMatchObject({
        authorization: `Bearer ${KEY_B}`,
        'x-team': 'blue',
      });
    });

    it('refuses a reload with an invalid provider entry, naming the field; the gateway keeps serving', async () => {
      second.reset();
      for (const [bad, field] of [
        [{ ...configFor('not a url', KEY_A) }, 'providers[0].base_url'],
        [
          configFor(`${first.url}/v1`, KEY_A, { 'x-bad': 42 as unknown as string }),
          'providers[0].headers.x-bad',
        ],
      ] as const) {
        write(bad);
        const refused = await adminClient(gw.url)('POST', '/admin/catalog/reload');
        expect(refused.status).toBe(422);
        expect(refused.body.error.message).toContain(field);
        expect(refused.text).not.toContain(KEY_A);
        const res = await client(gw.url, gw.apiKey)('POST', '/chat/completions', chat);
        expect(res.status, res.text).toBe(200);
      }
      // Still the configuration in use before: the second upstream, its key.
      expect(second.requests.map((r) => r.headers.authorization)).toEqual([
        `Bearer ${KEY_B}`,
        `Bearer ${KEY_B}`,
      ]);
    });

    it('a call in flight finishes on the upstream it started with; the next one uses the new entry', async () => {
      const held = await holdingUpstream();
      try {
        write(configFor(held.url, KEY_A));
        expect((await adminClient(gw.url)('POST', '/admin/catalog/reload')).status).toBe(200);
        const inFlight = client(gw.url, gw.apiKey)('POST', '/chat/completions', chat);
        await waitFor('the call to reach the held upstream', () => held.seen.length === 1);

        second.reset();
        write(configFor(`${second.url}/v1`, KEY_B));
        expect((await adminClient(gw.url)('POST', '/admin/catalog/reload')).status).toBe(200);
        const next = await client(gw.url, gw.apiKey)('POST', '/chat/completions', chat);
        expect(next.status).toBe(200);
        expect(second.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${KEY_B}`]);

        held.release();
        const done = await inFlight;
        expect(done.status, done.text).toBe(200);
        expect(done.body.choices[0].message.content).toBe('held answer');
        expect(held.seen[0]?.headers.authorization).toBe(`Bearer ${KEY_A}`);
        expect(held.seen).toHaveLength(1);
      } finally {
        await held.close();
      }
    });
  });

  it('a call in flight on a provider the reload removes still finishes, and is answered', async () => {
    const held = await holdingUpstream();
    write(configFor(`${first.url}/v1`, KEY_A));
    const gw = await startTestGateway('sqlite', { env: { GATEHOUSE_CONFIG: file } });
    try {
      const withHeld = configFor(`${first.url}/v1`, KEY_A) as { providers: object[]; models: object[] };
      // Not asked for its models on reload: the held server answers nothing until released.
      withHeld.providers.push({
        slug: 'local',
        kind: 'openai-compatible',
        base_url: held.url,
        discover_models: false,
      });
      withHeld.models.push({ id: 'test/local', endpoints: [{ provider: 'local', upstream_model: 'gpt-x' }] });
      write(withHeld);
      expect((await adminClient(gw.url)('POST', '/admin/catalog/reload')).status).toBe(200);
      const inFlight = client(gw.url, gw.apiKey)('POST', '/chat/completions', {
        ...chat,
        model: 'test/local',
      });
      await waitFor('the call to reach the held upstream', () => held.seen.length === 1);

      write(configFor(`${first.url}/v1`, KEY_A));
      expect((await adminClient(gw.url)('POST', '/admin/catalog/reload')).status).toBe(200);
      held.release();
      const done = await inFlight;
      expect(done.status, done.text).toBe(200);
      expect(done.body.choices[0].message.content).toBe('held answer');
      const gone = await client(gw.url, gw.apiKey)('POST', '/chat/completions', {
        ...chat,
        model: 'test/local',
      });
      expect(gone.status).toBe(404);
    } finally {
      await gw.stop();
      await held.close();
    }
  });

  describe('SIGHUP to a serve process', () => {
    let db: SharedDatabase;
    beforeAll(async () => {
      db = await sharedDatabase('sqlite');
    });
    afterEach(async () => killAll());
    afterAll(async () => db?.drop());

    it('rebuilds the providers; an invalid entry is logged, naming the field, and the process keeps serving', async () => {
      first.reset();
      second.reset();
      write(configFor(`${first.url}/v1`, KEY_A));
      const keys = newKeys();
      const gw = await startProcess('serve', {
        name: 'gateway',
        db,
        keys,
        env: { GATEHOUSE_CONFIG: file },
        readyMs: 50_000,
      });
      const call = client(gw.url, keys.apiKey);
      expect((await call('POST', '/chat/completions', chat)).status).toBe(200);
      expect(first.requests).toHaveLength(1);

      write(configFor(`${second.url}/v1`, KEY_B));
      gw.kill('SIGHUP');
      // The reload runs in the background: calls go to the first upstream until it is done.
      await waitFor('a call to reach the second upstream', async () => {
        expect((await call('POST', '/chat/completions', chat)).status).toBe(200);
        return second.requests.length > 0;
      });
      expect(second.requests[0]?.headers.authorization).toBe(`Bearer ${KEY_B}`);

      write(configFor('ftp://nowhere', KEY_A));
      gw.kill('SIGHUP');
      await waitFor('the refused reload to be logged', () =>
        gw.output().includes('model catalog not reloaded'),
      );
      expect(gw.output()).toContain('providers[0].base_url');
      const before = second.requests.length;
      expect((await call('POST', '/chat/completions', chat)).status).toBe(200);
      expect(second.requests).toHaveLength(before + 1);
      expect(second.requests.at(-1)?.headers.authorization).toBe(`Bearer ${KEY_B}`);
      expect(gw.output()).not.toContain(KEY_A);
      expect(gw.hasExited()).toBe(false);
    });

    it('a separate worker process reloads too: its next batch request reaches the new upstream', async () => {
      first.reset();
      second.reset();
      write(configFor(`${first.url}/v1`, KEY_A));
      const keys = newKeys();
      const env = { GATEHOUSE_CONFIG: file };
      const gw = await startProcess('serve', {
        name: 'gateway',
        db,
        keys,
        env: { ...env, GATEHOUSE_WORKER: 'off' },
        readyMs: 50_000,
      });
      const worker = await startProcess('worker', { name: 'worker', db, keys, env, readyMs: 50_000 });
      const admin = adminClient(gw.url);
      const orgs = await admin('GET', '/admin/organizations');
      await admin('POST', '/admin/credits', { organization_id: orgs.body.data[0].id, amount_usd: 10 });

      write(configFor(`${second.url}/v1`, KEY_B));
      worker.kill('SIGHUP');
      await waitFor('the worker to reload its catalog', () => {
        if (worker.hasExited()) throw new GiveUp(`the worker exited on SIGHUP\n${worker.output()}`);
        return worker.output().includes('model catalog reloaded');
      });
      expect(worker.hasExited()).toBe(false);

      const api = client(gw.url, keys.apiKey);
      const batch = await api('POST', '/batches', {
        endpoint: '/v1/chat/completions',
        completion_window: '24h',
        requests: [{ custom_id: 'one', body: chat }],
      });
      expect(batch.status, batch.text).toBe(202);
      const done = await waitFor(
        'the batch to finish',
        async () => {
          const b = await api('GET', `/batches/${batch.body.id}?results_limit=0`);
          return ['completed', 'failed', 'expired', 'cancelled'].includes(b.body.status) ? b.body : null;
        },
        { timeoutMs: 30_000, everyMs: 100 },
      );
      expect(done.status, JSON.stringify(done)).toBe('completed');
      expect(done.request_counts).toMatchObject({ completed: 1, failed: 0 });
      // The gateway process was not reloaded: only the worker's own providers say where calls go.
      expect(first.requests).toHaveLength(0);
      // (An OpenAI provider is first asked to take the batch natively: this mock has no Files API.)
      const calls = second.requests.filter((r) => r.path === '/v1/chat/completions');
      expect(calls).toHaveLength(1);
      for (const r of second.requests) expect(r.headers.authorization).toBe(`Bearer ${KEY_B}`);
      expect(worker.output()).not.toContain(KEY_B);
    }, 120_000);
  });
});
