/**
 * The console's main flow in Chromium against a real gateway on SQLite with a mock upstream: sign in,
 * make calls in the Playground, then find them in Activity — listed with the key that made them, the
 * provider and the cost the catalog's price gives for the usage the provider reported — and open one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { client } from '../support/http.js';
import type { MockUpstream } from '../support/mock-upstream.js';
import { startUpstreams } from '../support/upstreams.js';
import { type ConsoleUi, ensureConsoleBuilt, hasChromium, openConsole, warnIfNoChromium } from './browser.js';

warnIfNoChromium('test/console/playground-to-activity.test.ts');

/** The Activity page's dollar format (console/src/pages/activity/detail.tsx). */
const usd = (n: number) => `$${n.toFixed(n !== 0 && Math.abs(n) < 0.01 ? 6 : 4)}`;

describe.skipIf(!hasChromium)('console: Playground calls found in Activity', { timeout: 90_000 }, () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let ui: ConsoleUi;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway('sqlite', { env: up.env });
    ui = await openConsole(gw);
  }, 300_000);

  afterAll(async () => {
    await ui?.close();
    await gw?.stop();
    await mock?.close();
  });

  it('makes two calls in the Playground; Activity lists them with their provider and priced cost', async () => {
    const { page } = ui;
    await ui.signIn(gw.managementKey);
    await ui.goto('/playground');
    await page.getByRole('button', { name: /Create a temporary key/ }).click();
    await page.getByRole('heading', { name: 'Conversation' }).waitFor();
    await page.getByLabel('Model', { exact: true }).selectOption('test/gpt');

    // What the provider reports for each answer: the gateway prices it with the catalog.
    const usages = [
      { prompt_tokens: 1234, completion_tokens: 567 },
      { prompt_tokens: 4321, completion_tokens: 89 },
    ];
    const ids: string[] = [];
    for (const [i, usage] of usages.entries()) {
      mock.enqueue({ reply: { text: `Answer ${i + 1}.`, usage } });
      await page.getByLabel('Message', { exact: true }).fill(`Question ${i + 1}?`);
      await page.getByRole('button', { name: 'Send' }).click();
      const answer = page.locator('li.turn-assistant').nth(i);
      await expect.poll(() => answer.locator('.turn-text').textContent()).toBe(`Answer ${i + 1}.`);
      await expect.poll(() => answer.locator('[data-meta="generation"]').textContent()).not.toBe('—');
      ids.push((await answer.locator('[data-meta="generation"]').textContent()) ?? '');
    }

    // The catalog's price of test/gpt on openai (USD per token, as GET /models publishes it).
    const models = (await client(gw.url, gw.apiKey)('GET', '/models')).body.data as any[];
    const price = models
      .find((m) => m.id === 'test/gpt')
      .providers.find((p: any) => p.slug === 'openai').pricing;
    const costOf = (u: (typeof usages)[number]) =>
      u.prompt_tokens * Number(price.prompt) +
      u.completion_tokens * Number(price.completion) +
      Number(price.request);
    const expected = usages.map(costOf);
    expect(expected[0]).toBeGreaterThan(0);

    // The calls are recorded a moment after they end.
    const mgmt = client(gw.url, gw.managementKey);
    await expect
      .poll(async () => (await mgmt('GET', '/generations?limit=10')).body.data.length, { timeout: 10_000 })
      .toBe(2);
    const keyName = (await mgmt('GET', '/keys')).body.data.find((k: any) =>
      k.name.startsWith('console session'),
    ).name as string;

    await ui.goto('/activity');
    const rows = page.locator('table').first().locator('tbody tr');
    await expect.poll(() => rows.count()).toBe(2);
    // Newest first: the second call heads the list. Columns: time, model, provider, status, tokens, cost…
    for (const [row, i] of [
      [0, 1],
      [1, 0],
    ] as const) {
      const cells = rows.nth(row).locator('td');
      expect(await cells.nth(1).textContent()).toBe('test/gpt');
      expect(await cells.nth(2).textContent()).toBe('openai');
      expect(await cells.nth(4).textContent()).toBe(
        `${usages[i]?.prompt_tokens} / ${usages[i]?.completion_tokens}`,
      );
      expect(await cells.nth(5).textContent()).toBe(usd(expected[i] ?? Number.NaN));
      expect(await rows.nth(row).textContent()).toContain(keyName);
    }

    // The first call's detail: the generation the Playground showed, its provider and its cost.
    await rows
      .nth(1)
      .getByRole('button', { name: /^Details of/ })
      .click();
    const detail = page.getByRole('region', { name: /Generation/ });
    await expect.poll(() => detail.getByRole('heading', { level: 2 }).textContent()).toContain(ids[0]);
    await expect
      .poll(() => detail.getByTestId('detail-cost').textContent())
      .toBe(usd(expected[0] ?? Number.NaN));
    const pair = (name: string) =>
      detail
        .locator('.pair')
        .filter({ has: page.locator('dt', { hasText: new RegExp(`^${name}$`) }) })
        .locator('dd');
    expect(await pair('Provider').textContent()).toBe('openai');
    expect(await pair('Prompt').first().textContent()).toBe(String(usages[0]?.prompt_tokens));
    expect(await pair('API key').textContent()).toBe(keyName);
    // And the API agrees with the page.
    const gen = (await mgmt('GET', `/generation?id=${ids[0]}`)).body.data;
    expect(gen.total_cost).toBeCloseTo(expected[0] ?? Number.NaN, 12);
    expect(gen.provider_name).toBe('openai');
    expect(await ui.axe()).toEqual([]);
  });

  it('raised no console error, CSP violation or request to another host', () => {
    ui.expectClean();
  });
});
