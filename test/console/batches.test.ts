/**
 * The Batches page in Chromium against a real gateway on SQLite with a mock upstream: a JSONL file
 * uploaded with its progress to 100 %, run by the worker against the mock, its per-request errors
 * shown, its results downloaded; a running batch cancelled; a bad file explained.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { client } from '../support/http.js';
import type { MockUpstream } from '../support/mock-upstream.js';
import { startUpstreams } from '../support/upstreams.js';
import { type ConsoleUi, ensureConsoleBuilt, hasChromium, openConsole, warnIfNoChromium } from './browser.js';

warnIfNoChromium('test/console/batches.test.ts');

/** An OpenAI-style batch file of `n` chat requests q0…q(n-1) for test/gpt. */
const jsonl = (n: number, prefix = 'q') =>
  Array.from({ length: n }, (_, i) =>
    JSON.stringify({
      custom_id: `${prefix}${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'test/gpt', messages: [{ role: 'user', content: `question ${i}` }] },
    }),
  ).join('\n');

describe.skipIf(!hasChromium)('console: Batches', { timeout: 60_000 }, () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let ui: ConsoleUi;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway('sqlite', {
      env: { ...up.env, GATEHOUSE_BATCH_POLL_MS: '20', GATEHOUSE_BATCH_RATE_LIMIT: '0' },
    });
    ui = await openConsole(gw);
    await ui.signIn(gw.managementKey);
    await ui.goto('/batches');
    await ui.page.getByRole('textbox', { name: 'API key' }).fill(gw.apiKey);
    await ui.page.getByRole('button', { name: 'Use this key' }).click();
    await ui.page.getByRole('heading', { name: 'Submit a batch' }).waitFor();
  }, 300_000);

  afterAll(async () => {
    await ui?.close();
    await gw?.stop();
    await mock?.close();
  });

  const key = () => client(gw.url, gw.apiKey);
  const upload = async (name: string, content: string) => {
    await ui.page.getByLabel('JSONL file').setInputFiles({
      name,
      mimeType: 'application/jsonl',
      buffer: Buffer.from(content),
    });
    await ui.page.getByRole('button', { name: 'Upload and submit' }).click();
  };

  it('uploads a JSONL file with its progress to 100 %; the batch completes with its errors shown', async () => {
    const { page } = ui;
    mock.reset();
    // One request of the three is refused upstream (which one depends on the worker's order).
    mock.enqueue({ status: 400, error: { message: 'the mock refuses this one' } });
    await upload('questions.jsonl', `${jsonl(3)}\n`);
    await expect.poll(() => page.getByTestId('upload-percent').textContent()).toBe('100 %');
    await expect
      .poll(() => page.getByTestId('batch-status').textContent(), { timeout: 20_000 })
      .toBe('completed');
    const id = ((await page.locator('#batch-detail code').textContent()) ?? '').trim();
    expect(id).not.toBe('');
    const detail = page.locator('section[aria-labelledby="batch-detail"]');
    await expect.poll(() => detail.textContent()).toContain('2 completed, 1 failed of 3');
    const failed = detail.getByRole('row').filter({ hasText: 'error (' });
    expect(await failed.count()).toBe(1);
    expect(await failed.textContent()).toContain('the mock refuses this one');
    // The stored batch says the same.
    const stored = await key()('GET', `/batches/${id}`);
    expect(stored.body).toMatchObject({
      status: 'completed',
      endpoint: '/v1/chat/completions',
      model: 'test/gpt',
      request_counts: { completed: 2, failed: 1, total: 3 },
    });
    // The list shows it with its counts.
    const row = page.getByRole('row').filter({ hasText: id });
    await expect.poll(() => row.textContent()).toContain('2 / 1 / 3');
    expect(await ui.axe()).toEqual([]);
    await ui.screenshot('batches');

    // The results download as JSON Lines, one per request.
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download results (JSONL)' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`${id}_results.jsonl`);
    const lines = readFileSync(await download.path(), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { custom_id: string; response: unknown; error: unknown });
    expect(lines.map((l) => l.custom_id).sort()).toEqual(['q0', 'q1', 'q2']);
    expect(lines.filter((l) => l.error !== null)).toHaveLength(1);
  });

  it('cancels a running batch', async () => {
    const { page } = ui;
    mock.reset();
    mock.enqueue({ reply: { text: 'slow' }, delayMs: 1500, times: 4 });
    await upload('slow.jsonl', jsonl(4, 'slow'));
    await expect.poll(() => page.getByTestId('batch-status').textContent()).toMatch(/validating|in_progress/);
    const id = ((await page.locator('#batch-detail code').textContent()) ?? '').trim();
    await page.getByRole('button', { name: 'Cancel batch' }).click();
    await expect.poll(() => page.getByTestId('batch-status').textContent()).toMatch(/cancelling|cancelled/);
    await expect
      .poll(async () => (await key()('GET', `/batches/${id}`)).body.status, { timeout: 20_000 })
      .toBe('cancelled');
    await expect
      .poll(() => page.getByTestId('batch-status').textContent(), { timeout: 20_000 })
      .toBe('cancelled');
    expect(await page.getByRole('button', { name: 'Cancel batch' }).count()).toBe(0);
  });

  it('explains a file that is not JSON Lines, and a batch the gateway refuses', async () => {
    const { page } = ui;
    await page.getByRole('button', { name: 'Close' }).click();
    await upload('broken.jsonl', `${jsonl(1)}\nnot json at all\n`);
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toContain('Line 2 of the file is not valid JSON.');
    await page.getByRole('button', { name: 'Dismiss' }).click();
    await upload('unknown-model.jsonl', jsonl(1).replace('test/gpt', 'no/such-model'));
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/no\/such-model|model/i);
    // Nothing was created: still the two batches.
    expect((await key()('GET', '/batches')).body.total_count).toBe(2);
  });

  it('asks for another API key when the upload is refused because the key was disabled', async () => {
    const { page } = ui;
    const mgmt = client(gw.url, gw.managementKey);
    const self = (await key()('GET', '/key')).body.data as { label: string };
    const listed = (await mgmt('GET', '/keys')).body.data as { hash: string; label: string }[];
    const hash = listed.find((k) => k.label === self.label)?.hash;
    expect(hash).toBeDefined();
    expect((await mgmt('PATCH', `/keys/${hash}`, { disabled: true })).status).toBe(200);
    await upload('late.jsonl', jsonl(1));
    await page.getByRole('heading', { name: 'An API key is needed here' }).waitFor();
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toContain('The API key is no longer accepted');
    // Only the API key was dropped: still signed in.
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(1);
  });

  it('raised no console error, CSP violation or request to another host', () => {
    ui.expectClean();
  });
});
