import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GenerationsTable } from '../src/db/schema.js';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { client, makeOrganization } from './support/http.js';

/**
 * GET /generations (the list), GET /analytics/series and GET /activity over a real gateway: each
 * filter returns exactly the rows it names, pages walk every row once while new rows arrive, a key
 * never reads outside its scope, bad filters are 400s that name the filter.
 */

const hashOf = (key: string) => createHash('sha256').update(key).digest('hex');
const MODELS = ['openai/gpt-4o', 'anthropic/claude-sonnet-4', 'google/gemini-2.5-pro'];
const PROVIDERS = ['openai', 'anthropic', 'vertex'];

/** A generation row as the accountant writes one; `i` varies every filtered column. */
function row(org: string, workspace: string, key: string, user: string | null, i: number, at: number) {
  const status = i % 7 === 0 ? 'error' : i % 11 === 0 ? 'cancelled' : 'success';
  return {
    id: `gen-${randomUUID()}`,
    organization_id: org,
    workspace_id: workspace,
    key_hash: key,
    user_id: user,
    endpoint: 'chat',
    requested_model: MODELS[i % 3] as string,
    // Calls that failed before routing have no served model: the list shows the requested one.
    model: status === 'error' && i % 2 === 0 ? null : (MODELS[i % 3] as string),
    provider: status === 'error' && i % 2 === 0 ? null : (PROVIDERS[i % 3] as string),
    upstream_model: null,
    status,
    http_status: status === 'success' ? 200 : 502,
    streamed: i % 2,
    finish_reason: 'stop',
    prompt_tokens: 10 + i,
    completion_tokens: 5 + (i % 4),
    reasoning_tokens: i % 3,
    cached_tokens: 0,
    cache_write_tokens: 0,
    usage_estimated: 0,
    pricing_unknown: 0,
    cost_usd: (i % 10) / 1000,
    prompt_cost_usd: 0,
    completion_cost_usd: 0,
    is_byok: i % 5 === 0 ? 1 : 0,
    attempts: 1,
    latency_ms: 100 + i,
    generation_time_ms: 50,
    error_message: status === 'success' ? null : 'upstream failed',
    // Several rows share a millisecond: the cursor's id tie-break must hold.
    created_at: new Date(at).toISOString(),
    passthrough: i % 3 === 0 ? 1 : 0,
    upstream_id: null,
    web_search_requests: 0,
    provider_responses: null,
  } satisfies GenerationsTable;
}

