/**
 * The Files page in Chromium against a real gateway on SQLite: with a pasted API key, a file is
 * uploaded with its purpose, listed with its id and size (the same file the API lists), and deleted.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { client } from '../support/http.js';
import { type ConsoleUi, ensureConsoleBuilt, hasChromium, openConsole, warnIfNoChromium } from './browser.js';

warnIfNoChromium('test/console/files.test.ts');

describe.skipIf(!hasChromium)('console: Files', { timeout: 60_000 }, () => {
  let gw: TestGateway;
  let ui: ConsoleUi;
  let dir: string;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    dir = await mkdtemp(join(tmpdir(), 'console-files-'));
    gw = await startTestGateway('sqlite');
    ui = await openConsole(gw);
    await ui.signIn(gw.managementKey);
  }, 300_000);

  afterAll(async () => {
    await ui?.close();
    await gw?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const listed = async () =>
    (await client(gw.url, gw.apiKey)('GET', '/files')).body.data as {
      id: string;
      filename: string;
      purpose: string;
    }[];

  it('uploads a file with its purpose, lists it with its id, and deletes it', async () => {
    const { page } = ui;
    await ui.goto('/files');
    await page.getByRole('textbox', { name: 'API key' }).fill(gw.apiKey);
    await page.getByRole('button', { name: 'Use this key' }).click();
    await page.getByRole('heading', { name: 'Upload a file' }).waitFor();

    const path = join(dir, 'report.pdf');
    await writeFile(path, '%PDF-1.4 quarterly report');
    const form = page.getByRole('form', { name: 'Upload a file' });
    await form.getByLabel('File').setInputFiles(path);
    await form.getByLabel('Purpose').selectOption('vision');
    await form.getByRole('button', { name: 'Upload' }).click();
    const uploaded = page.getByTestId('uploaded-id');
    await expect.poll(() => uploaded.textContent()).toMatch(/^file-[0-9a-f]{24}$/);
    const id = (await uploaded.textContent()) as string;
    expect(await listed()).toEqual([
      expect.objectContaining({ id, filename: 'report.pdf', purpose: 'vision' }),
    ]);

    const table = page.getByRole('table', { name: 'Uploaded files, newest first' });
    await expect.poll(() => table.textContent()).toContain(id);
    expect(await table.textContent()).toContain('25 B');
    expect(await ui.axe()).toEqual([]);

    await page.getByRole('button', { name: 'Delete report.pdf' }).click();
    await page.getByRole('button', { name: 'Delete “report.pdf”' }).click();
    await expect.poll(async () => (await listed()).length).toBe(0);
    await expect.poll(() => table.textContent()).not.toContain(id);
    ui.expectClean();
  });
});
