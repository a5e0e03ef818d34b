/**
 * The console's Interns page in Chromium against a real gateway on SQLite, with real runtimes (the
 * local provisioner) and the built-in dev model scripted by `gatehouse:{"steps":[…]}` directives:
 * create and start an intern, chat with it through a question and a permission pause, stop and
 * delete it — checking what the page shows and what the gateway stored.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { client } from '../support/http.js';
import { type ConsoleUi, ensureConsoleBuilt, hasChromium, openConsole, warnIfNoChromium } from './browser.js';

warnIfNoChromium('test/console/interns.test.ts');

const directive = (d: unknown) => `gatehouse:${JSON.stringify(d)}`;

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

describe.skipIf(!hasChromium)('console: Interns page', { timeout: 90_000 }, () => {
  let gw: TestGateway;
  let ui: ConsoleUi;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    gw = await startTestGateway('sqlite', {
      env: { GATEHOUSE_INTERNS_PER_MEMBER: '50', GATEHOUSE_INTERNS_INTERACTION_TIMEOUT_MS: '60000' },
    });
    api = client(gw.url, gw.apiKey);
    ui = await openConsole(gw);
  }, 300_000);

  afterAll(async () => {
    await ui?.close();
    await gw?.stop();
  });

  const internRow = (name: string) => ui.page.getByRole('row').filter({ hasText: name });
  const interns = async () =>
    ((await api('GET', '/interns')).body as { data: { id: string; name: string; status: string }[] }).data;

  it('asks for an API key, then creates and starts an intern; a bad name is refused with a message', async () => {
    const { page } = ui;
    await ui.signIn(gw.managementKey);
    await ui.goto('/interns');
    // A management key may not call interns: the page asks for an API key first.
    await page.getByRole('heading', { name: 'An API key is needed here' }).waitFor();
    await page.getByLabel('API key', { exact: true }).fill(gw.apiKey);
    await page.getByRole('button', { name: 'Use this key' }).click();
    await page.getByRole('heading', { name: 'Create an intern' }).waitFor();

    await page.getByLabel('Name', { exact: true }).fill('Not A Name');
    await page.getByRole('button', { name: 'Create intern' }).click();
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('Invalid request');
    expect(await interns()).toEqual([]);
    await page.getByRole('button', { name: 'Dismiss' }).click();

    await page.getByLabel('Name', { exact: true }).fill('helper');
    await page.getByLabel('Description').fill('answers questions');
    await page.getByLabel('Instructions').fill('Be brief.');
    await page.getByRole('button', { name: 'Create intern' }).click();
    await expect.poll(() => internRow('helper').textContent(), { timeout: 30_000 }).toContain('running');
    const [stored] = await interns();
    expect(stored).toMatchObject({ name: 'helper', status: 'running' });
    expect(await ui.axe()).toEqual([]);
    await ui.screenshot('interns');
  });

  it('chats: the reply streams, a question pauses the chat, the answer continues it', async () => {
    const { page } = ui;
    await page.getByRole('button', { name: 'Chat with helper' }).click();
    const message = page.getByLabel('Message');
    await message.fill(
      directive({
        steps: [
          { tool_calls: [{ name: 'ask_user', arguments: { message: 'Which city?' } }] },
          { text: 'noted' },
        ],
      }),
    );
    await page.getByRole('button', { name: 'Send' }).click();
    // The pause: the question is shown with an input to answer it, which has the keyboard.
    const answer = page.getByLabel('Which city?');
    await answer.waitFor();
    await expect.poll(async () => (await ui.focused()).name).toBe('answer');
    expect(await ui.axe()).toEqual([]);
    await ui.screenshot('interns-chat-question');
    await page.keyboard.type('Paris');
    await page.keyboard.press('Enter');
    const log = page.getByRole('log');
    // The intern's reply (the directive in the user's message holds the same words).
    await expect.poll(() => log.locator('.turn-intern').last().textContent()).toContain('noted');
    expect(await log.textContent()).toContain('Your answerParis');
    expect(await page.getByLabel('Which city?').count()).toBe(0);
    // The calls were the API key's: the gateway recorded its generations.
    await gw.services.accountant.flush();
    const generations = await gw.services.db
      .selectFrom('generations')
      .select('model')
      .where('model', 'like', 'gatehouse/%')
      .execute();
    expect(generations.length).toBeGreaterThanOrEqual(2);
  });

  it('asks permission before a tool in manual mode: allowing it runs the tool', async () => {
    const { page } = ui;
    const [intern] = await interns();
    const workdir = join(gw.services.config.interns.runtimeDir, intern!.id);
    await page.getByLabel('Tools').selectOption('manual');
    await page.getByLabel('Message').fill(
      directive({
        steps: [
          {
            tool_calls: [
              { name: 'write_file', arguments: { path: 'note.txt', content: 'from the console' } },
            ],
          },
          { text: 'finished' },
        ],
      }),
    );
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('heading', { name: 'The intern asks permission' }).waitFor();
    expect(await page.locator('.pause').textContent()).toContain('write_file');
    expect(filesUnder(workdir).some((p) => p.endsWith('/note.txt'))).toBe(false);
    await ui.screenshot('interns-chat-permission');
    await page.getByRole('button', { name: 'Allow once' }).click();
    await expect
      .poll(() => page.getByRole('log').locator('.turn-intern').last().textContent())
      .toContain('finished');
    expect(filesUnder(workdir).some((p) => p.endsWith('/note.txt'))).toBe(true);
  });

  it('stops and deletes the intern', async () => {
    const { page } = ui;
    await page.getByRole('button', { name: 'Stop helper' }).click();
    await expect.poll(() => internRow('helper').textContent()).toContain('stopped');
    expect((await interns())[0]?.status).toBe('stopped');
    // The chat closes with the runtime.
    expect(await page.getByRole('log').count()).toBe(0);
    await page.getByRole('button', { name: 'Delete helper' }).click();
    await page.getByRole('button', { name: 'Delete “helper” for good' }).click();
    await expect.poll(async () => (await interns()).length, { timeout: 30_000 }).toBe(0);
    await expect.poll(() => internRow('helper').count(), { timeout: 30_000 }).toBe(0);
  });

  it('raised no console error, CSP violation or request to another host', () => {
    ui.expectClean();
  });
});
