/**
 * Regional hostnames (GATEHOUSE_REGIONAL_HOSTS) on /interns and /vault: the refusal follows the Host
 * header and, for requests through a reverse proxy that rewrites Host, X-Forwarded-Host.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';

describe('regional hostnames', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway('sqlite', { env: { GATEHOUSE_REGIONAL_HOSTS: 'eu.gatehouse.test' } });
  });
  afterAll(() => gw?.stop());

  /** GET with exactly these headers (fetch would not send a Host of our choosing). */
  const get = (path: string, headers: Record<string, string>) =>
    new Promise<{ status: number; body: any }>((resolve, reject) => {
      const req = request(
        `${gw.url}/api/v1${path}`,
        { headers: { authorization: `Bearer ${gw.apiKey}`, ...headers } },
        (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text || 'null') }));
        },
      );
      req.on('error', reject);
      req.end();
    });

  it('refuses a regional Host, and a regional X-Forwarded-Host behind a proxy that rewrote Host', async () => {
    for (const headers of <Record<string, string>[]>[
      { host: 'EU.gatehouse.test:8080' },
      { host: 'gatehouse.internal', 'x-forwarded-host': 'eu.gatehouse.test' },
      { host: 'gatehouse.internal', 'x-forwarded-host': 'gatehouse.test, eu.gatehouse.test' },
    ]) {
      // The interns routes answer string codes, the vault ones the status.
      for (const [path, code] of [
        ['/interns', 'region_not_allowed'],
        ['/vault/secrets', 403],
      ] as const) {
        const res = await get(path, headers);
        expect(res.status, `${path} ${JSON.stringify(headers)}`).toBe(403);
        expect(res.body.error.code).toBe(code);
      }
    }
    const main = await get('/interns', { host: 'gatehouse.test', 'x-forwarded-host': 'gatehouse.test' });
    expect(main.status).toBe(200);
  });
});
