/**
 * The media service's web page (src/media/web.ts) in a real browser: Debian's Chromium at
 * /usr/bin/chromium, driven by playwright-core (never a downloaded browser). The service runs with
 * the built-in local generator and the filesystem store. Skipped, loudly, where Chromium is not
 * installed (CI installs it: .ci/run).
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMediaConfig } from '../src/media/config.js';
import { type MediaHandle, startMedia } from '../src/media/server.js';
import { hasChromium, launchChromium, warnIfNoChromium } from './support/chromium.js';

// The project compiles without the DOM lib: the few browser-side shapes the page callbacks use.
type Img = { complete: boolean; naturalWidth: number; naturalHeight: number; src: string };
type Select = {
  value: string;
  options: ArrayLike<{ value: string; dataset: Record<string, string | undefined> }>;
};
type Input = { type: string; value: string; tagName: string; dataset: Record<string, string | undefined> };
declare const document: {
  querySelector(selector: string): unknown;
  getElementById(id: string): { textContent: string | null } | null;
};
declare const sessionStorage: { getItem(key: string): string | null };
declare function getComputedStyle(el: unknown): { maxWidth: string };

/** Waits until the page shows a generated image, decoded (the browser could render it). */
function resultImageLoaded(page: Page, timeout: number) {
  return page.waitForFunction(
    () => {
      const i = document.querySelector('#result img') as Img | null;
      return i?.complete && i.naturalWidth > 0;
    },
    undefined,
    { timeout },
  );
}

warnIfNoChromium('media web page', 'test/media-web.test.ts');

