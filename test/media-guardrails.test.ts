/**
 * The media service enforces an API key's guardrail and limits as inference does: model lists
 * (a route is model `media/<kind>/<route>`), provider lists, content filters on the prompt (block,
 * redact, flag) and the per-key rate limit — on free routes too. The built-in local generator is
 * the provider `gatehouse` there.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadMediaConfig } from '../src/media/config.js';
import { type MediaHandle, startMedia } from '../src/media/server.js';
import type { GeneratedOutput, GenerateRequest, MediaGenerator } from '../src/media/types.js';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { client } from './support/http.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const RATE_LIMIT = 4;

describe('media routes under the caller’s guardrail', () => {
  let dir: string;
  let gw: TestGateway;
  let media: MediaHandle;
  let mgmt: ReturnType<typeof client>;
  /** The prompts the generator was asked for. */
  const prompts: string[] = [];
  const recording: MediaGenerator = {
    async generate(req: GenerateRequest): Promise<GeneratedOutput[]> {
      prompts.push(req.prompt);
      return [{ data: PNG, contentType: 'image/png', extension: 'png' }];
    },
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'media-guardrails-'));
    gw = await startTestGateway('sqlite', {
      env: {
        DATABASE_URL: `sqlite:${join(dir, 'gateway', 'gatehouse.db')}`,
        GATEHOUSE_RATE_LIMIT_REQUESTS: String(RATE_LIMIT),
        GATEHOUSE_RATE_LIMIT_WINDOW: '60',
      },
    });
    mgmt = client(gw.url, gw.managementKey);
    const config = loadMediaConfig({
      MEDIA_PORT: '0',
      MEDIA_HOST: '127.0.0.1',
      GATEHOUSE_MEDIA_STORE_DIR: join(dir, 'objects'),
    });
    media = await startMedia(config, {
      log: false,
      generator: recording,
      keys: gw.services.keys,
      billing: gw.services.mediaBilling,
    });
  });
  afterAll(async () => {
    await media?.close();
    await gw?.stop();
    await rm(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    prompts.length = 0;
  });

  /** A fresh API key, with a guardrail assigned when one is given. */
  async function key(guardrail?: object): Promise<string> {
    const created = await mgmt('POST', '/keys', { name: `media-${Math.random()}` });
    expect(created.status).toBe(201);
    if (guardrail) {
      const g = await mgmt('POST', '/guardrails', { name: 'media policy', ...guardrail });
      expect(g.status, g.text).toBe(201);
      const assigned = await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
        key_hashes: [created.body.data.hash],
      });
      expect(assigned.status, assigned.text).toBeLessThan(300);
    }
    return created.body.key as string;
  }

  async function generate(apiKey: string, prompt: string, route = 't2i/model-a') {
    const res = await fetch(`${media.url}/api/${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ prompt }),
    });
    return { status: res.status, body: (await res.json()) as any };
  }

  it('allowed_models: a route outside the list is refused naming the guardrail, one inside is served', async () => {
    const outside = await key({ allowed_models: ['gatehouse/echo'] });
    const refused = await generate(outside, 'a lighthouse');
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ success: false, error: { code: 'forbidden', field: 'model' } });
    expect(refused.body.message).toMatch(/media\/t2i\/model-a.*media policy/);
    expect(prompts).toEqual([]);

    const inside = await key({ allowed_models: ['media/t2i/model-a'] });
    expect((await generate(inside, 'a lighthouse')).status).toBe(200);
    expect(prompts).toEqual(['a lighthouse']);
  });

  it('ignored_models and ignored_providers refuse the route; nothing is generated', async () => {
    const ignoredModel = await key({ ignored_models: ['media/t2i/model-a'] });
    expect((await generate(ignoredModel, 'x')).status).toBe(403);
    const ignoredProvider = await key({ ignored_providers: ['gatehouse'] });
    const refused = await generate(ignoredProvider, 'x');
    expect(refused.status).toBe(403);
    expect(refused.body.message).toMatch(/Provider gatehouse .*ignored providers/);
    expect(prompts).toEqual([]);
  });

  it('content filters: block refuses without echoing the match, redact rewrites what the generator gets, flag passes', async () => {
    const blocking = await key({ content_filter_builtins: [{ slug: 'email', action: 'block' }] });
    const blocked = await generate(blocking, 'a portrait of ada@example.com');
    expect(blocked.status).toBe(403);
    expect(blocked.body).toMatchObject({
      success: false,
      error: { code: 'content_blocked', field: 'prompt' },
    });
    expect(JSON.stringify(blocked.body)).not.toContain('ada@example.com');
    expect(prompts).toEqual([]);

    const redacting = await key({ content_filter_builtins: [{ slug: 'email', action: 'redact' }] });
    expect((await generate(redacting, 'a portrait of ada@example.com')).status).toBe(200);
    expect(prompts).toHaveLength(1);
    expect(prompts[0]).not.toContain('ada@example.com');
    expect(prompts[0]).toMatch(/^a portrait of /);

    const flagging = await key({
      content_filters: [{ pattern: 'project\\s+falcon', action: 'flag', label: 'codename' }],
    });
    expect((await generate(flagging, 'project falcon at dawn')).status).toBe(200);
    expect(prompts[1]).toBe('project falcon at dawn');
  });

  it('does not count media generations against the key’s inference usage limits', async () => {
    const created = await mgmt('POST', '/keys', { name: 'media-usage', rpm_limit: 1, concurrency_limit: 1 });
    for (let i = 0; i < 2; i++) expect((await generate(created.body.key, `still ${i}`)).status).toBe(200);
  });

  it('a free route counts against the key’s request rate limit (429 in the media envelope)', async () => {
    const limited = await key();
    for (let i = 0; i < RATE_LIMIT; i++) expect((await generate(limited, `frame ${i}`)).status).toBe(200);
    const over = await generate(limited, 'one too many');
    expect(over.status).toBe(429);
    expect(over.body).toMatchObject({ success: false, error: { code: 'rate_limited' } });
    expect(prompts).toHaveLength(RATE_LIMIT);
    // Another key has its own budget of requests.
    expect((await generate(await key(), 'another key')).status).toBe(200);
  });
});
