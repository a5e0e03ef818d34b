/**
 * SIGTERM during streamed responses and batch uploads, on a real `serve` process
 * (GATEHOUSE_SHUTDOWN_GRACE_MS = GRACE_MS). In flight when the signal comes:
 * - a stream that ends within the grace: it must complete (finish reason, `[DONE]`) and its usage
 *   be written before the process exits;
 * - a stream longer than the grace: its connection is closed at the grace, its generation (cut
 *   short) and partial usage are still written;
 * - a batch upload that ends within the grace: 202, and the batch runs to completion after a restart;
 * - a batch upload longer than the grace: the client gets a connection error (never a 202), and
 *   no trace of the half-read batch is left (nothing `validating`, before or after a restart).
 * Meanwhile new connections are refused, and the process exits 0 within GRACE_MS + EXIT_SLACK_MS.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN } from '../../support/gateway.js';
import {
  type GatehouseProcess,
  type Keys,
  killAll,
  newKeys,
  type SharedDatabase,
  sharedDatabase,
  startProcess,
  waitFor,
} from '../../support/processes.js';
import { figures, parseSse, sleep } from './common.js';

const GRACE_MS = 4_000;
/** After the grace: closing connections, the worker's drain, writing accounting, closing the db. */
const EXIT_SLACK_MS = 4_000;

interface StreamResult {
  text: string;
  /** The transport failed (connection closed) before the response ended. */
  error: string | null;
  complete: boolean;
}

/** A streamed chat completion over its own connection; `first` resolves on the first bytes. */
function openStream(url: string, key: string, words: number, chunkDelayMs: number) {
  const text = Array.from({ length: words }, (_, i) => `w${i}`).join(' ');
  const directive = `gatehouse:${JSON.stringify({ text, chunk_delay_ms: chunkDelayMs })}`;
  let onFirst: () => void = () => {};
  const first = new Promise<void>((r) => {
    onFirst = r;
  });
  const done = new Promise<StreamResult>((resolve) => {
    let body = '';
    const finish = (error: string | null) => {
      const events = parseSse(body);
      const content = events.map((e) => e.data?.choices?.[0]?.delta?.content ?? '').join('');
      const complete =
        error === null &&
        events.at(-1)?.raw === '[DONE]' &&
        events.some((e) => e.data?.choices?.[0]?.finish_reason === 'stop') &&
        content === text;
      resolve({ text: body, error, complete });
    };
    const req = httpRequest(`${url}/api/v1/chat/completions`, {
      method: 'POST',
      agent: false,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    });
    req.on('response', (res) => {
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
        onFirst();
      });
      res.on('end', () => finish(null));
      res.on('error', (err) => finish(String(err)));
      res.on('aborted', () => finish('aborted'));
    });
    req.on('error', (err) => finish(String(err)));
    req.end(
      JSON.stringify({
        model: 'gatehouse/echo',
        stream: true,
        messages: [{ role: 'user', content: directive }],
      }),
    );
  });
  return { first, done };
}

interface UploadResult {
  status: number | null;
  body: any;
  error: string | null;
}

/**
 * POST /batches with a chunked body of `n` echo requests: the first `fast` at once, the rest one
 * every `gapMs` (a slow client). `written` resolves once the fast part is on the wire.
 */
function upload(url: string, key: string, n: number, fast: number, gapMs: number) {
  let onWritten: () => void = () => {};
  const written = new Promise<void>((r) => {
    onWritten = r;
  });
  const item = (i: number) =>
    `${i ? ',' : ''}${JSON.stringify({ custom_id: `r-${i}`, body: { model: 'gatehouse/echo', messages: [{ role: 'user', content: `item ${i} ${'x'.repeat(150)}` }] } })}`;
  const done = new Promise<UploadResult>((resolve) => {
    let settled = false;
    const settle = (r: UploadResult) => {
      if (!settled) resolve(r);
      settled = true;
    };
    const req = httpRequest(`${url}/api/v1/batches`, {
      method: 'POST',
      agent: false,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        text += c;
      });
      res.on('end', () => {
        let body: any = null;
        try {
          body = JSON.parse(text);
        } catch {}
        settle({ status: res.statusCode ?? 0, body, error: null });
      });
      res.on('aborted', () => settle({ status: res.statusCode ?? 0, body: null, error: 'aborted' }));
    });
    req.on('error', (err) => settle({ status: null, body: null, error: String(err) }));
    void (async () => {
      req.write('{"endpoint":"/v1/chat/completions","completion_window":"24h","requests":[');
      let buf = '';
      for (let i = 0; i < fast; i++) buf += item(i);
      req.write(buf);
      onWritten();
      for (let i = fast; i < n; i++) {
        if (settled || req.destroyed) return;
        await sleep(gapMs);
        req.write(item(i));
      }
      req.end(']}');
    })();
  });
  return { written, done };
}

