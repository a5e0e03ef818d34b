import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestGateway } from './support/gateway.js';

/**
 * GATEHOUSE_INTERNS_SHELL=on never means an unconfined shell: where bubblewrap is missing (here,
 * PATH leads to no bwrap) the gateway refuses to start and says why. The probe's answer is kept
 * for the process, so this file has a process of its own (vitest isolates files).
 */
describe('gateway start with the interns shell on', () => {
  const savedPath = process.env.PATH;
  const empty = mkdtempSync(join(tmpdir(), 'gatehouse-no-bwrap-'));
  afterAll(() => {
    process.env.PATH = savedPath;
    rmSync(empty, { recursive: true, force: true });
  });

  it('refuses to start where bwrap is missing; a node that starts no runtimes is not concerned', async () => {
    process.env.PATH = empty;
    await expect(startTestGateway('sqlite', { env: { GATEHOUSE_INTERNS_SHELL: 'on' } })).rejects.toThrow(
      /GATEHOUSE_INTERNS_SHELL=on needs the bubblewrap sandbox, and bwrap \(bubblewrap\) is not installed/,
    );
    const apiOnly = await startTestGateway('sqlite', {
      env: { GATEHOUSE_INTERNS_SHELL: 'on', GATEHOUSE_INTERNS_RUNTIMES: 'off' },
    });
    await apiOnly.stop();
  });
});
