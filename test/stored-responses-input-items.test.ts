/**
 * `GET /responses/{id}/input_items` through a real gateway and mock upstreams: a response stored
 * by Gatehouse (a translated call) lists its conversation's items from Gatehouse's store, paged
 * as OpenAI pages them; a response OpenAI stored too (a pass-through lane) is listed by OpenAI,
 * asked with the operator's key; other workspaces' keys get 404 and nothing goes upstream.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, makeOrganization } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

/** What a listed item says, one line each: role (or type) and text. */
const lines = (items: { type?: string; role?: string; content?: unknown }[]) =>
  items.map((i) => {
    const parts = Array.isArray(i.content) ? (i.content as { type: string; text?: string }[]) : [];
    return `${i.role ?? i.type}: ${parts.map((p) => `${p.type}=${p.text}`).join(' ')}`;
  });

describe.each(databases)('stored responses: input items (%s)', (db) => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let openai: OpenAI;
  let call: ReturnType<typeof client>;
  let otherKey: string;
  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway(db, { env: up.env });
    const admin = adminClient(gw.url);
    await admin('POST', '/admin/credits', { organization_id: gw.organizationId, amount_usd: 100 });
    openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    call = client(gw.url, gw.apiKey);
    const org = await makeOrganization(gw.url, `Other items ${db}`);
    otherKey = org.apiKey;
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  it("lists a translated conversation's items from Gatehouse's store: earlier turns, then its own input", async () => {
    mock.enqueue({ reply: { text: 'Hi, I am Claude.' } }, { reply: { text: 'You said hi.' } });
    const first = await openai.responses.create({
      model: 'test/claude',
      instructions: 'be brief',
      input: 'hi',
    });
    const second = await openai.responses.create({
      model: 'test/claude',
      previous_response_id: first.id,
      input: [
        { role: 'user', content: 'what did I say?' },
        { role: 'user', content: [{ type: 'input_text', text: 'and why?' }] },
      ],
    });
    expect(mock.requests.map((r) => r.format)).toEqual(['anthropic-messages', 'anthropic-messages']);

    // The official client, oldest first, every page.
    const all: OpenAI.Responses.ResponseItem[] = [];
    for await (const item of openai.responses.inputItems.list(second.id, { order: 'asc', limit: 2 }))
      all.push(item);
    expect(lines(all as never)).toEqual([
      'user: input_text=hi',
      'assistant: output_text=Hi, I am Claude.',
      'user: input_text=what did I say?',
      'user: input_text=and why?',
    ]);
    for (const item of all) expect(item.id).toMatch(/^msg_/);
    expect(new Set(all.map((i) => i.id)).size).toBe(4);
    // The earlier turn's output item is listed under the id its response gave it.
    expect(all[1]?.id).toBe(first.output[0]?.id);
    // The first response: only its own input (instructions are not an input item, as on OpenAI).
    expect(lines((await openai.responses.inputItems.list(first.id)).data as never)).toEqual([
      'user: input_text=hi',
    ]);

    // Raw HTTP: newest first by default, a cursor page over the same ids on every listing.
    const page1 = await call('GET', `/responses/${second.id}/input_items?limit=3`);
    expect(page1.status).toBe(200);
    expect(page1.body).toMatchObject({ object: 'list', has_more: true });
    expect(page1.body.data.map((i: { id: string }) => i.id)).toEqual(
      all
        .map((i) => i.id)
        .reverse()
        .slice(0, 3),
    );
    expect(page1.body.first_id).toBe(all[3]?.id);
    expect(page1.body.last_id).toBe(all[1]?.id);
    const page2 = await call(
      'GET',
      `/responses/${second.id}/input_items?limit=3&after=${page1.body.last_id}`,
    );
    expect(page2.body).toEqual({
      object: 'list',
      data: [expect.objectContaining({ id: all[0]?.id, role: 'user' })],
      first_id: all[0]?.id,
      last_id: all[0]?.id,
      has_more: false,
    });
    // include[] is taken (Gatehouse keeps items whole: nothing to add).
    const included = await call(
      'GET',
      `/responses/${second.id}/input_items?include[]=message.input_image.image_url&include[]=reasoning.encrypted_content`,
    );
    expect(included.status).toBe(200);
    expect(included.body.data).toHaveLength(4);
    expect(mock.requests).toHaveLength(2); // nothing asked upstream for a translated response
  });

  it('refuses bad paging with a 400 naming the field, in the OpenAI error shape', async () => {
    mock.enqueue({ reply: { text: 'ok' } });
    const r = await openai.responses.create({ model: 'test/claude', input: 'x' });
    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=abc', 'limit'],
      ['order=up', 'order'],
      ['after=msg_nope', 'after'],
    ] as const) {
      const res = await call('GET', `/responses/${r.id}/input_items?${query}`);
      expect([query, res.status]).toEqual([query, 400]);
      expect(res.body.error.message).toMatch(new RegExp(`^${field}`));
    }
    const missing = await call('GET', '/responses/resp_unknown/input_items');
    expect(missing.status).toBe(404);
    expect(missing.body.error.message).toContain('resp_unknown');
  });

  it('asks OpenAI for a response it stored too (a lane), with the operator key, and relays its page', async () => {
    mock.enqueue({ reply: { text: 'Stored at OpenAI too.' } });
    const created = await openai.responses.create({ model: 'test/gpt', input: 'remember me' });
    expect(mock.requests[0]?.format).toBe('openai-responses');
    const upstreamPage = {
      object: 'list',
      data: [
        {
          id: 'msg_upstream_1',
          type: 'message',
          role: 'user',
          status: 'completed',
          content: [{ type: 'input_text', text: 'remember me' }],
        },
      ],
      first_id: 'msg_upstream_1',
      last_id: 'msg_upstream_1',
      has_more: false,
    };
    mock.enqueue({ match: { path: /\/input_items$/ }, status: 200, body: upstreamPage });
    const page = await openai.responses.inputItems.list(created.id, {
      limit: 5,
      order: 'asc',
      include: ['message.input_image.image_url'],
    });
    expect(page.data).toEqual(upstreamPage.data);
    const asked = mock.requests[1];
    expect(asked).toMatchObject({
      method: 'GET',
      path: `/openai/v1/responses/${created.id}/input_items`,
      query: { limit: '5', order: 'asc', 'include[]': 'message.input_image.image_url' },
    });
    expect(asked?.headers.authorization).toBe('Bearer sk-operator-openai-0000');
    expect(JSON.stringify(asked?.headers)).not.toContain(gw.apiKey);

    // A page leaving out what OpenAI may leave out (no ids of an empty page) is relayed as it came.
    mock.enqueue({
      match: { path: /\/input_items$/ },
      status: 200,
      body: { object: 'list', data: [], has_more: false },
    });
    const empty = await call('GET', `/responses/${created.id}/input_items?after=msg_upstream_1`);
    expect(empty).toMatchObject({ status: 200, body: { object: 'list', data: [], has_more: false } });
    expect(mock.requests.at(-1)?.query).toMatchObject({ after: 'msg_upstream_1' });

    // OpenAI no longer holds it (404): Gatehouse's own copy is listed.
    mock.enqueue({ match: { path: /\/input_items$/ }, status: 404, error: { message: 'not found' } });
    const local = await call('GET', `/responses/${created.id}/input_items`);
    expect(local.status).toBe(200);
    expect(lines(local.body.data)).toEqual(['user: input_text=remember me']);

    // Another failure is the caller's error (OpenAI's shape), never a 500.
    mock.enqueue({ match: { path: /\/input_items$/ }, status: 500, error: { message: 'upstream broke' } });
    const failed = await call('GET', `/responses/${created.id}/input_items`);
    expect(failed.status).toBe(502);
    expect(failed.body.error.message).toContain('upstream broke');
    expect(failed.text).not.toContain('sk-operator-openai');
  });

  it("gives another organization's key a 404 and asks no upstream", async () => {
    mock.enqueue({ reply: { text: 'Private.' } }, { reply: { text: 'Private too.' } });
    const lane = await openai.responses.create({ model: 'test/gpt', input: 'mine' });
    const translated = await openai.responses.create({ model: 'test/claude', input: 'mine too' });
    const as = client(gw.url, otherKey);
    for (const id of [lane.id, translated.id]) {
      const res = await as('GET', `/responses/${id}/input_items`);
      expect(res.status).toBe(404);
      expect(res.text).not.toContain('mine');
    }
    const mgmt = await client(gw.url, gw.managementKey)('GET', `/responses/${lane.id}/input_items`);
    expect(mgmt.status).toBe(403);
    expect(mock.requests).toHaveLength(2);
  });
});
