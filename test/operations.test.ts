import { get, type IncomingMessage } from 'node:http';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';

describe('operations endpoints', () => {
  let gw: TestGateway;
  const lines: string[] = [];
  beforeAll(async () => {
    const logStream = new Writable({
      write(chunk, _enc, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    gw = await startTestGateway('sqlite', { logStream });
  });
  afterAll(() => gw?.stop());

  it('answers liveness and readiness', async () => {
    expect(await (await fetch(`${gw.url}/health`)).json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${gw.url}/ready`);
    expect(ready.status).toBe(200);
  });

  it('exports Prometheus metrics by route pattern and status, with a latency histogram', async () => {
    const call = client(gw.url, gw.managementKey);
    await call('GET', `/keys/${'a'.repeat(64)}`);
    await call('GET', '/key');
    const res = await fetch(`${gw.metricsUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toMatch(
      /gatehouse_http_requests_total\{method="GET",route="\/api\/v1\/keys\/:hash",status_code="404"\} 1/,
    );
    expect(text).toMatch(
      /gatehouse_http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/api\/v1\/key"/,
    );
    expect(text).not.toContain('a'.repeat(64)); // concrete URLs are not labels
  });

  it('serves /metrics only on its own loopback listener, not on the API port', async () => {
    expect(new URL(gw.metricsUrl as string).hostname).toBe('127.0.0.1');
    expect(gw.metricsUrl).not.toBe(gw.url);
    const onApi = await fetch(`${gw.url}/metrics`);
    expect(onApi.status).toBe(404);
    expect(await onApi.text()).not.toContain('gatehouse_');
    expect((await fetch(`${gw.metricsUrl}/other`)).status).toBe(404);
    expect((await fetch(`${gw.metricsUrl}/metrics`, { method: 'POST' })).status).toBe(404);
    // Bound to loopback: not reachable through another local address.
    const port = new URL(gw.metricsUrl as string).port;
    const { networkInterfaces } = await import('node:os');
    const other = Object.values(networkInterfaces())
      .flat()
      .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
    if (other) await expect(fetch(`http://${other}:${port}/metrics`)).rejects.toThrow();
  });

  it('defaults the metrics listener to 127.0.0.1:9464, and turns it off with GATEHOUSE_METRICS_PORT=off', () => {
    const dir = gw.services.config.dataDir;
    expect(loadConfig({ GATEHOUSE_DATA_DIR: dir }).metrics).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(loadConfig({ GATEHOUSE_DATA_DIR: dir, GATEHOUSE_METRICS_PORT: 'off' }).metrics).toBeNull();
  });

  it('refuses to start when the metrics port is taken, saying which setting to change', async () => {
    const { createServer } = await import('node:net');
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as { port: number }).port;
    try {
      await expect(
        startTestGateway('sqlite', { env: { GATEHOUSE_METRICS_PORT: String(port) } }),
      ).rejects.toThrow(
        `GATEHOUSE_METRICS_PORT: cannot listen on 127.0.0.1:${port} for /metrics (EADDRINUSE)`,
      );
    } finally {
      taken.close();
    }
  });

  it('publishes an OpenAPI 3.1 document generated from the route schemas, and a reference page', async () => {
    const doc: any = await (await fetch(`${gw.url}/api/v1/openapi.json`)).json();
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.paths['/keys'].post.requestBody).toBeDefined();
    expect(doc.paths['/credits/crypto-charge'].post.deprecated).toBe(true);
    expect(doc.components.schemas.ApiKey).toBeDefined();
    const page = await fetch(`${gw.url}/docs/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('/api/v1/openapi.json');
    const script = await fetch(`${gw.url}/docs/js/scalar.js`);
    expect(script.status).toBe(200); // served locally, no CDN
  });

  it('logs one access line per request: method, URL, status, request id and time', async () => {
    const marker = `probe-${Date.now()}`;
    // Connection: close — the socket is gone once the response has been written.
    const res = await new Promise<IncomingMessage>((resolve, reject) =>
      get(`${gw.url}/api/v1/models?${marker}=1`, { headers: { connection: 'close' } }, resolve).on(
        'error',
        reject,
      ),
    );
    res.resume();
    expect(res.statusCode).toBe(200);
    // The line is written once the response has gone out.
    for (let i = 0; i < 50 && !lines.some((l) => l.includes(marker)); i++)
      await new Promise((r) => setTimeout(r, 10));
    const mine = lines.filter((l) => l.includes(marker)).map((l) => JSON.parse(l));
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({
      level: 30,
      msg: 'request completed',
      reqId: res.headers['x-request-id'],
      req: { method: 'GET', url: `/api/v1/models?${marker}=1`, remoteAddress: '127.0.0.1' },
      res: { statusCode: 200 },
    });
    expect(mine[0].responseTime).toBeGreaterThan(0);
  });

  it('redacts credential-looking query parameters in every logged URL', async () => {
    const secrets = ['qs-secret-one-1234', 'qs-secret-two-5678', 'qs-secret-three-90', 'qs-secret-four-12'];
    const marker = `redact-${Date.now()}`;
    // A matched route, an unknown one (404) and one that errors: every line that carries the URL.
    const urls = [
      `/api/v1/models?${marker}=1&api_key=${secrets[0]}&Token=${secrets[1]}`,
      `/api/v1/nowhere?${marker}=2&KEY=${secrets[2]}`,
      `/api/v1/key?${marker}=3&access_token=${secrets[3]}`,
    ];
    for (const u of urls) await (await fetch(`${gw.url}${u}`)).arrayBuffer();
    for (let i = 0; i < 50 && lines.filter((l) => l.includes(marker)).length < 3; i++)
      await new Promise((r) => setTimeout(r, 10));
    const mine = lines.filter((l) => l.includes(marker)).map((l) => JSON.parse(l));
    expect(mine.map((l) => l.req.url).sort()).toEqual([
      `/api/v1/key?${marker}=3&access_token=[REDACTED]`,
      `/api/v1/models?${marker}=1&api_key=[REDACTED]&Token=[REDACTED]`,
      `/api/v1/nowhere?${marker}=2&KEY=[REDACTED]`,
    ]);
    const all = lines.join('\n');
    for (const secret of secrets) expect(all).not.toContain(secret);
  });

  it('never writes keys or bodies to the log', async () => {
    const call = client(gw.url, gw.managementKey);
    const created = await call('POST', '/keys', { name: 'logged?' });
    await client(gw.url, created.body.key)('GET', '/key');
    await call('POST', '/keys', { name: 1, secret_field: 'do-not-log-me' });
    const all = lines.join('\n');
    expect(lines.length).toBeGreaterThan(3);
    for (const secret of [gw.managementKey, gw.apiKey, created.body.key, 'do-not-log-me']) {
      expect(all).not.toContain(secret);
    }
  });

  it('writes background failures to the same log: a failed usage write says it will retry', async () => {
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 1,
    });
    // The generations table gone: the accountant's next group commit fails and is retried.
    await gw.services.db.schema.alterTable('generations').renameTo('generations_away').execute();
    try {
      const res = await client(gw.url, gw.apiKey)('POST', '/chat/completions', {
        model: 'gatehouse/echo',
        messages: [{ role: 'user', content: 'count me' }],
      });
      expect(res.status).toBe(200);
      for (let i = 0; i < 200 && !lines.some((l) => l.includes('writing generations failed')); i++)
        await new Promise((r) => setTimeout(r, 10));
      const line = lines.find((l) => l.includes('writing generations failed'));
      expect(line).toBeDefined();
      expect(JSON.parse(line as string)).toMatchObject({ level: 50, component: 'accounting', queued: 1 });
    } finally {
      await gw.services.db.schema.alterTable('generations_away').renameTo('generations').execute();
    }
    // Once the table is back, the retried row is written.
    await gw.services.accountant.flush();
    const rows = await gw.services.db.selectFrom('generations').select('id').execute();
    expect(rows.length).toBeGreaterThan(0);
  });

  it('answers 500 in the envelope with a request id, logs it, and reports not ready when the database is gone', async () => {
    await gw.services.db.destroy();
    const res = await client(gw.url, 'sk-gh-v1-unknown-key-so-the-cache-misses')('GET', '/key');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({
      error: { code: 500, message: 'Internal server error', metadata: { request_id: expect.any(String) } },
    });
    expect(res.text).not.toMatch(/at .*\.ts:\d+/); // no stack trace
    const logged = lines.find(
      (l) => l.includes(res.body.error.metadata.request_id) && l.includes('"level":50'),
    );
    expect(logged).toBeDefined();
    expect((await fetch(`${gw.url}/ready`)).status).toBe(503);
  });
});
