/**
 * The Presets page in Chromium against a real gateway on SQLite, in one browser session: with a
 * pasted API key, a preset is created from a JSON body (a body that is not JSON, and one the gateway
 * refuses, are explained under the editor), listed, shown with its configuration and how to call it,
 * given a second version from the editor, and deleted after a confirmation; a Messages preset opens
 * in its own format, so saving it again loses nothing — each step checked against what the gateway
 * stores.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { client } from '../support/http.js';
import { type ConsoleUi, ensureConsoleBuilt, hasChromium, openConsole, warnIfNoChromium } from './browser.js';

warnIfNoChromium('test/console/presets.test.ts');

describe.skipIf(!hasChromium)('console: Presets', { timeout: 60_000 }, () => {
  let gw: TestGateway;
  let ui: ConsoleUi;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    gw = await startTestGateway('sqlite');
    ui = await openConsole(gw);
    await ui.signIn(gw.managementKey);
  }, 300_000);

  afterAll(async () => {
    await ui?.close();
    await gw?.stop();
  });

  const key = () => client(gw.url, gw.apiKey);
  const detail = () => ui.page.locator('section[aria-labelledby="preset-detail"]');
  const create = () => ui.page.locator('section[aria-labelledby="create-preset"]');
  const list = () => ui.page.getByRole('table', { name: 'Presets, most recently updated first' });
  /** The list's "Current version" cell of a preset. */
  const listedVersion = (slug: string) =>
    list().getByRole('row').filter({ hasText: slug }).getByRole('cell').nth(2).textContent();

  it('asks for an API key, then lists no presets', async () => {
    const { page } = ui;
    await ui.goto('/presets');
    await page.getByRole('textbox', { name: 'API key' }).fill(gw.apiKey);
    await page.getByRole('button', { name: 'Use this key' }).click();
    await page.getByRole('heading', { name: 'Create a preset' }).waitFor();
    await expect.poll(() => page.locator('tbody').textContent()).toContain('No presets yet.');
  });

  it('explains a body that is not JSON, and one the gateway refuses, under the editor', async () => {
    const form = create();
    await form.getByLabel('Slug').fill('triage');
    await form.getByLabel('Request body (JSON)').fill('{"model": ');
    await form.getByRole('button', { name: 'Create preset' }).click();
    await expect.poll(() => form.getByRole('alert').textContent()).toContain('not valid JSON');
    expect(await form.getByLabel('Request body (JSON)').getAttribute('aria-invalid')).toBe('true');
    // The gateway's own validation: a preset's model is never another preset.
    await form.getByLabel('Request body (JSON)').fill('{"model": "@preset/other"}');
    await form.getByRole('button', { name: 'Create preset' }).click();
    await expect.poll(() => form.getByRole('alert').textContent()).toContain('cannot name another preset');
    expect((await key()('GET', '/presets')).body.total_count).toBe(0);
  });

  it('creates a preset: listed, opened with its configuration and the snippet that calls it', async () => {
    const form = create();
    await form.getByLabel('Request body (JSON)').fill(
      JSON.stringify({
        model: 'test/gpt',
        temperature: 0.2,
        max_tokens: 300,
        messages: [
          { role: 'system', content: 'Classify the ticket in one word.' },
          { role: 'user', content: 'not kept' },
        ],
      }),
    );
    await form.getByRole('button', { name: 'Create preset' }).click();
    await expect.poll(() => form.getByRole('status').textContent()).toContain('Preset “triage” created.');
    expect(await form.getByRole('alert').count()).toBe(0);
    // Stored as the gateway keeps it: the configuration fields and the system prompt, version 1.
    const stored = await key()('GET', '/presets/triage');
    expect(stored.body.data.designated_version).toMatchObject({
      version: 1,
      config: { model: 'test/gpt', temperature: 0.2, max_tokens: 300 },
      system_prompt: 'Classify the ticket in one word.',
    });
    await expect.poll(() => listedVersion('triage')).toBe('1');
    // The detail opened on the new preset.
    await expect.poll(() => detail().getByTestId('preset-version').textContent()).toBe('1');
    const config = JSON.parse((await detail().getByTestId('preset-config').textContent()) ?? '');
    expect(config).toEqual({ model: 'test/gpt', temperature: 0.2, max_tokens: 300 });
    expect(await detail().getByTestId('preset-system-prompt').textContent()).toBe(
      'Classify the ticket in one word.',
    );
    expect(await detail().getByTestId('preset-snippet').textContent()).toBe('"model": "@preset/triage"');
    await expect.poll(() => detail().getByTestId('preset-version-count').textContent()).toBe('1');
    expect(await ui.axe()).toEqual([]);
  });

  it('saves a second version from the editor, which starts from the current one', async () => {
    const editor = detail().getByLabel('Request body (JSON)');
    const start = JSON.parse(await editor.inputValue());
    expect(start).toEqual({
      model: 'test/gpt',
      temperature: 0.2,
      max_tokens: 300,
      messages: [{ role: 'system', content: 'Classify the ticket in one word.' }],
    });
    await editor.fill(JSON.stringify({ ...start, temperature: 0.7 }));
    await detail().getByRole('button', { name: 'Save as new version' }).click();
    await expect.poll(() => detail().getByTestId('preset-version').textContent()).toBe('2');
    await expect.poll(() => detail().getByTestId('preset-version-count').textContent()).toBe('2');
    expect(await detail().getByRole('status').first().textContent()).toContain('Version 2 saved');
    expect(JSON.parse((await detail().getByTestId('preset-config').textContent()) ?? '')).toMatchObject({
      temperature: 0.7,
    });
    // Both versions listed; the list's row says version 2.
    expect(await detail().locator('tbody tr').count()).toBe(2);
    await expect.poll(() => listedVersion('triage')).toBe('2');
    await ui.screenshot('presets');
    const versions = await key()('GET', '/presets/triage/versions');
    expect(versions.body.total_count).toBe(2);
    expect(versions.body.data.map((v: { config: { temperature: number } }) => v.config.temperature)).toEqual([
      0.2, 0.7,
    ]);
    // Creating it again is refused: it exists (saving there would add a version).
    const form = create();
    await form.getByLabel('Slug').fill('triage');
    await form.getByLabel('Request body (JSON)').fill('{"model": "test/gpt"}');
    await form.getByRole('button', { name: 'Create preset' }).click();
    await expect.poll(() => form.getByRole('alert').textContent()).toContain('already exists');
    expect((await key()('GET', '/presets/triage/versions')).body.total_count).toBe(2);
  });

  it('deletes it after a confirmation', async () => {
    const { page } = ui;
    await page.getByRole('button', { name: 'Delete triage' }).click();
    // Nothing happens until it is confirmed.
    expect((await key()('GET', '/presets/triage')).status).toBe(200);
    await page.getByRole('button', { name: 'Delete “triage” and its versions' }).click();
    await expect.poll(() => list().textContent()).toContain('No presets yet.');
    expect(await detail().count()).toBe(0);
    expect((await key()('GET', '/presets/triage')).status).toBe(404);
  });

  it('opens a Messages preset in the Messages format, so saving it again keeps its thinking', async () => {
    const { page } = ui;
    const saved = await key()('POST', '/presets/thinker/messages', {
      model: 'test/gpt',
      max_tokens: 500,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      stop_sequences: ['END'],
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'not kept' }],
    });
    expect(saved.status, saved.text).toBe(200);
    await page.reload();
    await page.getByRole('button', { name: 'Open thinker' }).click();
    await expect.poll(() => detail().getByTestId('preset-version').textContent()).toBe('1');
    expect(await detail().getByLabel('Request format').inputValue()).toBe('messages');
    expect(JSON.parse(await detail().getByLabel('Request body (JSON)').inputValue())).toEqual({
      model: 'test/gpt',
      thinking: { type: 'enabled', budget_tokens: 1024 },
      max_tokens: 500,
      stop_sequences: ['END'],
      system: 'Be brief.',
    });
    await detail().getByRole('button', { name: 'Save as new version' }).click();
    await expect.poll(() => detail().getByTestId('preset-version').textContent()).toBe('2');
    const [first, second] = (await key()('GET', '/presets/thinker/versions')).body.data as {
      config: unknown;
      system_prompt: string;
    }[];
    expect(second?.config).toEqual(first?.config);
    expect(second?.system_prompt).toBe('Be brief.');
  });

  it('raised no console error, CSP violation or request to another host', () => {
    ui.expectClean();
  });
});
