/**
 * The Provider keys (BYOK) page in Chromium against a real gateway on SQLite: add a provider key and
 * see it masked — the secret never appears in the page or in any API answer the page received —
 * then edit, rotate, disable and delete it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { client } from '../support/http.js';
import { type ConsoleUi, ensureConsoleBuilt, hasChromium, openConsole, warnIfNoChromium } from './browser.js';

warnIfNoChromium('test/console/byok.test.ts');

const SECRET = 'sk-console-byok-secret-0123456789abcdef';
const ROTATED = 'sk-console-byok-rotated-fedcba9876543210';

describe.skipIf(!hasChromium)('console: Provider keys page', { timeout: 90_000 }, () => {
  let gw: TestGateway;
  let ui: ConsoleUi;
  /** Every API answer the page received (bodies), to check no secret ever came back. */
  const answers: Promise<string>[] = [];

  beforeAll(async () => {
    await ensureConsoleBuilt();
    gw = await startTestGateway('sqlite');
    ui = await openConsole(gw);
    ui.page.on('response', (r) => {
      if (r.url().includes('/api/v1/')) answers.push(r.text().catch(() => ''));
    });
    await ui.signIn(gw.managementKey);
  }, 300_000);

  afterAll(async () => {
    await ui?.close();
    await gw?.stop();
  });

  const listed = async () =>
    (await client(gw.url, gw.managementKey)('GET', '/byok')).body.data as {
      id: string;
      name: string | null;
      label: string;
      weight: number;
      disabled: boolean;
      is_fallback: boolean;
    }[];

  it('adds a provider key and shows it masked, never the secret', async () => {
    const { page } = ui;
    await ui.goto('/byok');
    expect(await page.locator('h1').textContent()).toBe('Provider keys');
    const add = page.getByRole('form', { name: 'New provider key' });
    await add.getByLabel('Provider', { exact: true }).fill('openai');
    await add.getByLabel('Secret key').fill(SECRET);
    await add.getByLabel('Name', { exact: true }).fill('team openai');
    await add.getByLabel('Weight').fill('3');
    await add.getByRole('button', { name: 'Add provider key' }).click();
    const row = page.getByRole('row').filter({ hasText: 'team openai' });
    await row.waitFor();
    const [stored] = await listed();
    expect(stored).toMatchObject({ name: 'team openai', weight: 3, disabled: false });
    expect(await row.textContent()).toContain(stored!.label);
    // The form forgot the secret; nothing the page shows or received carries it.
    expect(await add.getByLabel('Secret key').inputValue()).toBe('');
    expect(await page.content()).not.toContain(SECRET);
    expect(JSON.stringify(await ui.storage())).not.toContain(SECRET);
    expect(await ui.axe()).toEqual([]);
    await ui.screenshot('byok');
  });

  it('edits, rotates, disables and deletes it', async () => {
    const { page } = ui;
    const row = () => page.getByRole('row').filter({ hasText: 'team openai' });
    await page.getByRole('button', { name: 'Edit team openai' }).click();
    const form = page.getByRole('form', { name: 'Settings of team openai' });
    await form.getByLabel("Fallback: tried after the gateway's own key").check();
    await form.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => row().textContent()).toContain("after the gateway's key");
    expect((await listed())[0]).toMatchObject({ is_fallback: true, weight: 3 });

    // Two options that exclude each other: the gateway's refusal shows in the banner.
    await page.getByRole('button', { name: 'Edit team openai' }).click();
    await form.getByLabel("BYOK only: never use the gateway's own key").check();
    await form.getByRole('button', { name: 'Save' }).click();
    await expect
      .poll(() => page.getByRole('alert').first().textContent())
      .toMatch(/is_byok_only|is_fallback/);
    await page.getByRole('button', { name: 'Dismiss' }).click();
    await form.getByRole('button', { name: 'Cancel' }).click();

    const before = (await listed())[0]!.label;
    await page.getByRole('button', { name: 'Rotate team openai' }).click();
    await page.getByLabel('New secret key').fill(ROTATED);
    await page.getByRole('button', { name: 'Replace the key' }).click();
    await expect.poll(async () => (await listed())[0]!.label).not.toBe(before);
    await expect.poll(() => row().textContent()).toContain((await listed())[0]!.label);

    await page.getByRole('button', { name: 'Disable team openai' }).click();
    await expect.poll(() => row().textContent()).toContain('disabled');
    expect((await listed())[0]!.disabled).toBe(true);
    await page.getByRole('button', { name: 'Enable team openai' }).click();
    await expect.poll(() => row().textContent()).toContain('active');

    await page.getByRole('button', { name: 'Delete team openai' }).click();
    await page.getByRole('button', { name: 'Delete “team openai” for good' }).click();
    await expect.poll(() => row().count()).toBe(0);
    expect(await listed()).toEqual([]);

    const bodies = await Promise.all(answers);
    expect(bodies.length).toBeGreaterThan(5);
    for (const body of bodies) {
      expect(body).not.toContain(SECRET);
      expect(body).not.toContain(ROTATED);
    }
    expect(await page.content()).not.toContain(ROTATED);
    ui.expectClean();
  });
});
