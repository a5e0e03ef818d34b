/**
 * Every console page by keyboard, in Chromium against a real gateway on SQLite with data in it (calls
 * through a mock upstream, credits, a guardrail, a provider key, a vault secret, a preset, a user): for each
 * page of the registry (console/src/pages/index.ts), in the management and the operator session,
 * Tab is pressed until the focus comes round again, and
 * - every interactive element was reached: links, buttons, fields, summaries, [tabindex], and
 *   anything with a click handler or a pointer cursor (a clickable table row that Tab skips fails);
 * - each one shows where the focus is (its outline or box-shadow changes under :focus-visible);
 * - an open dialog closes with Escape;
 * - axe-core finds no serious or critical violation.
 * And the key actions: Enter submits a form, Enter on a call's "Details" opens it with the focus in
 * it, Escape closes it and gives the focus back; a chart's lines toggle from the keyboard; a
 * Delete swapped for its confirmation (and back) keeps the focus in the row.
 *
 * The pages come from the registry, not from a list here: a page added later is swept too.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../support/gateway.js';
import { adminClient, client } from '../support/http.js';
import { startUpstreams } from '../support/upstreams.js';
import {
  type ConsoleUi,
  ensureConsoleBuilt,
  hasChromium,
  openConsole,
  ROOT,
  warnIfNoChromium,
} from './browser.js';

warnIfNoChromium('test/console/keyboard.test.ts');

interface RegistryPage {
  path: string;
  access: 'management' | 'operator' | 'any';
}

/** The page registry's entries, read from its source (the console is not importable from here). */
function registry(): RegistryPage[] {
  const source = readFileSync(join(ROOT, 'console/src/pages/index.ts'), 'utf8');
  const entries = [...source.matchAll(/\{\s*path:\s*'([^']+)'[^}]*?access:\s*'(\w+)'\s*\}/g)];
  return entries.map((m) => ({ path: m[1] as string, access: m[2] as RegistryPage['access'] }));
}

/**
 * In the page: the interactive elements now shown, and a recorder of what each Tab focuses (its
 * outline and box-shadow at that moment). Plain JavaScript: it runs in the browser.
 */
const INSTALL = `(() => {
  const NATIVE = 'a[href], area[href], button, input:not([type=hidden]), select, textarea, summary, iframe, [tabindex], [contenteditable=""], [contenteditable=true], [role=button], [role=link], [role=tab], [role=checkbox], [role=switch], [role=menuitem], [role=option], [onclick]';
  const shown = (el) =>
    el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden' && !el.closest('[inert]');
  // React attaches handlers to the root, not the element: its props on the element tell.
  const handles = (el) => {
    const key = Object.keys(el).find((k) => k.startsWith('__reactProps$'));
    const p = key ? el[key] : null;
    return Boolean(p && (p.onClick || p.onMouseDown || p.onMouseUp || p.onPointerDown || p.onDoubleClick));
  };
  // A pointer cursor that starts here (not inherited from a link or button around it).
  const pointer = (el) =>
    getComputedStyle(el).cursor === 'pointer' &&
    !(el.parentElement && getComputedStyle(el.parentElement).cursor === 'pointer');
  const items = [];
  for (const el of document.body.querySelectorAll('*')) {
    if (!shown(el) || el.matches(':disabled')) continue;
    const tabindex = el.getAttribute('tabindex');
    const clickable = handles(el) || pointer(el);
    // tabindex="-1" without a click handler: a target of programmatic focus (a heading), not a control.
    if (tabindex !== null && Number(tabindex) < 0 && !clickable) continue;
    if (el.matches('label') && !handles(el)) continue; // a label's click goes to its field
    if (el.matches(NATIVE) || clickable) items.push(el);
  }
  const describe = (el) => {
    const name = el.getAttribute('aria-label') || el.getAttribute('name') || (el.labels && el.labels[0] && el.labels[0].textContent) || el.textContent || el.getAttribute('placeholder') || '';
    const cls = typeof el.className === 'string' && el.className ? '.' + el.className.trim().split(/\\s+/).join('.') : '';
    return el.tagName.toLowerCase() + cls + ' "' + name.trim().replace(/\\s+/g, ' ').slice(0, 60) + '"';
  };
  const look = (el) => {
    const s = getComputedStyle(el);
    return [s.outlineStyle, s.outlineWidth, s.outlineColor, s.boxShadow].join(' | ');
  };
  const kb = { items, seen: [], focusLook: new Map(), offscreen: new Set(), describe, look };
  document.addEventListener('focusin', (e) => {
    const el = e.target;
    kb.seen.push(el);
    kb.focusLook.set(el, look(el));
    const r = el.getBoundingClientRect();
    if (r.right <= 0 || r.left >= innerWidth || r.width === 0) kb.offscreen.add(el);
  });
  window.__kb = kb;
  return items.length;
})()`;

/** After the walk: what was never reached, and what was reached without a visible focus. */
const REPORT = `(() => {
  const kb = window.__kb;
  document.activeElement && document.activeElement.blur();
  const seen = new Set(kb.seen);
  const reachedRadio = new Set(kb.seen.filter((el) => el.type === 'radio').map((el) => el.name));
  const unreached = kb.items
    .filter((el) => el.isConnected && !seen.has(el))
    .filter((el) => !(el.type === 'radio' && reachedRadio.has(el.name))) // Tab enters a group once
    .map(kb.describe);
  const noIndicator = [...seen]
    .filter((el) => el !== document.body && el.isConnected)
    .filter((el) => kb.focusLook.get(el) === kb.look(el) || kb.focusLook.get(el).startsWith('none'))
    .map(kb.describe);
  const offscreen = [...kb.offscreen].filter((el) => el.isConnected).map(kb.describe);
  return { unreached, noIndicator, offscreen, items: kb.items.length, stops: seen.size };
})()`;

/** Presses Tab until the focus comes back to the first element it reached (or gives up). */
async function tabRound(page: Page, limit: number): Promise<boolean> {
  for (let i = 0; i < limit; i++) {
    await page.keyboard.press('Tab');
    const back = await page.evaluate(
      '(() => { const s = window.__kb.seen; return s.length > 1 && s.indexOf(s[s.length - 1]) < s.length - 1; })()',
    );
    if (back) return true;
  }
  return false;
}

/** Waits for the page's data: no "Loading…" left in the main content. */
async function settled(page: Page) {
  // Polled from here: the console's CSP forbids the string evaluation waitForFunction would need.
  await expect
    .poll(() => page.evaluate('document.querySelector("main").textContent.includes("Loading…")'))
    .toBe(false);
}

describe.skipIf(!hasChromium)('console: every page by keyboard', { timeout: 300_000 }, () => {
  let gw: TestGateway;
  let ui: ConsoleUi;
  const pages = registry();

  beforeAll(async () => {
    await ensureConsoleBuilt();
    const up = await startUpstreams();
    gw = await startTestGateway('sqlite', { env: up.env });
    const admin = adminClient(gw.url);
    const mgmt = client(gw.url, gw.managementKey);
    const apiCall = client(gw.url, gw.apiKey);
    // Something on every page: credits and calls (Overview, Activity, Credits), a guardrail, a
    // provider key, a vault secret, a preset, a second workspace, a user (operator pages).
    expect(
      (await admin('POST', '/admin/credits', { organization_id: gw.organizationId, amount_usd: 10 })).status,
    ).toBe(201);
    for (const text of ['first', 'second']) {
      const r = await apiCall('POST', '/chat/completions', {
        model: 'test/gpt',
        messages: [{ role: 'user', content: text }],
      });
      expect(r.status, r.text).toBe(200);
    }
    expect((await mgmt('POST', '/guardrails', { name: 'kb guardrail' })).status).toBe(201);
    expect((await mgmt('POST', '/byok', { provider: 'together', key: `tg-${'k'.repeat(40)}` })).status).toBe(
      201,
    );
    expect((await mgmt('POST', '/workspaces', { name: 'Research', slug: 'research' })).status).toBe(201);
    const user = await admin('POST', '/admin/users', {
      email: 'kb@example.com',
      organization_id: gw.organizationId,
      role: 'member',
      interns_programme: true,
    });
    expect(user.status, user.text).toBe(201);
    const secret = await apiCall('PUT', '/vault/secrets/kb_token', {
      value: `v-${'s'.repeat(30)}`,
      hosts: ['api.example.com'],
    });
    expect(secret.status, secret.text).toBeLessThan(300);
    const preset = await apiCall('POST', '/presets/kb-preset/chat/completions', { model: 'test/gpt' });
    expect(preset.status, preset.text).toBe(200);
    // Generations are written a moment after the calls.
    await vi.waitFor(async () => expect((await mgmt('GET', '/generations')).body.data?.length).toBe(2), {
      timeout: 15_000,
    });
    ui = await openConsole(gw);
  }, 300_000);

  afterAll(async () => {
    await ui?.close();
    await gw?.stop();
  });

  /** Tabs through every registry page `role` may open; returns what failed, page by page. */
  async function sweep(role: 'management' | 'operator'): Promise<Record<string, unknown>> {
    const { page } = ui;
    const mine = pages.filter((p) => p.access === 'any' || p.access === role);
    const nav = await page
      .locator('nav[aria-label="Console"] a')
      .evaluateAll((as) => as.map((a) => (a.getAttribute('href') ?? '').replace(/^\/console/, '')));
    expect(nav, 'the navigation lists the registry').toEqual(mine.map((p) => p.path));
    const failures: Record<string, unknown> = {};
    for (const p of mine) {
      await ui.goto(p.path);
      await settled(page);
      const count = (await page.evaluate(INSTALL)) as number;
      expect(count, `${p.path}: interactive elements found`).toBeGreaterThan(3);
      const cycled = await tabRound(page, count * 2 + 20);
      const report = (await page.evaluate(REPORT)) as {
        unreached: string[];
        noIndicator: string[];
        offscreen: string[];
      };
      // A dialog left open closes with Escape.
      const dialogs = 'document.querySelectorAll("dialog[open], [role=dialog], [role=alertdialog]").length';
      let dialogStaysOpen = false;
      if (((await page.evaluate(dialogs)) as number) > 0) {
        await page.keyboard.press('Escape');
        dialogStaysOpen = ((await page.evaluate(dialogs)) as number) > 0;
      }
      // And axe-core on the page as the sweep found it (with data in its tables).
      const axe = (await ui.axe()).map(
        (v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
      );
      const problems = {
        ...(axe.length ? { axe } : {}),
        ...(cycled ? {} : { focusNeverCameBack: true }),
        ...(report.unreached.length ? { unreached: report.unreached } : {}),
        ...(report.noIndicator.length ? { noFocusIndicator: report.noIndicator } : {}),
        ...(report.offscreen.length ? { focusedOffscreen: report.offscreen } : {}),
        ...(dialogStaysOpen ? { dialogIgnoresEscape: true } : {}),
      };
      if (Object.keys(problems).length) failures[p.path] = problems;
    }
    return failures;
  }

  it('Enter submits a form: the API key a page asks for, typed and entered', async () => {
    const { page } = ui;
    await ui.signIn(gw.managementKey);
    await ui.goto('/playground');
    await page.getByLabel('API key', { exact: true }).focus();
    await page.keyboard.type(gw.apiKey);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Use another' }).waitFor();
    expect(await page.getByLabel('API key', { exact: true }).count()).toBe(0);
  });

  it('management session: every page reached by Tab, each focus visible, axe clean', async () => {
    expect(await sweep('management')).toEqual({});
    ui.expectClean();
  });

  it('Activity: Enter on a call’s Details opens it with the focus in it, Escape closes it and gives the focus back', async () => {
    const { page } = ui;
    await ui.goto('/activity');
    await settled(page);
    const details = page.getByRole('button', { name: /^Details of / }).first();
    await details.focus();
    await page.keyboard.press('Enter');
    const detail = page.getByRole('region', { name: /^Generation / });
    await detail.waitFor();
    expect(await details.getAttribute('aria-expanded')).toBe('true');
    expect(await page.evaluate('document.activeElement.id')).toBe('generation-detail');
    await page.keyboard.press('Tab'); // into the detail: Escape still closes it from there
    await page.keyboard.press('Escape');
    await detail.waitFor({ state: 'detached' });
    expect(await details.getAttribute('aria-expanded')).toBe('false');
    expect(await page.evaluate('document.activeElement.getAttribute("aria-label")')).toBe(
      await details.getAttribute('aria-label'),
    );
    // And the same with the "Close details" button, by keyboard.
    await page.keyboard.press('Enter');
    await detail.waitFor();
    await page.getByRole('button', { name: 'Close details' }).focus();
    await page.keyboard.press('Enter');
    await detail.waitFor({ state: 'detached' });
    expect(await page.evaluate('document.activeElement.getAttribute("aria-label")')).toBe(
      await details.getAttribute('aria-label'),
    );
  });

  it('Overview: a chart’s lines are shown and hidden from the keyboard, and each chart is told in words', async () => {
    const { page } = ui;
    await ui.goto('/overview');
    await settled(page);
    const toggle = page.locator('.u-legend th[role="button"]').first();
    await toggle.focus();
    expect(await toggle.getAttribute('aria-pressed')).toBe('true');
    await page.keyboard.press('Enter');
    expect(await toggle.getAttribute('aria-pressed')).toBe('false');
    expect(await toggle.evaluate((th) => th.closest('tr')?.classList.contains('u-off'))).toBe(true);
    await page.keyboard.press(' ');
    expect(await toggle.getAttribute('aria-pressed')).toBe('true');
    // The text alternative: the chart's description names the period and the lines' values.
    const charts = page.getByRole('img', { name: /over time$/ });
    expect(await charts.count()).toBeGreaterThan(0);
    for (const chart of await charts.all()) {
      const words = await page
        .locator(`[id="${await chart.getAttribute('aria-describedby')}"]`)
        .textContent();
      expect(words).toMatch(/ to .*: highest .*, latest /);
    }
  });

  it('Guardrails: Delete by keyboard puts the focus on its confirmation, and Keep it back on the row', async () => {
    const { page } = ui;
    const active = () =>
      page.evaluate(
        'document.activeElement.getAttribute("aria-label") ?? document.activeElement.textContent',
      );
    await ui.goto('/guardrails');
    await settled(page);
    await page.getByRole('button', { name: 'Delete kb guardrail' }).focus();
    await page.keyboard.press('Enter');
    await expect.poll(active).toBe('Keep it');
    await page.keyboard.press('Shift+Tab'); // the confirmation, just before
    expect(await active()).toBe('Delete “kb guardrail” and its assignments');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter'); // Keep it
    // Still in the row (on whichever of its buttons React kept in place), not back at the top.
    await expect.poll(active).toMatch(/ kb guardrail$/);
    expect(await page.evaluate('document.activeElement.closest("tr")?.textContent')).toContain(
      'kb guardrail',
    );
    const kept = await client(gw.url, gw.managementKey)('GET', '/guardrails');
    expect(kept.body.data.map((g: { name: string }) => g.name)).toContain('kb guardrail');
  });

  it('operator session: every page reached by Tab, each focus visible, axe clean', async () => {
    await ui.signOut();
    await ui.signIn(ADMIN_TOKEN);
    expect(await sweep('operator')).toEqual({});
    ui.expectClean();
  });

  it('reads every entry of the registry (none escapes the sweep by its formatting)', () => {
    const source = readFileSync(join(ROOT, 'console/src/pages/index.ts'), 'utf8');
    expect(pages.length).toBe(source.match(/\bcomponent:\s*[A-Z]\w*\s*,/g)?.length);
    expect(pages.length).toBeGreaterThanOrEqual(16);
  });
});