describe.each(databases)('generations list and activity (%s)', (db) => {
  let gw: TestGateway;
  let mgmt: ReturnType<typeof client>;
  let other: Awaited<ReturnType<typeof makeOrganization>>;
  let ws2: string;
  let ws2Key: string;
  let mine: GenerationsTable[];
  const base = Date.parse('2026-11-20T10:00:00.000Z');

  const insert = (rows: GenerationsTable[]) =>
    gw.services.db.insertInto('generations').values(rows).execute();
  const idsOf = (rows: { id: string }[]) => rows.map((r) => r.id);
  /** Every page of a list, following next_cursor. */
  async function walk(call: ReturnType<typeof client>, query: string, limit = 13) {
    const seen: { id: string; created_at: string }[] = [];
    let cursor: string | null = null;
    for (let n = 0; n < 1000; n++) {
      const sep = query ? '&' : '';
      const res: { status: number; text: string; body: any } = await call(
        'GET',
        `/generations?${query}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(res.status, res.text).toBe(200);
      seen.push(...res.body.data);
      cursor = res.body.next_cursor;
      if (!cursor) return seen;
    }
    throw new Error('the list never ended');
  }
  /** Organization A's rows, newest first, as the list must give them. */
  const newestFirst = (rows: GenerationsTable[]) =>
    [...rows].sort((a, b) => b.created_at.localeCompare(a.created_at) || (b.id < a.id ? -1 : 1));

  beforeAll(async () => {
    gw = await startTestGateway(db);
    mgmt = client(gw.url, gw.managementKey);
    other = await makeOrganization(gw.url, 'Other Org');
    const ws = await mgmt('POST', '/workspaces', { name: 'Second', slug: 'second' });
    ws2 = ws.body.data.id;
    const k = await mgmt('POST', '/keys', { name: 'ws2', workspace_id: ws2 });
    ws2Key = k.body.key;

    // Real calls first: the list shows what the gateway recorded.
    for (const key of [gw.apiKey, gw.apiKey, ws2Key, other.apiKey]) {
      const res = await client(gw.url, key)('POST', '/chat/completions', {
        model: 'gatehouse/echo',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(res.status, res.text).toBe(200);
    }
    await gw.services.accountant.flush();

    const a1 = (
      await gw.services.db
        .selectFrom('workspaces')
        .select('id')
        .where('organization_id', '=', gw.organizationId)
        .where('is_default', '=', 1)
        .executeTakeFirstOrThrow()
    ).id;
    const rows: GenerationsTable[] = [];
    for (let i = 0; i < 120; i++) {
      const inWs2 = i % 4 === 0;
      rows.push(
        row(
          gw.organizationId,
          inWs2 ? ws2 : a1,
          hashOf(inWs2 ? ws2Key : gw.apiKey),
          i % 6 === 0 ? null : gw.ownerUserId,
          i,
          base + Math.floor(i / 3) * 60_000,
        ),
      );
    }
    // The other organization: the same models and times, never in A's answers.
    for (let i = 0; i < 40; i++)
      rows.push(
        row(
          other.organizationId,
          other.workspaceId,
          hashOf(other.apiKey),
          other.userId,
          i,
          base + i * 60_000,
        ),
      );
    await insert(rows);
    mine = (await gw.services.db
      .selectFrom('generations')
      .selectAll()
      .where('organization_id', '=', gw.organizationId)
      .execute()) as GenerationsTable[];
    expect(mine.length).toBe(123);
  });
  afterAll(() => gw?.stop());

  it('lists the organization newest first, every row once, in the generation view', async () => {
    const seen = await walk(mgmt, '');
    expect(idsOf(seen)).toEqual(idsOf(newestFirst(mine)));
    const echo = seen.find((g: any) => g.model === 'gatehouse/echo') as any;
    expect(echo).toMatchObject({ status: 'success', streamed: false, api_key_hash: expect.any(String) });
    // The same view as GET /generation, which adds where the call's kept content is, its safeguards,
    // how it was routed and its feedback (left out of the list: they are the bulk of a row).
    const one = await mgmt('GET', `/generation?id=${echo.id}`);
    const { content_url, safeguards, gateway_metadata, feedback, ...listed } = one.body.data;
    expect(content_url).toBeNull();
    expect(safeguards).toEqual([]);
    expect(feedback).toEqual([]);
    expect(gateway_metadata).toMatchObject({ requested: 'gatehouse/echo', models_tried: ['gatehouse/echo'] });
    expect(listed).toEqual(echo);
  });

  const t = (ms: number) => new Date(ms).toISOString();
  const filters: [string, (g: GenerationsTable) => boolean][] = [
    [
      `model=${encodeURIComponent('anthropic/claude-sonnet-4')}`,
      (g) => (g.model ?? g.requested_model) === 'anthropic/claude-sonnet-4',
    ],
    ['provider=vertex', (g) => g.provider === 'vertex'],
    ['status=error', (g) => g.status === 'error'],
    ['status=cancelled', (g) => g.status === 'cancelled'],
    ['status=success', (g) => g.status === 'success'],
    ['streamed=true', (g) => g.streamed === 1],
    ['streamed=false', (g) => g.streamed === 0],
    ['lane=passthrough', (g) => g.passthrough === 1],
    ['lane=translated', (g) => g.passthrough === 0],
    ['min_cost=0.005', (g) => g.cost_usd >= 0.005],
    ['max_cost=0.002', (g) => g.cost_usd <= 0.002],
    ['min_cost=0.002&max_cost=0.004', (g) => g.cost_usd >= 0.002 && g.cost_usd <= 0.004],
    [
      `from=${t(base + 10 * 60_000)}&to=${t(base + 20 * 60_000)}`,
      (g) => g.created_at >= t(base + 10 * 60_000) && g.created_at < t(base + 20 * 60_000),
    ],
    [`from=${(base + 30 * 60_000) / 1000}`, (g) => g.created_at >= t(base + 30 * 60_000)],
    [
      'status=error&provider=openai&streamed=true',
      (g) => g.status === 'error' && g.provider === 'openai' && g.streamed === 1,
    ],
  ];
  it.each(filters)('filter %s narrows to exactly its rows', async (query, keep) => {
    const expected = newestFirst(mine.filter(keep));
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(mine.length);
    expect(idsOf(await walk(mgmt, query))).toEqual(idsOf(expected));
  });

  it('filters by key, user and workspace', async () => {
    const k2 = hashOf(ws2Key);
    expect(idsOf(await walk(mgmt, `key=${k2}`))).toEqual(
      idsOf(newestFirst(mine.filter((g) => g.key_hash === k2))),
    );
    expect(idsOf(await walk(mgmt, `user=${gw.ownerUserId}`))).toEqual(
      idsOf(newestFirst(mine.filter((g) => g.user_id === gw.ownerUserId))),
    );
    const inWs2 = newestFirst(mine.filter((g) => g.workspace_id === ws2));
    expect(inWs2.length).toBeGreaterThan(1);
    expect(idsOf(await walk(mgmt, `workspace=${ws2}`))).toEqual(idsOf(inWs2));
  });

  it('shows an API key only its own generations, whatever it asks', async () => {
    const api = client(gw.url, gw.apiKey);
    const own = newestFirst(mine.filter((g) => g.key_hash === hashOf(gw.apiKey)));
    expect(idsOf(await walk(api, ''))).toEqual(idsOf(own));
    expect(await walk(api, `key=${hashOf(ws2Key)}`)).toEqual([]);
    expect(await walk(api, `workspace=${ws2}`)).toEqual([]);
    const ws2Own = await walk(client(gw.url, ws2Key), '');
    expect(idsOf(ws2Own)).toEqual(idsOf(newestFirst(mine.filter((g) => g.key_hash === hashOf(ws2Key)))));
  });

  it('never shows another organization’s generations', async () => {
    const theirs = await walk(client(gw.url, other.managementKey), '');
    expect(theirs.length).toBe(41);
    const mineIds = new Set(idsOf(mine));
    expect(theirs.some((g) => mineIds.has(g.id))).toBe(false);
    // Naming organization A's workspace or key from B finds nothing.
    expect(await walk(client(gw.url, other.managementKey), `workspace=${ws2}`)).toEqual([]);
    expect(await walk(client(gw.url, other.managementKey), `key=${hashOf(gw.apiKey)}`)).toEqual([]);
    const ours = await walk(mgmt, '');
    expect(ours.some((g: any) => g.workspace_id === other.workspaceId)).toBe(false);
  });

  it('walks every row exactly once while new generations are written between pages', async () => {
    const before = newestFirst(mine);
    const seen: string[] = [];
    let cursor: string | null = null;
    let added = 0;
    do {
      const res: any = await mgmt('GET', `/generations?limit=10${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...idsOf(res.body.data));
      cursor = res.body.next_cursor;
      // Newer rows, some in the same millisecond as the page's first row.
      await insert(
        [0, 1, 2].map((j) => row(gw.organizationId, ws2, hashOf(ws2Key), null, 200 + added + j, Date.now())),
      );
      added += 3;
    } while (cursor);
    expect(seen).toEqual(idsOf(before));
    expect(new Set(seen).size).toBe(seen.length);
  });

  it.each([
    ['status=bogus', 'status'],
    ['limit=0', 'limit'],
    ['limit=201', 'limit'],
    ['min_cost=-1', 'min_cost'],
    ['max_cost=abc', 'max_cost'],
    ['streamed=yes', 'streamed'],
    ['lane=direct', 'lane'],
    ['from=yesterday', 'from'],
    ['to=2026-13-45', 'to'],
    ['cursor=not-a-cursor', 'cursor'],
  ])('refuses %s with a 400 naming %s', async (query, name) => {
    const res = await mgmt('GET', `/generations?${query}`);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe(400);
    expect(res.body.error.message).toContain(name);
  });
});
