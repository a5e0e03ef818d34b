/**
 * BYOK applies only where the operator allows it (GATEHOUSE_CONFIG providers[].byok): on a keyless
 * OpenAI-compatible server (a local vLLM) a made-up BYOK key must buy nothing — refused when added,
 * ignored at call time if the operator turns BYOK off later, and the call billed as the operator's.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, makeOrganization } from './support/http.js';
import { type MockUpstream, startMockUpstream, wireView } from './support/mock-upstream.js';

const FAKE = 'not-a-real-key-at-all';
const price = { prompt: 1, completion: 2 };

describe('BYOK on operator providers', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let configFile: string;
  /** The catalog: `ollama` is a keyless OpenAI-compatible server; `together` too, with `byok` as given. */
  const writeConfig = (togetherByok: boolean) =>
    writeFileSync(
      configFile,
      JSON.stringify({
        providers: [
          { slug: 'ollama', kind: 'openai-compatible', base_url: `${mock.url}/ollama/v1`, model_data: false },
          {
            slug: 'together',
            kind: 'openai-compatible',
            base_url: `${mock.url}/together/v1`,
            model_data: false,
            byok: togetherByok,
          },
        ],
        models: [
          { id: 'local/llama', endpoints: [{ provider: 'ollama', upstream_model: 'llama', pricing: price }] },
          { id: 'local/mix', endpoints: [{ provider: 'together', upstream_model: 'mix', pricing: price }] },
        ],
      }),
    );

  beforeAll(async () => {
    mock = await startMockUpstream();
    configFile = join(mkdtempSync(join(tmpdir(), 'gatehouse-byok-')), 'gatehouse.json');
    writeConfig(true);
    gw = await startTestGateway('sqlite', {
      env: { GATEHOUSE_CONFIG: configFile, GATEHOUSE_CREDITS: 'enforce' },
    });
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());
  /** Completions that reached the upstream (model discovery's GET /models aside). */
  const calls = () => mock.requests.filter((r) => r.method === 'POST');

  const chat = (key: string, model: string) =>
    client(gw.url, key)('POST', '/chat/completions', { model, messages: [{ role: 'user', content: 'hi' }] });

  it('refuses a BYOK credential for a keyless OpenAI-compatible provider (400), and serves no free call', async () => {
    const org = await makeOrganization(gw.url, 'Zero dollars');
    const mgmt = client(gw.url, org.managementKey);
    const res = await mgmt('POST', '/byok', { provider: 'ollama', key: FAKE });
    expect(res.status).toBe(400);
    expect(res.body.error).toEqual({
      code: 400,
      message: 'This gateway does not accept BYOK credentials for that provider',
    });
    expect(res.text).not.toContain(FAKE);
    expect((await mgmt('GET', '/byok')).body.total_count).toBe(0);

    // A $0 organization gets no completion out of the operator's endpoint.
    const call = await chat(org.apiKey, 'local/llama');
    expect(call.status, call.text).toBe(402);
    expect(calls()).toHaveLength(0);
  });

  it('ignores a stored credential once the operator turns BYOK off, billing the call as the operator’s', async () => {
    const org = await makeOrganization(gw.url, 'Stored credential');
    const mgmt = client(gw.url, org.managementKey);
    // Allowed while `together` has byok: true — and used then.
    const cred = await mgmt('POST', '/byok', { provider: 'together', key: FAKE });
    expect(cred.status, cred.text).toBe(201);
    const free = await chat(org.apiKey, 'local/mix');
    expect(free.status, free.text).toBe(200);
    expect(free.body.usage).toMatchObject({ is_byok: true, cost: 0 });
    expect(wireView(calls()[0]!).auth?.key).toBe(FAKE);
    // The BYOK call used no credits: GET /credits agrees with its `cost: 0`; the key reports it apart.
    expect((await mgmt('GET', '/credits')).body.data).toEqual({ total_credits: 0, total_usage: 0 });
    expect((await client(gw.url, org.apiKey)('GET', '/key')).body.data).toMatchObject({ usage: 0 });
    expect((await client(gw.url, org.apiKey)('GET', '/key')).body.data.byok_usage).toBeGreaterThan(0);

    // The operator turns it off: the credential no longer applies, a $0 organization is refused.
    writeConfig(false);
    expect((await adminClient(gw.url)('POST', '/admin/catalog/reload')).status).toBe(200);
    mock.reset();
    expect((await chat(org.apiKey, 'local/mix')).status).toBe(402);
    expect(calls()).toHaveLength(0);
    expect((await mgmt('POST', '/byok', { provider: 'together', key: FAKE })).status).toBe(400);

    // With credits, the call goes out without the BYOK key and is billed.
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: org.organizationId,
      amount_usd: 1,
    });
    const paid = await chat(org.apiKey, 'local/mix');
    expect(paid.status, paid.text).toBe(200);
    expect(paid.body.usage.is_byok).toBe(false);
    expect(paid.body.usage.cost).toBeGreaterThan(0);
    expect(wireView(calls()[0]!).auth?.key ?? null).not.toBe(FAKE);
  });
});