/** Whether a fresh connection to `url` is refused or answered 503 (draining). */
function newConnection(url: string): Promise<string> {
  return new Promise((resolve) => {
    const req = httpRequest(`${url}/health`, { agent: false });
    req.on('response', (res) => {
      res.resume();
      resolve(`HTTP ${res.statusCode}`);
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? String(err)));
    req.end();
  });
}

export function shutdownFaults(): void {
  describe('SIGTERM during streams and batch uploads (a real serve process)', () => {
    let db: SharedDatabase;
    let keys: Keys;
    let gw: GatehouseProcess;
    const env = {
      GATEHOUSE_SHUTDOWN_GRACE_MS: String(GRACE_MS),
      GATEHOUSE_INTERNS_RUNTIMES: 'off',
      GATEHOUSE_BATCH_POLL_MS: '100',
      LOG_LEVEL: 'info',
    };

    beforeAll(async () => {
      db = await sharedDatabase('sqlite');
      keys = newKeys();
      gw = await startProcess('serve', { name: 'gateway (SIGTERM)', db, keys, env });
      const [org] = await db.query<{ id: string }>('select id from organizations');
      const res = await fetch(`${gw.url}/api/v1/admin/credits`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ organization_id: org?.id, amount_usd: 100 }),
      });
      expect(res.status).toBe(201);
    });

    afterAll(async () => {
      await killAll();
      await db?.drop();
    });

    it('drains what ends within the grace, cuts what does not, loses nothing, exits 0', async () => {
      // In flight at SIGTERM: streams of ~2 s and ~20 s, uploads of ~1.5 s and ~20 s after it.
      const short = openStream(gw.url, keys.apiKey, 24, 100);
      const long = openStream(gw.url, keys.apiKey, 200, 100);
      const quick = upload(gw.url, keys.apiKey, 1_200, 1_100, 15);
      const slow = upload(gw.url, keys.apiKey, 3_000, 1_500, 10);
      await Promise.all([short.first, long.first, quick.written, slow.written]);
      await sleep(200); // the first 1,000 requests of each upload reach the store

      const t0 = performance.now();
      gw.kill('SIGTERM');
      await sleep(300);
      const fresh = await newConnection(gw.url);
      expect(fresh).toMatch(/ECONNREFUSED|HTTP 503/);

      const [shortRes, longRes, quickRes, slowRes, exit] = await Promise.all([
        short.done,
        long.done,
        quick.done,
        slow.done,
        gw.exited,
      ]);
      const exitMs = performance.now() - t0;
      expect(exit, gw.output()).toEqual({ code: 0, signal: null });
      expect(exitMs).toBeLessThan(GRACE_MS + EXIT_SLACK_MS);

      // Drained: the short stream completed; the long one was cut at the grace.
      expect(shortRes.complete, shortRes.text).toBe(true);
      expect(longRes.complete).toBe(false);
      // The upload that ended within the grace was accepted whole; the other got no answer.
      expect(quickRes.status, JSON.stringify(quickRes)).toBe(202);
      expect(quickRes.body.request_counts.total).toBe(1_200);
      expect(slowRes.status === null || slowRes.error !== null, JSON.stringify(slowRes)).toBe(true);
      expect(slowRes.status).not.toBe(202);

      // Written before exit: both streams' generations (the cut one as cancelled) and their usage.
      const ids = [shortRes.text, longRes.text].map((t) => parseSse(t).find((e) => e.data?.id)?.data.id);
      const gens = await db.query<{ id: string; status: string; cost_usd: number }>(
        `select id, status, cost_usd from generations where id in (?, ?)`,
        ids,
      );
      const byId = new Map(gens.map((g) => [g.id, g]));
      expect(byId.get(ids[0])).toMatchObject({ status: 'success' });
      expect(byId.get(ids[1])).toMatchObject({ status: 'cancelled' });
      expect(gens.every((g) => g.cost_usd > 0)).toBe(true);
      const [usage] = await db.query<{ n: number }>('select count(*) as n from usage_events');
      expect(Number(usage?.n)).toBeGreaterThanOrEqual(2);

      // The half-read upload left nothing; the accepted one is whole.
      const batches = await db.query<{ id: string; status: string; accepted: number; request_count: number }>(
        'select id, status, accepted, request_count from batches',
      );
      expect(batches).toHaveLength(1);
      expect(batches[0]).toMatchObject({ id: quickRes.body.id, accepted: 1, request_count: 1_200 });
      const [orphans] = await db.query<{ n: number }>(
        'select count(*) as n from batch_requests where batch_id <> ?',
        [quickRes.body.id],
      );
      expect(Number(orphans?.n)).toBe(0);

      // After a restart the accepted batch runs to completion; nothing stays validating.
      const t1 = performance.now();
      gw = await startProcess('serve', { name: 'gateway (after SIGTERM)', db, keys, env });
      const restartMs = performance.now() - t1;
      const done = await waitFor(
        'the accepted batch to complete after the restart',
        async () => {
          const r = await fetch(`${gw.url}/api/v1/batches/${quickRes.body.id}?limit=0`, {
            headers: { authorization: `Bearer ${keys.apiKey}` },
          });
          const b = (await r.json()) as any;
          return b.status === 'completed' ? b : null;
        },
        { timeoutMs: 30_000, everyMs: 200 },
      );
      expect(done.request_counts).toEqual({ total: 1_200, completed: 1_200, failed: 0 });
      const list = (await (
        await fetch(`${gw.url}/api/v1/batches`, { headers: { authorization: `Bearer ${keys.apiKey}` } })
      ).json()) as any;
      expect(list.data.map((b: any) => b.status)).toEqual(['completed']);
      const [validating] = await db.query<{ n: number }>(
        "select count(*) as n from batches where status = 'validating'",
      );
      expect(Number(validating?.n)).toBe(0);

      figures.rows.push(
        ['SIGTERM: grace (GATEHOUSE_SHUTDOWN_GRACE_MS)', `${GRACE_MS} ms`],
        ['SIGTERM: a new connection while draining', fresh],
        ['SIGTERM: stream ending within the grace completed', shortRes.complete ? 'yes' : 'no'],
        [
          'SIGTERM: stream longer than the grace',
          `connection closed at the grace; generation written (${byId.get(ids[1])?.status}, partial usage billed)`,
        ],
        ['SIGTERM: drained streams’ usage written before exit', `${gens.length}/2`],
        [
          'SIGTERM: batch upload ending within the grace',
          `202, ${done.request_counts.completed}/1200 completed after the restart`,
        ],
        [
          'SIGTERM: batch upload longer than the grace',
          `${slowRes.error ?? `HTTP ${slowRes.status}`}; no row left`,
        ],
        ['SIGTERM: exit code, time from signal to exit', `${exit.code}, ${Math.round(exitMs)} ms`],
        ['SIGTERM: batches left validating after the restart', Number(validating?.n)],
        ['SIGTERM: restart time (process start to /health)', `${Math.round(restartMs)} ms`],
      );
      figures.notes.push(
        `SIGTERM: in-flight requests drain for up to GATEHOUSE_SHUTDOWN_GRACE_MS; then their connections are closed, the uploads still being read remove their partial batch, pending usage is written and the process exits 0 (bound: grace + ${EXIT_SLACK_MS} ms here).`,
      );
    }, 90_000);
  });
}
