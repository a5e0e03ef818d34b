/**
 * The console's operator pages in Chromium against a real gateway on SQLite: create an
 * organization, add a user to it and give them a key, and read the provider credentials' health —
 * checked on the page and through the API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../support/gateway.js';
import { adminClient, client } from '../support/http.js';
import { type ConsoleUi, ensureConsoleBuilt, hasChromium, openConsole, warnIfNoChromium } from './browser.js';

warnIfNoChromium('test/console/operator.test.ts');

describe.skipIf(!hasChromium)('console: operator pages', { timeout: 60_000 }, () => {
  let gw: TestGateway;
  let ui: ConsoleUi;
  let orgId = '';

  beforeAll(async () => {
    await ensureConsoleBuilt();
    gw = await startTestGateway('sqlite');
    ui = await openConsole(gw);
    await ui.signIn(ADMIN_TOKEN);
  }, 300_000);

  afterAll(async () => {
    await ui?.close();
    await gw?.stop();
  });

  it('creates an organization', async () => {
    const { page } = ui;
    await ui.goto('/organizations');
    await page.getByLabel('Organization name').fill('Acme Research');
    await page.getByRole('button', { name: 'Create organization' }).click();
    await expect
      .poll(() => page.getByRole('status').first().textContent())
      .toContain('“Acme Research” created');
    await expect.poll(() => page.locator('tbody').textContent()).toContain('Acme Research');
    const orgs = await adminClient(gw.url)('GET', '/admin/organizations');
    const made = (orgs.body.data as { id: string; name: string; default_workspace_id: string }[]).find(
      (o) => o.name === 'Acme Research',
    );
    expect(made?.default_workspace_id).toBeTruthy();
    orgId = made!.id;
    expect(await ui.axe()).toEqual([]);
    await ui.screenshot('organizations-created');
  });

  it('adds a user to it, refuses the same user twice with a message, and gives them a working key', async () => {
    const { page } = ui;
    await ui.goto('/users');
    await page.getByLabel('Organization').selectOption(orgId);
    await expect
      .poll(() => page.locator('tbody').textContent())
      .toContain('No users in this organization yet.');
    expect(await page.getByRole('alert').count()).toBe(0);
    await page.getByLabel('Email').fill('ada@example.com');
    await page.getByLabel('Role').selectOption('admin');
    await page.getByLabel('First name').fill('Ada');
    await page.getByLabel('In the interns programme').check();
    await page.getByRole('button', { name: 'Add user' }).click();
    const row = page.getByRole('row').filter({ hasText: 'ada@example.com' });
    await expect.poll(() => row.textContent()).toContain('admin');
    expect(await row.textContent()).toContain('yes');
    const users = await adminClient(gw.url)('GET', `/admin/users?organization_id=${orgId}`);
    expect(users.body).toMatchObject({
      total_count: 1,
      data: [{ email: 'ada@example.com', role: 'admin', interns_programme: true, first_name: 'Ada' }],
    });
    // The same user again: the gateway's refusal is shown, and the page stays usable.
    await page.getByLabel('Email').fill('ada@example.com');
    await page.getByRole('button', { name: 'Add user' }).click();
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('already a member');
    await page.getByRole('button', { name: 'Dismiss' }).click();

    await page.getByRole('button', { name: 'Create a management key for ada@example.com' }).click();
    const secret = (await page.getByTestId('new-secret').textContent()) ?? '';
    expect(secret).toMatch(/^sk-gh-v1-[0-9a-f]{64}$/);
    const key = await client(gw.url, secret)('GET', '/key');
    expect(key.status).toBe(200);
    expect(key.body.data).toMatchObject({ is_management_key: true });
    expect(await ui.axe()).toEqual([]);
    await ui.screenshot('users');
  });

  it('shows the provider credentials’ health', async () => {
    const { page } = ui;
    await ui.goto('/provider-health');
    const creds = await adminClient(gw.url)('GET', '/admin/credentials');
    const n = (creds.body.data as unknown[]).length;
    await expect
      .poll(() => page.getByRole('status').first().textContent())
      .toMatch(n === 0 ? /No provider credential/ : /healthy|Failing/);
    expect(await page.locator('tbody tr').count()).toBe(Math.max(n, 1));
    await page.getByRole('button', { name: 'Refresh' }).click();
    expect(await ui.axe()).toEqual([]);
    await ui.screenshot('provider-health');
  });

  it('raised no console error, CSP violation or request to another host', () => {
    ui.expectClean();
  });
});
