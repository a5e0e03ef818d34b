/**
 * The workspace picker in Chromium against a real gateway on SQLite with a mock upstream: Keys and
 * Guardrails list and create in the chosen workspace, Activity and Overview show one workspace's calls
 * or all of them (with every key named), and the choice is in the address on every page that has it,
 * so a reload or a shared link shows the same view.
 * A workspace the API refuses is shown in words and the page stays usable.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { client } from '../support/http.js';
import type { MockUpstream } from '../support/mock-upstream.js';
import { startUpstreams } from '../support/upstreams.js';
import { type ConsoleUi, ensureConsoleBuilt, hasChromium, openConsole, warnIfNoChromium } from './browser.js';

warnIfNoChromium('test/console/workspace-picker.test.ts');

describe.skipIf(!hasChromium)('console: the workspace picker', { timeout: 90_000 }, () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let ui: ConsoleUi;
  let mgmt: ReturnType<typeof client>;
  let research: { id: string };
  let defaultKeyName: string;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway('sqlite', { env: up.env });
    mgmt = client(gw.url, gw.managementKey);
    const ws = await mgmt('POST', '/workspaces', { name: 'Research', slug: 'research' });
    expect(ws.status, ws.text).toBe(201);
    research = ws.body.data;
    const bot = await mgmt('POST', '/keys', { name: 'research-bot', workspace_id: research.id });
    expect(bot.status, bot.text).toBe(201);
    defaultKeyName = (await mgmt('GET', '/keys')).body.data[0].name;
    // One call from each workspace.
    for (const key of [gw.apiKey, bot.body.key as string]) {
      const r = await client(gw.url, key)('POST', '/chat/completions', {
        model: 'test/gpt',
        messages: [{ role: 'user', content: 'Hello' }],
      });
      expect(r.status, r.text).toBe(200);
    }
    // Generations are written a moment after the calls.
    await vi.waitFor(
      async () => {
        await gw.services.accountant.flush();
        expect((await mgmt('GET', '/generations')).body.data).toHaveLength(2);
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

  const rows = () => ui.page.locator('table').first().locator('tbody tr');
  const picked = () => new URL(ui.page.url()).searchParams.get('workspace');

  it('Keys: lists and creates the keys of the chosen workspace; a reload shows the same workspace', async () => {
    const { page } = ui;
    await ui.goto('/keys');
    await expect.poll(() => rows().count()).toBe(1);
    expect(await rows().first().textContent()).toContain(defaultKeyName);
    expect(picked()).toBeNull();

    await page.getByLabel('Workspace').selectOption({ label: 'Research' });
    expect(picked()).toBe(research.id);
    await expect.poll(() => rows().first().textContent()).toContain('research-bot');
    expect(await rows().count()).toBe(1);
    expect(await ui.axe()).toEqual([]);
    await ui.screenshot('workspace-picker');

    await page.getByLabel('Name').fill('lab-key');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByTestId('new-secret').waitFor();
    await expect.poll(() => rows().count()).toBe(2);
    // Created where the page said: in Research, not in the default workspace.
    const inResearch = (await mgmt('GET', `/keys?workspace_id=${research.id}`)).body.data as {
      name: string;
    }[];
    expect(inResearch.map((k) => k.name).sort()).toEqual(['lab-key', 'research-bot']);
    const inDefault = (await mgmt('GET', '/keys')).body.data as { name: string }[];
    expect(inDefault.map((k) => k.name)).not.toContain('lab-key');

    // The address is the view: reloading it shows Research again.
    await page.reload();
    await expect.poll(() => rows().count()).toBe(2);
    expect(await page.getByLabel('Workspace').inputValue()).toBe(research.id);
    expect(await page.locator('table').first().textContent()).toContain('lab-key');

    await page.getByLabel('Workspace').selectOption(''); // the default workspace;
    expect(picked()).toBeNull();
    await expect.poll(() => rows().count()).toBe(1);
  });

  it('Activity: every workspace’s calls with their keys named, or one workspace’s; kept in the address', async () => {
    const { page } = ui;
    await ui.goto('/activity');
    await expect.poll(() => rows().count()).toBe(2);
    expect(await page.getByLabel('Workspace').inputValue()).toBe('');
    // Both keys are named, not only the default workspace's.
    const table = page.locator('table').first();
    await expect.poll(() => table.textContent()).toContain('research-bot');
    expect(await table.textContent()).toContain(defaultKeyName);

    await page.getByLabel('Workspace').selectOption({ label: 'Research' });
    await expect.poll(() => rows().count()).toBe(1);
    expect(await rows().first().textContent()).toContain('research-bot');
    expect(picked()).toBe(research.id);

    // Opening a call keeps the workspace in the address, and a reload shows both again.
    await rows()
      .first()
      .getByRole('button', { name: /^Details of/ })
      .click();
    const detail = page.getByRole('region', { name: /Generation/ });
    await detail.waitFor();
    const id = new URL(page.url()).searchParams.get('id');
    expect(id).toBeTruthy();
    expect(picked()).toBe(research.id);
    await page.reload();
    await expect.poll(() => detail.getByTestId('detail-cost').count()).toBe(1);
    expect(await page.getByLabel('Workspace').inputValue()).toBe(research.id);
    expect(await rows().count()).toBe(1);
    expect(await ui.axe()).toEqual([]);
  });

  it('Overview: the totals of every workspace, or of the chosen one', async () => {
    const { page } = ui;
    await ui.goto('/overview');
    const requests = () =>
      page.getByTestId('summary').locator('.stat', { hasText: 'Requests' }).locator('dd');
    await expect.poll(() => requests().textContent()).toBe('2');
    await page.getByLabel('Workspace').selectOption({ label: 'Research' });
    await expect.poll(() => requests().textContent()).toBe('1');
    expect(picked()).toBe(research.id);
  });

  it('Guardrails and Provider keys open on the workspace in the address, and create there', async () => {
    const { page } = ui;
    await page.goto(`${gw.url}/console/guardrails?workspace=${research.id}`);
    await expect.poll(() => page.getByLabel('Workspace').inputValue()).toBe(research.id);
    await page.getByRole('button', { name: 'New guardrail' }).click();
    const form = page.getByRole('form', { name: 'New guardrail' });
    await form.getByLabel('Name', { exact: true }).fill('research-only');
    await form.getByRole('button', { name: 'Create guardrail' }).click();
    await expect.poll(() => rows().first().textContent()).toContain('research-only');
    const inResearch = (await mgmt('GET', `/guardrails?workspace_id=${research.id}`)).body.data;
    expect(inResearch.map((g: { name: string }) => g.name)).toEqual(['research-only']);
    expect((await mgmt('GET', '/guardrails')).body.data).toEqual([]);

    await ui.goto('/byok');
    expect(picked()).toBeNull();
    await page.getByLabel('Workspace').selectOption({ label: 'Research' });
    expect(picked()).toBe(research.id);
    await page.reload();
    await expect.poll(() => page.getByLabel('Workspace').inputValue()).toBe(research.id);
  });

  it('shows a workspace the API refuses in words, and the page stays usable', async () => {
    const { page } = ui;
    const refused = await mgmt('GET', '/keys?workspace_id=no-such-workspace');
    expect(refused.status).toBe(400);
    await page.goto(`${gw.url}/console/keys?workspace=no-such-workspace`);
    await expect.poll(() => page.getByRole('alert').textContent()).toBe(refused.body.error.message);
    // Picking a workspace that exists brings the list back, and the banner goes.
    await page.getByLabel('Workspace').selectOption({ label: 'Research' });
    await expect.poll(() => rows().count()).toBe(2);
    expect(await page.getByRole('alert').count()).toBe(0);
  });

  it('raised no console error, CSP violation or request to another host', () => {
    ui.expectClean();
  });
});
