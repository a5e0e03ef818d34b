/**
 * The Guardrails page in Chromium against a real gateway on SQLite: create a guardrail with its
 * policy fields, assign it to a key, and see the key's effective policy change; edit and delete.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { client } from '../support/http.js';
import { type ConsoleUi, ensureConsoleBuilt, hasChromium, openConsole, warnIfNoChromium } from './browser.js';

warnIfNoChromium('test/console/guardrails.test.ts');

describe.skipIf(!hasChromium)('console: Guardrails page', { timeout: 90_000 }, () => {
  let gw: TestGateway;
  let ui: ConsoleUi;
  let keyHash: string;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    gw = await startTestGateway('sqlite');
    keyHash = (await client(gw.url, gw.managementKey)('POST', '/keys', { name: 'held-key' })).body.data.hash;
    ui = await openConsole(gw);
    await ui.signIn(gw.managementKey);
  }, 300_000);

  afterAll(async () => {
    await ui?.close();
    await gw?.stop();
  });

  const mgmt = () => client(gw.url, gw.managementKey);

  it('creates a guardrail, assigns it to a key, and the key’s effective policy changes', async () => {
    const { page } = ui;
    await ui.goto('/guardrails');
    expect(await page.locator('h1').textContent()).toBe('Guardrails');
    await expect.poll(() => page.locator('tbody').first().textContent()).toContain('No guardrails yet');

    // Before: the key is unrestricted.
    await page.getByLabel('Key', { exact: true }).selectOption(keyHash);
    const policy = page.getByTestId('effective-policy');
    await expect.poll(() => policy.textContent()).toContain('none: no restriction');

    await page.getByRole('button', { name: 'New guardrail' }).click();
    const form = page.getByRole('form', { name: 'New guardrail' });
    await form.getByLabel('Name', { exact: true }).fill('eu-only');
    await form.getByLabel('Allowed models').fill('anthropic/*, openai/gpt-4o');
    await form.getByLabel('Ignored providers').fill('azure');
    await form.getByLabel('Data region: europe').check();
    await form.getByLabel('Zero data retention for openai models').check();
    await form.getByLabel('Providers that train on prompts (paid models)').selectOption('refuse');
    await form.getByLabel('Budget (USD)').fill('25');
    await form.getByLabel('Budget resets').selectOption('monthly');
    await form.getByLabel('Requests per minute').fill('120');
    await form.getByLabel('Email addresses: action').selectOption('redact');
    await form.getByRole('button', { name: 'Add a custom filter' }).click();
    await form.getByLabel('Filter 1: pattern').fill('ACME-[0-9]+');
    await form.getByLabel('Filter 1: label').fill('Order numbers');
    await form.getByLabel('Filter 1: action').selectOption('block');
    expect(await ui.axe()).toEqual([]);
    await form.getByRole('button', { name: 'Create guardrail' }).click();
    const row = page.getByRole('row').filter({ hasText: 'eu-only' });
    await expect.poll(() => row.textContent()).toContain('budget $25.00 monthly');

    // Stored as entered.
    const stored = (await mgmt()('GET', '/guardrails')).body.data[0];
    expect(stored).toMatchObject({
      name: 'eu-only',
      allowed_models: ['anthropic/*', 'openai/gpt-4o'],
      ignored_providers: ['azure'],
      allowed_data_regions: ['europe'],
      enforce_zdr_openai: true,
      enforce_zdr_google: false,
      enable_paid_model_training: false,
      limit_usd: 25,
      reset_interval: 'monthly',
      rpm_limit: 120,
      content_filter_builtins: [expect.objectContaining({ slug: 'email', action: 'redact' })],
      content_filters: [
        expect.objectContaining({ pattern: 'ACME-[0-9]+', label: 'Order numbers', action: 'block' }),
      ],
    });

    // Assign it to the key: the effective policy shows it.
    await page.getByRole('button', { name: 'Assignments of eu-only' }).click();
    await page.getByLabel('API key to assign').selectOption(keyHash);
    await page.getByRole('button', { name: 'Assign key' }).click();
    const assigned = page.getByRole('table', { name: 'Keys assigned' });
    await expect.poll(() => assigned.textContent()).toContain('held-key');
    await expect.poll(() => policy.textContent()).toContain('eu-only (assigned to the key)');
    const text = (await policy.textContent()) ?? '';
    expect(text).toContain('anthropic/*, openai/gpt-4o');
    expect(text).toContain('required for openai models');
    expect(text).toContain('paid models refused');
    expect(text).toContain('$25.00 monthly');
    expect(text).toContain('Order numbers: block');
    const assignments = (await mgmt()('GET', `/guardrails/${stored.id}/assignments/keys`)).body.data;
    expect(assignments.map((a: { key_hash: string }) => a.key_hash)).toEqual([keyHash]);
    expect(await ui.axe()).toEqual([]);
    await ui.screenshot('guardrails');
  });

  it('edits a guardrail, shows a refused value in the banner, unassigns and deletes', async () => {
    const { page } = ui;
    await page.getByRole('button', { name: 'Edit eu-only' }).click();
    const form = page.getByRole('form', { name: 'Edit eu-only' });
    await form.getByLabel('Allowed models').fill('openai/gpt-4o');
    await form.getByRole('button', { name: 'Save guardrail' }).click();
    const policy = page.getByTestId('effective-policy');
    await expect.poll(() => policy.textContent()).not.toContain('anthropic/*');
    const stored = (await mgmt()('GET', '/guardrails')).body.data[0];
    expect(stored.allowed_models).toEqual(['openai/gpt-4o']);
    // Untouched fields kept (the training flag is sent only when changed).
    expect(stored).toMatchObject({ enable_paid_model_training: false, rpm_limit: 120, limit_usd: 25 });

    // A budget without a reset interval is refused: the banner says why, the page stays.
    await page.getByRole('button', { name: 'Edit eu-only' }).click();
    const again = page.getByRole('form', { name: 'Edit eu-only' });
    await again.getByLabel('Budget resets').selectOption('');
    await again.getByRole('button', { name: 'Save guardrail' }).click();
    await expect
      .poll(() => page.getByRole('alert').first().textContent())
      .toContain('limit_usd and reset_interval must be set together');
    await page.getByRole('button', { name: 'Dismiss' }).click();
    await again.getByRole('button', { name: 'Cancel' }).click();

    await page.getByRole('button', { name: 'Unassign key held-key' }).click();
    await expect.poll(() => policy.textContent()).toContain('none: no restriction');
    await page.getByRole('button', { name: 'Delete eu-only' }).click();
    await page.getByRole('button', { name: 'Delete “eu-only” and its assignments' }).click();
    await expect.poll(() => page.getByRole('row').filter({ hasText: 'eu-only' }).count()).toBe(0);
    expect((await mgmt()('GET', '/guardrails')).body.total_count).toBe(0);
    ui.expectClean();
  });
});
