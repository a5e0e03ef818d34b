/**
 * The console's credits pages in Chromium against a real gateway on SQLite: the operator adds
 * credits to an organization (Credit grants), and the organization's Credits page shows the new
 * balance and the grant in its ledger — checked on the page and through the API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../support/gateway.js';
import { adminClient, client } from '../support/http.js';
import { type ConsoleUi, ensureConsoleBuilt, hasChromium, openConsole, warnIfNoChromium } from './browser.js';

warnIfNoChromium('test/console/credits.test.ts');

describe.skipIf(!hasChromium)('console: Credits and Credit grants', { timeout: 60_000 }, () => {
  let gw: TestGateway;
  let ui: ConsoleUi;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    gw = await startTestGateway('sqlite');
    ui = await openConsole(gw);
  }, 300_000);

  afterAll(async () => {
    await ui?.close();
    await gw?.stop();
  });

  it('the operator grants credits to an organization; its totals and ledger show the grant', async () => {
    const { page } = ui;
    await ui.signIn(ADMIN_TOKEN);
    await ui.goto('/credit-grants');
    expect(await page.getByLabel('Organization').inputValue()).toBe(gw.organizationId);
    await expect.poll(() => page.getByTestId('balance').textContent()).toBe('$0.00');
    await page.getByLabel('Amount (USD)').fill('25');
    await page.getByLabel('Note').fill('welcome grant');
    await page.getByRole('button', { name: 'Add credits' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Added $25.00');
    await expect.poll(() => page.getByTestId('balance').textContent()).toBe('$25.00');
    await expect.poll(() => page.locator('tbody').textContent()).toContain('welcome grant');
    // Stored: the ledger holds the grant, and the organization's own totals count it.
    const admin = await adminClient(gw.url)('GET', `/admin/credits?organization_id=${gw.organizationId}`);
    expect(admin.status).toBe(200);
    expect(admin.body).toMatchObject({
      total_credits: 25,
      total_count: 1,
      data: [{ organization_id: gw.organizationId, amount_usd: 25, note: 'welcome grant' }],
    });
    expect(await ui.axe()).toEqual([]);
    await ui.screenshot('credit-grants');
  });

  it('an unknown organization is a 404 and a missing one a 400, in the API’s error format', async () => {
    const admin = adminClient(gw.url);
    const unknown = await admin('GET', '/admin/credits?organization_id=no-such-org');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.message).toMatch(/Organization/);
    expect((await admin('GET', '/admin/credits')).status).toBe(400);
    expect((await admin('GET', '/admin/users?organization_id=no-such-org')).status).toBe(404);
    expect((await client(gw.url, gw.managementKey)('GET', '/credits/ledger?limit=0')).status).toBe(400);
  });

  it('the organization sees the balance and the grant in its ledger', async () => {
    const { page } = ui;
    await ui.signOut();
    await ui.signIn(gw.managementKey);
    await ui.goto('/credits');
    await expect.poll(() => page.getByTestId('balance').textContent()).toBe('$25.00');
    const row = page.getByRole('row').filter({ hasText: 'welcome grant' });
    await expect.poll(() => row.textContent()).toContain('$25.00');
    const ledger = await client(gw.url, gw.managementKey)('GET', '/credits/ledger');
    expect(ledger.status).toBe(200);
    expect(ledger.body.total_count).toBe(1);
    expect(ledger.body.data[0]).toMatchObject({ amount_usd: 25, note: 'welcome grant', kind: 'purchase' });
    expect(await ui.axe()).toEqual([]);
    await ui.screenshot('credits');
  });

  it('raised no console error, CSP violation or request to another host', () => {
    ui.expectClean();
  });
});