describe.skipIf(!hasChromium)('media web page in headless Chromium', { timeout: 45_000 }, () => {
  let media: MediaHandle;
  let browser: Browser;
  let dir: string;
  let page: Page;
  const consoleErrors: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'media-web-'));
    const config = loadMediaConfig({
      MEDIA_PORT: '0',
      MEDIA_HOST: '127.0.0.1',
      GATEHOUSE_MEDIA_STORE_DIR: join(dir, 'objects'),
    });
    media = await startMedia(config, { log: false });
    browser = await launchChromium();
    page = await browser.newPage();
    // Fail with Playwright's own message (what it waited for) before vitest's test timeout.
    page.setDefaultTimeout(20_000);
    page.on('pageerror', (err) => console.error('page error:', err));
    page.on('console', (msg) => {
      if (msg.type() === 'error') consoleErrors.push(msg.text());
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await media?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function load() {
    await page.goto(`${media.url}/`);
    await page.waitForSelector('body[data-ready="true"]');
  }

  async function pickRoute(path: string) {
    const value = await page.$eval(
      '#route',
      (el, p) => Array.from((el as unknown as Select).options).find((o) => o.dataset.path === p)?.value ?? '',
      path,
    );
    expect(value, `route ${path} in the picker`).not.toBe('');
    await page.selectOption('#route', value);
  }

  it('lists the configured routes with their parameters', async () => {
    await load();
    const options = await page.$$eval('#route option', (els) => els.map((e) => e.textContent));
    expect(options).toEqual([
      't2i / model-a',
      't2i / model-b',
      'i2i / model-b',
      'i2i / model-a',
      'video / video-model',
    ]);
    await pickRoute('/api/video/video-model');
    expect(await page.$eval('#p-duration', (el) => el.tagName)).toBe('SELECT');
    expect(await page.$eval('#p-duration', (el) => (el as unknown as Select).value)).toBe('3');
    expect(await page.$eval('#p-camera_fixed', (el) => (el as unknown as Input).type)).toBe('checkbox');
    expect(await page.$eval('#p-image', (el) => (el as unknown as Input).type)).toBe('file');
    expect(await page.$eval('#status', (el) => el.textContent)).toMatch(/online/);
    // The inline style and script are allowed by their hashes in the page's Content-Security-Policy.
    expect(consoleErrors.filter((e) => /Content Security Policy/i.test(e))).toEqual([]);
    expect(await page.$eval('main', (el) => getComputedStyle(el).maxWidth)).toBe('980px');
  });

  it('generates a WebP with t2i/model-a and shows it', async () => {
    await load();
    await page.fill('#prompt', 'a red lighthouse on a cliff at dusk');
    await pickRoute('/api/t2i/model-a');
    await page.selectOption('#p-output_format', 'webp');
    await page.click('#generate');
    const img = await page.waitForSelector('#result img', { timeout: 20_000 });
    await resultImageLoaded(page, 20_000);
    const { width, height, src } = await img.evaluate((i) => ({
      width: (i as unknown as Img).naturalWidth,
      height: (i as unknown as Img).naturalHeight,
      src: (i as unknown as Img).src,
    }));
    expect([width, height]).toEqual([1024, 1024]);
    expect(new URL(src).pathname).toMatch(/^\/files\/.+\.webp$/);
    const bytes = Buffer.from(await (await fetch(src)).arrayBuffer());
    expect(bytes.subarray(0, 4).toString('latin1')).toBe('RIFF');
    expect(bytes.subarray(8, 12).toString('latin1')).toBe('WEBP');
    const meta = await sharp(bytes).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['webp', 1024, 1024]);
    expect(await page.textContent('#progress')).toMatch(/Generated 1 image/);
    expect(await page.$eval('#error', (el) => el.textContent)).toBe('');
    // The status line shows the median once there was a generation.
    await page.waitForFunction(() =>
      /median generation/.test(document.getElementById('status')?.textContent ?? ''),
    );
  });

  it('shows the validation error for an empty prompt, naming the field', async () => {
    await load();
    await pickRoute('/api/t2i/model-a');
    await page.fill('#prompt', '');
    await page.click('#generate');
    await page.waitForSelector('#error.shown');
    const error = await page.$eval('#error', (el) => ({
      text: el.textContent ?? '',
      field: (el as unknown as Input).dataset.field,
    }));
    expect(error.field).toBe('prompt');
    expect(error.text).toMatch(/prompt/i);
    expect(await page.$eval('#prompt', (el) => el.getAttribute('aria-invalid'))).toBe('true');
    expect(await page.$$('#result img')).toHaveLength(0);
  });

  it('with authentication on: refused without the token, then the video route generates a playable animation', async () => {
    const TOKEN = 'media-web-token-0123456789';
    const guarded = await startMedia(
      loadMediaConfig({
        MEDIA_PORT: '0',
        MEDIA_HOST: '127.0.0.1',
        GATEHOUSE_MEDIA_STORE_DIR: join(dir, 'guarded-objects'),
        GATEHOUSE_MEDIA_AUTH: 'token',
        GATEHOUSE_MEDIA_TOKEN: TOKEN,
      }),
      { log: false },
    );
    try {
      const tab = await browser.newPage();
      tab.setDefaultTimeout(20_000);
      await tab.goto(`${guarded.url}/`);
      await tab.waitForSelector('body[data-ready="true"]');
      const value = await tab.$eval(
        '#route',
        (el) =>
          Array.from((el as unknown as Select).options).find(
            (o) => o.dataset.path === '/api/video/video-model',
          )?.value ?? '',
      );
      await tab.selectOption('#route', value);
      await tab.fill('#prompt', 'a paper boat drifting across a pond');
      // No token: the service's 401 is shown, nothing is generated.
      await tab.click('#generate');
      await tab.waitForSelector('#error.shown');
      expect(await tab.$eval('#error', (el) => el.textContent ?? '')).toMatch(/token|auth/i);
      expect(await tab.$$('#result img, #result video')).toHaveLength(0);

      // The 401 opened the API key field.
      expect(await tab.$eval('#auth', (el) => (el as unknown as { open: boolean }).open)).toBe(true);
      await tab.fill('#apikey', TOKEN);
      const sent = tab.waitForRequest(
        (r) => r.url().endsWith('/api/video/video-model') && r.method() === 'POST',
      );
      await tab.click('#generate');
      expect((await sent).headers().authorization).toBe(`Bearer ${TOKEN}`);
      // The local generator's video is an animated WebP, shown (and played) by the browser itself.
      await resultImageLoaded(tab, 30_000);
      const src = await tab.$eval('#result img', (i) => (i as unknown as Img).src);
      expect(new URL(src).pathname).toMatch(/^\/files\/video\/.+\.webp$/);
      const res = await fetch(src);
      expect(res.headers.get('content-type')).toMatch(/^image\/webp/);
      const meta = await sharp(Buffer.from(await res.arrayBuffer()), { animated: true }).metadata();
      expect(meta.format).toBe('webp');
      expect(meta.pages ?? 1).toBeGreaterThan(1);
      expect(await tab.textContent('#progress')).toMatch(/Generated 1 video/);
      await tab.close();
    } finally {
      await guarded.close();
    }
  });

  it('with a wrong API key: shows the error, stops "Generating…" and lets the next try succeed', async () => {
    const TOKEN = 'media-web-right-token-0123';
    const guarded = await startMedia(
      loadMediaConfig({
        MEDIA_PORT: '0',
        MEDIA_HOST: '127.0.0.1',
        GATEHOUSE_MEDIA_STORE_DIR: join(dir, 'wrong-key-objects'),
        GATEHOUSE_MEDIA_AUTH: 'token',
        GATEHOUSE_MEDIA_TOKEN: TOKEN,
      }),
      { log: false },
    );
    const tab = await browser.newPage();
    try {
      tab.setDefaultTimeout(20_000);
      await tab.goto(`${guarded.url}/`);
      await tab.waitForSelector('body[data-ready="true"]');
      await tab.click('#auth summary');
      await tab.fill('#apikey', 'not-the-right-token-000');
      await tab.fill('#prompt', 'a lighthouse at dusk');
      const answered = tab.waitForResponse((r) => r.url().endsWith('/api/t2i/model-a'));
      await tab.click('#generate');
      expect((await answered).status()).toBe(401);
      await tab.waitForSelector('#error.shown');
      expect(await tab.$eval('#error', (el) => el.textContent ?? '')).toBe('Invalid token');
      // Back to a usable form: nothing spinning, the button enabled, the key field marked.
      await tab.waitForFunction(
        () => !/Generating/.test(document.getElementById('progress')?.textContent ?? ''),
      );
      expect(await tab.textContent('#progress')).toBe('');
      expect(await tab.isEnabled('#generate')).toBe(true);
      expect(await tab.$eval('#apikey', (el) => el.getAttribute('aria-invalid'))).toBe('true');
      expect(await tab.$$('#result img')).toHaveLength(0);

      await tab.fill('#apikey', TOKEN);
      await tab.click('#generate');
      await resultImageLoaded(tab, 20_000);
      expect(await tab.textContent('#progress')).toMatch(/Generated 1 image/);
      expect(await tab.$eval('#error', (el) => el.textContent)).toBe('');
    } finally {
      await tab.close();
      await guarded.close();
    }
  });

  it('uploads a file for i2i/model-b as multipart and sends the API key as a Bearer token', async () => {
    await load();
    await page.click('#auth summary');
    await page.fill('#apikey', 'test-key-123');
    expect(await page.evaluate(() => sessionStorage.getItem('gatehouse-media-api-key'))).toBe('test-key-123');
    await page.fill('#prompt', 'the same, in blue');
    await pickRoute('/api/i2i/model-b');
    const input = await sharp({
      create: { width: 64, height: 48, channels: 3, background: { r: 20, g: 80, b: 200 } },
    })
      .png()
      .toBuffer();
    await page.setInputFiles('#p-image', { name: 'input.png', mimeType: 'image/png', buffer: input });
    const sent = page.waitForRequest((r) => r.url().endsWith('/api/i2i/model-b') && r.method() === 'POST');
    await page.click('#generate');
    const request = await sent;
    expect(request.headers()['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(request.headers().authorization).toBe('Bearer test-key-123');
    await resultImageLoaded(page, 20_000);
    const size = await page.$eval('#result img', (i) => [
      (i as unknown as Img).naturalWidth,
      (i as unknown as Img).naturalHeight,
    ]);
    // 1K at the input's 4:3 aspect ratio.
    expect(Math.max(...size)).toBe(1024);
  });
});
