/**
 * Debian's Chromium for the browser tests (/usr/bin/chromium, driven by playwright-core; never a
 * downloaded browser): whether it is there, a loud warning when a file is skipped without it, and
 * one way to launch it headless with nothing reaching the network on its own.
 */
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);

/** Call at the top of a browser test file: says loudly that `what` is skipped without Chromium. */
export function warnIfNoChromium(what: string, file: string): void {
  if (!hasChromium)
    console.warn(
      `\n⚠️  ${CHROMIUM} not found: SKIPPING the ${what} browser test (${file}).\n` +
        "   Install Debian's chromium (apt-get install -y --no-install-recommends chromium) to run it; CI does.\n",
    );
}

/** Headless Chromium without background networking, component updates, sync or QUIC. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
