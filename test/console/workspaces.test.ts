/**
 * The Workspaces page in Chromium against a real gateway on SQLite: create and edit a workspace, add
 * a member, set budgets (with their spend) and remove one; the organization's members and roles.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { adminClient, client } from '../support/http.js';
import { type ConsoleUi, ensureConsoleBuilt, hasChromium, openConsole, warnIfNoChromium } from './browser.js';

warnIfNoChromium('test/console/workspaces.test.ts');

describe.skipIf(!hasChromium)('console: Workspaces page', { timeout: 90_000 }, () => {
  let gw: TestGateway;
  let ui: ConsoleUi;
  const email = `member-${Date.now()}@example.com`;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    gw = await startTestGateway('sqlite');
    const made = await adminClient(gw.url)('POST', '/admin/users', {
      email,
      organization_id: gw.organizationId,
      role: 'member',
    });
    expect(made.status).toBe(201);
    ui = await openConsole(gw);
    await ui.signIn(gw.managementKey);
  }, 300_000);

  afterAll(async () => {
    await ui?.close();
    await gw?.stop();
  });

  const mgmt = () => client(gw.url, gw.managementKey);

  it('creates and edits a workspace, and lists the organization’s members with their roles', async () => {
    const { page } = ui;
    await ui.goto('/workspaces');
    expect(await page.locator('h1').textContent()).toBe('Workspaces');
    const create = page.getByRole('form', { name: 'New workspace' });
    await create.getByLabel('Name').fill('Research');
    await create.getByLabel('Slug').fill('research');
    await create.getByLabel('Description').fill('Experiments');
    await create.getByLabel('Provider order').selectOption('latency');
    await create.getByRole('button', { name: 'Create workspace' }).click();
    const row = () => page.getByRole('row').filter({ hasText: 'research' });
    await expect.poll(() => row().textContent()).toContain('Experiments');
    const stored = (await mgmt()('GET', '/workspaces/research')).body.data;
    expect(stored).toMatchObject({
      name: 'Research',
      description: 'Experiments',
      default_provider_sort: 'latency',
    });

    // A slug already taken is refused in words.
    await create.getByLabel('Name').fill('Again');
    await create.getByLabel('Slug').fill('research');
    await create.getByRole('button', { name: 'Create workspace' }).click();
    await expect.poll(() => page.getByRole('alert').first().textContent()).toMatch(/slug/i);
    await page.getByRole('button', { name: 'Dismiss' }).click();

    await page.getByRole('button', { name: 'Edit Research' }).click();
    const edit = page.getByRole('form', { name: 'Settings of Research' });
    await edit.getByLabel('Name').fill('Research lab');
    await edit.getByRole('button', { name: 'Save workspace' }).click();
    await expect.poll(() => row().textContent()).toContain('Research lab');
    expect((await mgmt()('GET', '/workspaces/research')).body.data.name).toBe('Research lab');

    const members = page.getByRole('table', { name: 'Members of the organization and their roles' });
    await expect.poll(() => members.textContent()).toContain(email);
    expect(await members.textContent()).toContain('org:member');
  });

  it('adds a member and sets, shows and removes budgets', async () => {
    const { page } = ui;
    await page.getByRole('button', { name: 'Members and budgets of Research lab' }).click();
    await page.getByLabel('Member to add').selectOption({ label: email });
    await page.getByRole('button', { name: 'Add member' }).click();
    const wsMembers = page.getByRole('table', { name: 'Members of Research lab' });
    await expect.poll(() => wsMembers.textContent()).toContain(email);
    const ws = (await mgmt()('GET', '/workspaces/research')).body.data;
    const listedMembers = (await mgmt()('GET', `/workspaces/${ws.id}/members`)).body.data;
    expect(listedMembers.length).toBeGreaterThanOrEqual(1);

    const monthly = page.getByRole('form', { name: 'Monthly budget' });
    await monthly.getByLabel('Monthly limit (USD)').fill('50');
    await monthly.getByRole('button', { name: 'Set budget' }).click();
    const budgets = page.getByRole('table', { name: 'Budgets of Research lab' });
    await expect.poll(() => budgets.textContent()).toContain('$0.00 of $50.00');
    const daily = page.getByRole('form', { name: 'Daily budget' });
    await daily.getByLabel('Daily limit (USD)').fill('5');
    await daily.getByRole('button', { name: 'Set budget' }).click();
    await expect.poll(() => budgets.textContent()).toContain('$0.00 of $5.00');
    const stored = (await mgmt()('GET', `/workspaces/${ws.id}/budgets`)).body.data;
    expect(
      stored.map((b: { reset_interval: string; limit_usd: number }) => [b.reset_interval, b.limit_usd]),
    ).toEqual([
      ['daily', 5],
      ['monthly', 50],
    ]);
    // The workspace-wide BYOK flag goes with a budget write.
    await page.getByLabel('BYOK spend counts against these budgets').click();
    await expect
      .poll(async () => (await mgmt()('GET', `/workspaces/${ws.id}/budgets`)).body.include_byok_in_budgets)
      .toBe(true);
    await expect
      .poll(() => page.getByLabel('BYOK spend counts against these budgets').isChecked())
      .toBe(true);
    // A weekly limit above the monthly one is refused, with the gateway's reason.
    const weekly = page.getByRole('form', { name: 'Weekly budget' });
    await weekly.getByLabel('Weekly limit (USD)').fill('80');
    await weekly.getByRole('button', { name: 'Set budget' }).click();
    await expect
      .poll(() => page.getByRole('alert').first().textContent())
      .toContain('must strictly decrease');
    expect(await ui.axe()).toEqual([]);
    await ui.screenshot('workspaces');
    await page.getByRole('button', { name: 'Dismiss' }).click();

    await page.getByRole('button', { name: 'Remove the daily budget' }).click();
    await expect.poll(() => budgets.textContent()).not.toContain('$5.00');
    expect((await mgmt()('GET', `/workspaces/${ws.id}/budgets`)).body.data).toHaveLength(1);
    ui.expectClean();
  });

  it('sets the video callback URL, and makes, replaces and removes a signing secret shown once', async () => {
    const { page } = ui;
    const ws = () => mgmt()('GET', '/workspaces/research').then((r) => r.body.data);
    const form = page.getByRole('form', { name: 'Video webhooks of Research lab' });
    // Only https: the gateway's reason is shown.
    await form.getByLabel('Default callback URL').fill('http://hooks.example.com/video');
    await form.getByRole('button', { name: 'Save callback URL' }).click();
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('video_callback_url');
    await page.getByRole('button', { name: 'Dismiss' }).click();
    await form.getByLabel('Default callback URL').fill('https://hooks.example.com/video');
    await form.getByRole('button', { name: 'Save callback URL' }).click();
    await expect.poll(async () => (await ws()).video_callback_url).toBe('https://hooks.example.com/video');

    const signing = page.getByTestId('webhook-signing');
    expect(await signing.textContent()).toContain('Events are not signed.');
    await page.getByRole('button', { name: 'Make a signing secret' }).click();
    const shown = page.getByTestId('new-webhook-secret');
    await expect.poll(() => shown.textContent()).toMatch(/^whsec_/);
    const first = (await shown.textContent()) as string;
    expect(await gw.services.workspaceWebhooks.signingSecret((await ws()).id)).toBe(first);
    await expect.poll(() => signing.textContent()).toContain('Events are signed.');
    await page.getByRole('button', { name: 'I have copied it' }).click();
    expect(await page.getByTestId('new-webhook-secret').count()).toBe(0);

    await page.getByRole('button', { name: 'Replace the signing secret' }).click();
    await expect
      .poll(async () => (await shown.count()) > 0 && (await shown.textContent()) !== first)
      .toBe(true);
    expect(await gw.services.workspaceWebhooks.signingSecret((await ws()).id)).toBe(
      await shown.textContent(),
    );
    expect(await ui.axe()).toEqual([]);
    await page.getByRole('button', { name: 'I have copied it' }).click();

    await page.getByRole('button', { name: 'Remove the signing secret' }).click();
    await expect.poll(() => signing.textContent()).toContain('Events are not signed.');
    expect((await ws()).has_webhook_secret).toBe(false);
    ui.expectClean();
  });
});
