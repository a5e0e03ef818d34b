/**
 * The Overview and Activity pages in Chromium against a real gateway on SQLite, with calls made
 * through the gateway to a mock upstream: the calls are listed with their cost, filtered (by model,
 * lane, a bad filter refused in words), paged with "load more", opened in detail with their kept
 * content (or the note that content logging is off); the Overview's charts are drawn and its totals
 * are the API's. The detail shows how the call was routed and the safeguards that ran on it.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { adminClient, client } from '../support/http.js';
import type { MockUpstream } from '../support/mock-upstream.js';
import { startUpstreams } from '../support/upstreams.js';
import { type ConsoleUi, ensureConsoleBuilt, hasChromium, openConsole, warnIfNoChromium } from './browser.js';

warnIfNoChromium('test/console/activity.test.ts');

/** The pages' dollar format (console/src/pages/activity/detail.tsx). */
const usd = (n: number) => `$${n.toFixed(n !== 0 && Math.abs(n) < 0.01 ? 6 : 4)}`;

describe.skipIf(!hasChromium)('Overview and Activity pages in Chromium', { timeout: 90_000 }, () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let ui: ConsoleUi;
  let mgmt: ReturnType<typeof client>;
  let apiCall: ReturnType<typeof client>;
  const ids: Record<string, string> = {};

  const genId = (res: { headers: Headers }) => res.headers.get('x-gatehouse-generation-id') as string;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway('sqlite', { env: { ...up.env, GATEHOUSE_RATE_LIMIT_REQUESTS: '1000' } });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    mgmt = client(gw.url, gw.managementKey);
    apiCall = client(gw.url, gw.apiKey);
    const workspaceId = (await apiCall('GET', '/key')).body.data.workspace_id as string;

    // Content logging off: one priced call (1000 + 500 tokens at $1 / $2 per million = $0.002), then 50 more.
    mock.enqueue({
      reply: { text: 'Unlogged answer', usage: { prompt_tokens: 1000, completion_tokens: 500 } },
    });
    const a = await apiCall('POST', '/chat/completions', {
      model: 'test/gpt',
      messages: [{ role: 'user', content: 'Not kept' }],
    });
    expect(a.status, a.text).toBe(200);
    ids.unlogged = genId(a);
    for (let i = 0; i < 50; i++) {
      const r = await apiCall('POST', '/chat/completions', {
        model: 'test/gpt',
        messages: [{ role: 'user', content: `filler ${i}` }],
      });
      expect(r.status).toBe(200);
    }
    // Content logging on: a streamed translated call and a passed-through one to test/claude.
    const on = await mgmt('PATCH', `/workspaces/${workspaceId}`, { content_logging: true });
    expect(on.status, on.text).toBe(200);
    // A guardrail on the key from here on: emails redacted on the request, "Streamed" flagged in answers.
    const guardrail = await mgmt('POST', '/guardrails', {
      name: 'activity filters',
      content_filter_builtins: [{ slug: 'email', action: 'redact', apply_to: 'request' }],
      content_filters: [{ pattern: 'Streamed', action: 'flag', label: 'stream word', apply_to: 'response' }],
    });
    expect(guardrail.status, guardrail.text).toBe(201);
    ids.guardrail = guardrail.body.data.id;
    const keyHash = createHash('sha256').update(gw.apiKey).digest('hex');
    await mgmt('POST', `/guardrails/${ids.guardrail}/assignments/keys`, { key_hashes: [keyHash] });
    mock.enqueue({
      reply: { text: 'Streamed answer', usage: { prompt_tokens: 2000, completion_tokens: 1000 } },
    });
    const b = await apiCall('POST', '/chat/completions', {
      model: 'test/claude',
      stream: true,
      messages: [{ role: 'user', content: 'What is the capital of France? Answer to jo@example.com' }],
    });
    expect(b.status, b.text).toBe(200);
    ids.streamed = genId(b);
    const c = await apiCall('POST', '/messages', {
      model: 'test/claude',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'Bonjour from the messages API' }],
    });
    expect(c.status, c.text).toBe(200);
    ids.passthrough = genId(c);
    // Generations and content are written a moment after the calls: wait for all of them.
    await vi.waitFor(
      async () => {
        await gw.services.accountant.flush();
        await gw.services.contentLog.flush();
        const list = await mgmt('GET', '/generations?limit=200');
        expect(list.body.data).toHaveLength(53);
      },
      { timeout: 10_000, interval: 100 },
    );
    ui = await openConsole(gw);
    await ui.signIn(gw.managementKey);
  }, 300_000);

  afterAll(async () => {
    await ui?.close();
    await gw?.stop();
    await mock?.close();
  });

  const table = () => ui.page.locator('table').first();
  const bodyRows = () => table().locator('tbody tr');

  it('lists the calls newest first with their cost, and loads more', async () => {
    const { page } = ui;
    await ui.goto('/activity');
    const api = (await mgmt('GET', '/generations?limit=200')).body.data as any[];
    const unlogged = api.find((g) => g.id === ids.unlogged);
    expect(unlogged).toMatchObject({ model: 'test/gpt', tokens_prompt: 1000, tokens_completion: 500 });
    expect(unlogged.total_cost).toBeCloseTo(0.002, 12);

    await expect.poll(() => bodyRows().count()).toBe(50);
    expect(await page.getByRole('table').locator('caption').textContent()).toContain('more below');
    // Newest first: the passed-through /messages call heads the list.
    expect(await bodyRows().first().textContent()).toContain('passed through');
    expect(await ui.axe()).toEqual([]);
    await ui.screenshot('activity');

    await page.getByRole('button', { name: 'Load more' }).click();
    await expect.poll(() => bodyRows().count()).toBe(53);
    expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);
    // The oldest call is last, with its cost as the API has it.
    const last = bodyRows().last();
    expect(await last.textContent()).toContain(usd(unlogged.total_cost));
    expect(await last.textContent()).toContain('1000 / 500');
  });

  it('filters by model and by lane, as the API does', async () => {
    const { page } = ui;
    await page.getByLabel('Model').fill('test/claude');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const api = (await mgmt('GET', '/generations?model=test/claude')).body.data as any[];
    expect(api.map((g) => g.id)).toEqual([ids.passthrough, ids.streamed]);
    await expect.poll(() => bodyRows().count()).toBe(2);
    const texts = await bodyRows().allTextContents();
    expect(texts.every((t) => t.includes('test/claude'))).toBe(true);
    expect(texts[1]).toContain(usd(api[1].total_cost));

    await page.getByLabel('Lane').selectOption('passthrough');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => bodyRows().count()).toBe(1);
    expect(await bodyRows().first().textContent()).toContain('passed through');
  });

  it('says what is wrong with a bad filter, and the page stays usable', async () => {
    const { page } = ui;
    await page.getByLabel('Min cost (USD)').fill('5');
    await page.getByLabel('Max cost (USD)').fill('1');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect
      .poll(() => page.getByRole('alert').first().textContent())
      .toContain('The minimum cost is above the maximum cost.');
    // A value the gateway refuses (an over-long user id): its 400 message, in the banner.
    await page.getByLabel('Max cost (USD)').fill('');
    await page.getByLabel('User id').fill('u'.repeat(201));
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('user');
    // Clear: back to every call (the pages already loaded are kept).
    await page.getByRole('button', { name: 'Clear' }).click();
    await expect.poll(() => bodyRows().count()).toBe(53);
    expect(await page.getByRole('alert').count()).toBe(0);
  });

  it("opens a call's detail: tokens, cost, attempts, and its kept content", async () => {
    const { page } = ui;
    await page.getByLabel('Model').fill('test/claude');
    await page.getByLabel('Streamed').selectOption('true');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => bodyRows().count()).toBe(1);
    await bodyRows()
      .first()
      .getByRole('button', { name: /^Details of/ })
      .click();
    const detail = page.getByRole('region', { name: /Generation/ });
    await detail.waitFor();
    const g = (await mgmt('GET', `/generation?id=${ids.streamed}`)).body.data;
    expect(g).toMatchObject({ streamed: true, tokens_prompt: 2000, tokens_completion: 1000 });
    expect(g.content_url).toContain(ids.streamed);
    expect(g.total_cost).toBeCloseTo(0.004, 12);
    await expect.poll(() => detail.getByTestId('detail-cost').textContent()).toBe(usd(g.total_cost));
    const text = await detail.textContent();
    expect(text).toContain(ids.streamed);
    expect(text).toContain('anthropic');
    // The attempts table: one attempt, anthropic, answering 200.
    const attempts = detail.getByRole('table', { name: /Every provider tried/ });
    expect(await attempts.locator('tbody tr').count()).toBe(1);
    expect(await attempts.locator('tbody tr').textContent()).toContain('200');
    // The routing story: translated, the endpoint considered and selected.
    expect(g.gateway_metadata).toMatchObject({ route: 'translated', requested: 'test/claude' });
    const routing = detail.getByTestId('routing');
    expect(await routing.textContent()).toContain('translated');
    const endpoints = detail.getByRole('table', { name: /Endpoints considered/ });
    expect(await endpoints.locator('tbody tr').first().textContent()).toBe('test/claudeanthropicyes');
    // The safeguards: the request's email redacted, the answer's word flagged, both kept.
    expect(g.safeguards).toEqual([
      expect.objectContaining({ stage: 'request', label: 'Email addresses', action: 'redacted', matches: 1 }),
      expect.objectContaining({ stage: 'response', label: 'stream word', action: 'flagged', matches: 1 }),
    ]);
    const safeguards = detail.getByRole('table', { name: /Content filters that ran/ });
    const rows = await safeguards.locator('tbody tr').allTextContents();
    expect(rows).toEqual([
      'requestEmail addressesredactedactivity filters1 match · email',
      'answerstream wordflaggedactivity filters1 match',
    ]);
    // Content logging was on: the request and the streamed answer, assembled.
    await expect.poll(() => detail.getByTestId('content-input').textContent()).toContain('capital of France');
    expect(await detail.getByTestId('content-input').textContent()).not.toContain('jo@example.com');
    expect(await detail.getByTestId('content-output').textContent()).toBe('Streamed answer');
    expect(await ui.axe()).toEqual([]);
    await ui.screenshot('activity-detail');
    // The open call is in the address: a reload (or a shared link) opens it again.
    expect(new URL(page.url()).searchParams.get('id')).toBe(ids.streamed);
    await page.reload();
    await expect.poll(() => detail.getByTestId('content-output').textContent()).toBe('Streamed answer');
    // A guardrail deleted since is shown by its id.
    expect((await mgmt('DELETE', `/guardrails/${ids.guardrail}`)).status).toBe(200);
    await page.reload();
    await expect
      .poll(() => safeguards.locator('tbody tr').first().textContent())
      .toBe(`requestEmail addressesredacted${ids.guardrail} (deleted)1 match · email`);
    await page.getByRole('button', { name: 'Close details' }).click();
    expect(await detail.count()).toBe(0);
    expect(new URL(page.url()).searchParams.get('id')).toBeNull();
  });

  it('says content logging is off for a call made while it was off', async () => {
    const { page } = ui;
    await page.getByRole('button', { name: 'Clear' }).click();
    await page.getByLabel('Min cost (USD)').fill('0.002');
    await page.getByLabel('Max cost (USD)').fill('0.002');
    await page.getByLabel('Model').fill('test/gpt');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => bodyRows().count()).toBe(1);
    await bodyRows()
      .first()
      .getByRole('button', { name: /^Details of/ })
      .click();
    const detail = page.getByRole('region', { name: /Generation/ });
    expect(await detail.textContent()).toContain(ids.unlogged);
    // The workspace keeps content now; this call was made before, so none is kept.
    await expect.poll(() => detail.getByTestId('content-off').textContent()).toContain('No content is kept');
    // With logging turned off again the page says so plainly.
    const workspaceId = (await apiCall('GET', '/key')).body.data.workspace_id as string;
    await mgmt('PATCH', `/workspaces/${workspaceId}`, { content_logging: false });
    await page.getByRole('button', { name: 'Close details' }).click();
    await page.reload();
    await page.getByRole('heading', { name: 'Activity', level: 1 }).waitFor();
    await page.getByLabel('Model').fill('test/gpt');
    await page.getByLabel('Min cost (USD)').fill('0.002');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => bodyRows().count()).toBe(1);
    await bodyRows()
      .first()
      .getByRole('button', { name: /^Details of/ })
      .click();
    await expect
      .poll(() => page.getByTestId('content-off').textContent())
      .toContain('Content logging is off for this workspace');
  });

  it('draws the Overview charts, with totals that are the API’s', async () => {
    const { page } = ui;
    await ui.goto('/overview');
    await expect.poll(() => page.locator('.chart canvas').count()).toBe(5);
    const summary = page.getByTestId('summary');
    await summary.waitFor();
    const now = new Date();
    const total = (
      await mgmt('POST', '/analytics/query', {
        metrics: ['spend', 'requests', 'tokens', 'errors'],
        time_range: { start: new Date(now.getTime() - 86_400_000).toISOString(), end: now.toISOString() },
      })
    ).body.data.data[0];
    expect(total.requests).toBe(53);
    const stat = (label: string) => summary.locator('.stat', { hasText: label }).locator('dd').textContent();
    expect(await stat('Requests')).toBe('53');
    expect(await stat('Tokens')).toBe(total.tokens.toLocaleString('en-US'));
    expect(await stat('Errors')).toBe('0');
    expect(await stat('Spend')).toBe(`$${total.spend.toFixed(total.spend < 0.01 ? 6 : 2)}`);
    expect(await stat('Latency p95')).toMatch(/^\d+ ms$/);
    expect(await ui.axe()).toEqual([]);
    await ui.screenshot('overview');

    // Broken down by model: one line per model in the charts' legends.
    await page.getByLabel('Break down by').selectOption('model');
    await expect
      .poll(() => page.locator('.chart-card').first().locator('.u-legend').textContent())
      .toContain('test/claude');
    expect(await page.locator('.chart-card').first().locator('.u-legend').textContent()).toContain(
      'test/gpt',
    );
    expect(await page.locator('.chart canvas').count()).toBe(5);
    ui.expectClean();
  });
});
