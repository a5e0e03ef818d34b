/**
 * The console's Audit log page in Chromium against a real gateway on SQLite: an organization finds
 * a key's rename among its events and reads the change (before → after) in the detail, with the
 * provider key it sent masked; the operator sees every organization's events and narrows them to
 * the operator-level ones.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../support/gateway.js';
import { adminClient, client } from '../support/http.js';
import { type ConsoleUi, ensureConsoleBuilt, hasChromium, openConsole, warnIfNoChromium } from './browser.js';

warnIfNoChromium('test/console/audit-log.test.ts');

describe.skipIf(!hasChromium)('console: Audit log', { timeout: 60_000 }, () => {
  let gw: TestGateway;
  let ui: ConsoleUi;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    gw = await startTestGateway('sqlite');
    ui = await openConsole(gw);
    const mgmt = client(gw.url, gw.managementKey);
    const key = await mgmt('POST', '/keys', { name: 'deploy-bot' });
    expect(key.status).toBe(201);
    expect((await mgmt('PATCH', `/keys/${key.body.data.hash}`, { name: 'deploy-bot-2' })).status).toBe(200);
    const byok = await mgmt('POST', '/byok', { provider: 'openai', key: 'sk-console-audit-secret' });
    expect(byok.status).toBe(201);
    expect((await adminClient(gw.url)('POST', '/admin/catalog/reload')).status).toBe(200);
  }, 300_000);

  afterAll(async () => {
    await ui?.close();
    await gw?.stop();
  });

  it('an organization filters its events and reads a change before and after, secrets masked', async () => {
    const { page } = ui;
    await ui.signIn(gw.managementKey);
    await ui.goto('/audit-log');
    const table = page.getByRole('table', { name: /Audit events/ });
    await expect.poll(() => table.textContent()).toContain('byok.create');
    expect(await table.textContent()).toContain('key.update');
    expect(await table.textContent()).not.toContain('catalog.reload'); // the operator's, not theirs

    await page.getByLabel('Action').fill('key.update');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => page.locator('tbody tr').count()).toBe(1);
    await page.getByRole('button', { name: /Details of key\.update/ }).click();
    const changes = page.getByRole('table', { name: 'Changes (before → after)' });
    const name = changes.getByRole('row').filter({ hasText: /^name/ });
    await expect.poll(() => name.textContent()).toBe('name"deploy-bot""deploy-bot-2"');
    expect(await ui.axe()).toEqual([]);

    // The provider key the organization sent is masked in its event.
    await page.getByRole('button', { name: 'Close details' }).click();
    await page.getByLabel('Action').fill('byok.create');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByRole('button', { name: /Details of byok\.create/ }).click();
    await expect.poll(() => page.locator('.detail pre').textContent()).toContain('"key": "[redacted]"');
    expect(await page.content()).not.toContain('sk-console-audit-secret');
    await ui.screenshot('audit-log');
  });

  it('the operator sees every organization and narrows to operator-level events', async () => {
    const { page } = ui;
    await ui.signOut();
    await ui.signIn(ADMIN_TOKEN);
    await ui.goto('/audit-log');
    const table = page.getByRole('table', { name: /Audit events/ });
    await expect.poll(() => table.textContent()).toContain('catalog.reload');
    expect(await table.textContent()).toContain('key.update');
    await page.getByLabel('Organization').selectOption('none');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => page.locator('tbody tr').count()).toBe(1);
    expect(await table.textContent()).toContain('catalog.reload');
    expect(await ui.axe()).toEqual([]);
  });

  it('raised no console error, CSP violation or request to another host', () => {
    ui.expectClean();
  });
});
