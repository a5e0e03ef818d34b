/**
 * The landing page at `/`: what it links, its Content-Security-Policy, its JSON variant, the media
 * service's link when GATEHOUSE_MEDIA_PUBLIC_URL names it; and, in Debian's Chromium (skipped
 * loudly without it), that it renders under its own policy and passes axe's accessibility rules.
 */

import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launchChromium, warnIfNoChromium } from './support/chromium.js';
import { startTestGateway, type TestGateway } from './support/gateway.js';

const hrefs = (html: string) => [...html.matchAll(/<a href="([^"]+)"/g)].map((m) => m[1]);

describe('landing page', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway('sqlite');
  });
  afterAll(() => gw?.stop());

  it('serves an HTML page linking the console, the reference, the OpenAPI document and the health checks', async () => {
    const res = await fetch(`${gw.url}/`, {
      headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await res.text();
    expect(html).toMatch(/^<!doctype html>\n<html lang="en">/);
    expect(html).toContain('<title>Gatehouse</title>');
    expect(hrefs(html)).toEqual(['/console', '/docs', '/api/v1/openapi.json', '/health', '/ready']);
    // Every linked gateway page answers (the console is another part's, so not fetched here).
    for (const path of ['/docs/', '/api/v1/openapi.json', '/health', '/ready'])
      expect((await fetch(`${gw.url}${path}`)).status, path).toBe(200);
    // The media service's address is not configured: the page says where it runs instead.
    expect(html).toContain('GATEHOUSE_MEDIA_PUBLIC_URL');
    expect(html).toContain('MEDIA_PORT');
    // Public: no credential needed, and none asked for.
    expect(html).not.toMatch(/sk-gh-v1-/);
  });

  it('sends a strict Content-Security-Policy: no script, no other host, only its own style by hash', async () => {
    const res = await fetch(`${gw.url}/`);
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy') ?? '';
    const directives = Object.fromEntries(
      csp.split(';').map((d) => {
        const [name, ...values] = d.trim().split(/\s+/);
        return [name, values.join(' ')];
      }),
    );
    expect(directives).toEqual({
      'default-src': "'none'",
      'style-src': expect.stringMatching(/^'sha256-[A-Za-z0-9+/]+=*'$/),
      'img-src': 'data:',
      'base-uri': "'none'",
      'form-action': "'none'",
      'frame-ancestors': "'none'",
    });
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('vary')).toMatch(/accept/i);
    const html = await res.text();
    expect(html).not.toMatch(/<script/i);
    expect(html).not.toMatch(/https?:\/\//);
  });

  it('answers a client asking for JSON with a small index of the same links', async () => {
    const res = await fetch(`${gw.url}/`, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({
      name: 'Gatehouse',
      links: {
        console: '/console',
        api_reference: '/docs',
        openapi: '/api/v1/openapi.json',
        health: '/health',
        ready: '/ready',
        media: null,
        media_api_reference: null,
      },
    });
    // A browser's Accept (HTML first, anything after) gets the page.
    const browser = await fetch(`${gw.url}/`, { headers: { accept: 'text/html,application/json;q=0.9' } });
    expect(browser.headers.get('content-type')).toMatch(/^text\/html/);
  });

  it('links the media service and its reference when GATEHOUSE_MEDIA_PUBLIC_URL names it', async () => {
    const other = await startTestGateway('sqlite', {
      env: { GATEHOUSE_MEDIA_PUBLIC_URL: 'https://media.example.test/' },
    });
    try {
      const html = await (await fetch(`${other.url}/`)).text();
      expect(hrefs(html)).toContain('https://media.example.test/');
      expect(hrefs(html)).toContain('https://media.example.test/docs');
      expect(html).not.toContain('GATEHOUSE_MEDIA_PUBLIC_URL');
      const index = (await (
        await fetch(`${other.url}/`, { headers: { accept: 'application/json' } })
      ).json()) as {
        links: Record<string, unknown>;
      };
      expect(index.links).toMatchObject({
        media: 'https://media.example.test/',
        media_api_reference: 'https://media.example.test/docs',
      });
    } finally {
      await other.stop();
    }
  });

  it('refuses to start with a GATEHOUSE_MEDIA_PUBLIC_URL that is not an http(s) URL', async () => {
    await expect(
      startTestGateway('sqlite', { env: { GATEHOUSE_MEDIA_PUBLIC_URL: 'javascript:alert(1)' } }),
    ).rejects.toThrow('GATEHOUSE_MEDIA_PUBLIC_URL must be an http(s) URL');
  });
});

warnIfNoChromium('landing page', 'test/landing.test.ts');

// The project compiles without the DOM lib: the one browser-side global the axe run uses.
declare const axe: {
  run(): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }>;
};

describe.skipIf(!hasChromium)('landing page in headless Chromium', { timeout: 45_000 }, () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway('sqlite');
  });
  afterAll(() => gw?.stop());

  it('renders under its own policy, requests nothing else, and has no axe violations', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      page.setDefaultTimeout(20_000);
      const requested: string[] = [];
      const errors: string[] = [];
      page.on('request', (r) => requested.push(r.url()));
      page.on('console', (m) => {
        if (m.type() === 'error') errors.push(m.text());
      });
      await page.goto(`${gw.url}/`);
      expect(await page.textContent('h1')).toBe('Gatehouse');
      // The style applied: its hash is in the policy (a blocked style would leave the default margin).
      expect(await page.$eval('main', (el) => getComputedStyle(el).maxWidth)).toBe('720px');
      expect(errors).toEqual([]);
      expect(requested).toEqual([`${gw.url}/`]);

      // axe-core, evaluated from the test (the page's policy would refuse an injected script).
      const axeSource = createRequire(import.meta.url)('axe-core').source as string;
      await page.evaluate(axeSource);
      const { violations } = await page.evaluate(() => axe.run());
      expect(
        violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target).join(', ')}`),
      ).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});

declare function getComputedStyle(el: unknown): { maxWidth: string };
