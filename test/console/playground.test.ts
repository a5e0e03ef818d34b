/**
 * The Playground page in Chromium against a real gateway on SQLite with a mock upstream: the API-key
 * gate (a management key refused, a temporary key created), a streamed answer with its provider,
 * generation id and cost (the generation then exists with that cost), multi-turn with a system
 * prompt and preferences, Stop, and a refusal shown in the banner.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { client } from '../support/http.js';
import type { MockUpstream } from '../support/mock-upstream.js';
import { startUpstreams } from '../support/upstreams.js';
import { type ConsoleUi, ensureConsoleBuilt, hasChromium, openConsole, warnIfNoChromium } from './browser.js';

warnIfNoChromium('test/console/playground.test.ts');

describe.skipIf(!hasChromium)('console: Playground', { timeout: 60_000 }, () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let ui: ConsoleUi;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway('sqlite', { env: up.env });
    ui = await openConsole(gw);
    await ui.signIn(gw.managementKey);
  }, 300_000);

  afterAll(async () => {
    await ui?.close();
    await gw?.stop();
    await mock?.close();
  });

  const answers = () => ui.page.locator('li.turn-assistant');

  it('asks for an API key: a management key is refused, a temporary key is created for 24 h', async () => {
    const { page } = ui;
    await ui.goto('/playground');
    await page.getByRole('heading', { name: 'An API key is needed here' }).waitFor();
    expect(await ui.axe()).toEqual([]);
    await page.getByLabel('API key', { exact: true }).fill(gw.managementKey);
    await page.getByRole('button', { name: 'Use this key' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toContain('This is a management key. These pages need an API key');
    const before = Date.now();
    await page.getByRole('button', { name: /Create a temporary key/ }).click();
    await page.getByRole('heading', { name: 'Conversation' }).waitFor();
    // The key exists on the gateway, named for the console, expiring about a day from now.
    const keys = await client(gw.url, gw.managementKey)('GET', '/keys');
    const made = (keys.body.data as { name: string; expires_at: string | null }[]).filter((k) =>
      k.name.startsWith('console session'),
    );
    expect(made).toHaveLength(1);
    const expires = Date.parse(made[0]?.expires_at ?? '');
    expect(expires - before).toBeGreaterThan(23.9 * 3_600_000);
    expect(expires - before).toBeLessThan(24.1 * 3_600_000);
    await expect.poll(() => page.locator('.hint code').first().textContent()).toMatch(/^sk-gh-v1-/);
  });

  it('streams an answer with its provider, generation id and cost; the generation has that cost', async () => {
    const { page } = ui;
    mock.reset();
    mock.enqueue({
      reply: { text: 'The answer is forty-two.', usage: { prompt_tokens: 1000, completion_tokens: 500 } },
      eventDelayMs: 20,
    });
    await page.getByLabel('Model', { exact: true }).selectOption('test/gpt');
    await page.getByLabel('System prompt', { exact: true }).fill('Answer briefly.');
    await page.getByLabel('Temperature', { exact: true }).fill('0.3');
    await page.getByLabel('Max tokens', { exact: true }).fill('200');
    await page.getByLabel('Message', { exact: true }).fill('What is six times seven?');
    await page.keyboard.press('Enter');
    const answer = answers().first();
    await expect.poll(() => answer.locator('.turn-text').textContent()).toBe('The answer is forty-two.');
    await expect.poll(() => answer.locator('[data-meta="total"]').textContent()).toMatch(/^\d+ ms$/);
    expect(await answer.locator('[data-meta="provider"]').textContent()).toBe('openai');
    // 1,000 prompt tokens at $1/M and 500 completion tokens at $2/M.
    expect(await answer.locator('[data-meta="cost"]').textContent()).toBe('$0.002000');
    expect(await answer.locator('[data-meta="tokens"]').textContent()).toBe('1000 in, 500 out');
    expect(await answer.locator('[data-meta="first-token"]').textContent()).toMatch(/^\d+ ms$/);
    const id = (await answer.locator('[data-meta="generation"]').textContent()) ?? '';
    expect(id).not.toBe('—');

    // What went upstream: streamed, with the system prompt and the settings.
    const sent = mock.requests.find((r) => r.format === 'openai-chat');
    expect(sent?.stream).toBe(true);
    expect(sent?.body).toMatchObject({
      temperature: 0.3,
      messages: [
        { role: 'system', content: 'Answer briefly.' },
        { role: 'user', content: 'What is six times seven?' },
      ],
    });
    // The generation is recorded with the cost the page showed.
    const key = client(gw.url, gw.apiKey);
    await expect.poll(async () => (await key('GET', `/generation?id=${id}`)).status).toBe(200);
    const gen = (await key('GET', `/generation?id=${id}`)).body.data;
    expect(gen.total_cost).toBeCloseTo(0.002, 12);
    expect(gen).toMatchObject({ id, provider_name: 'openai', tokens_prompt: 1000, tokens_completion: 500 });
    expect(await ui.axe()).toEqual([]);
  });

  it('keeps the conversation: the next question goes with the earlier turns', async () => {
    const { page } = ui;
    mock.reset();
    mock.enqueue({ reply: { text: 'Yes, 42.' } });
    await page.getByLabel('Message', { exact: true }).fill('Are you sure?');
    await page.getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => answers().nth(1).locator('.turn-text').textContent()).toBe('Yes, 42.');
    const sent = mock.requests.find((r) => r.format === 'openai-chat');
    expect(sent?.body.messages.map((m: { role: string }) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'user',
    ]);
    expect(sent?.body.messages[2].content).toBe('The answer is forty-two.');
    await ui.screenshot('playground');
  });

  it('stops an answer mid-stream', async () => {
    const { page } = ui;
    mock.reset();
    mock.enqueue({ reply: { text: 'one two three four five six seven eight' }, stallAfterEvents: 3 });
    await page.getByLabel('Message', { exact: true }).fill('Count slowly.');
    await page.getByRole('button', { name: 'Send' }).click();
    const third = answers().nth(2);
    await expect
      .poll(async () => (await third.locator('.turn-text').textContent())?.length ?? 0)
      .toBeGreaterThan(1);
    await page.getByRole('button', { name: 'Stop' }).click();
    await expect.poll(() => third.locator('[data-meta="status"]').textContent()).toBe('stopped');
    expect(await page.getByRole('button', { name: 'Send' }).isDisabled()).toBe(true); // empty box
    expect(await page.getByRole('button', { name: 'Stop' }).isDisabled()).toBe(true);
  });

  it('shows a refusal in the banner and keeps the question', async () => {
    const { page } = ui;
    await page.getByLabel('Only', { exact: true }).fill('no-such-provider');
    await page.getByLabel('Message', { exact: true }).fill('Anyone there?');
    await page.getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => page.getByRole('alert').count()).toBe(1);
    expect((await page.getByRole('alert').textContent())?.length).toBeGreaterThan(10);
    expect(await page.getByLabel('Message', { exact: true }).inputValue()).toBe('Anyone there?');
    expect(await answers().count()).toBe(3);
    await page.getByLabel('Only', { exact: true }).fill('');
    await page.getByRole('button', { name: 'Dismiss' }).click();
    await expect.poll(() => page.getByRole('alert').count()).toBe(0);
  });

  it('raised no console error, CSP violation or request to another host', () => {
    ui.expectClean();
  });
});
