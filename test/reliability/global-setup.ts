/**
 * Vitest global setup for the reliability suite. Before the run: a directory for the secrets audit
 * (test/support/secrets-audit.ts), given to every worker. After it: the audit's scan — a secret in
 * any recorded response or log line fails the run — and reliability/results.md composed from the
 * figures every area wrote.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { scanAudit } from '../support/secrets-audit.js';
import { writeFigures, writeResults } from './figures.js';

export default function setup(project: TestProject) {
  // Vitest runs this again for each project that extends the root config; the root's run serves
  // them all (what it provides reaches every project), so the audit covers the whole suite once.
  if (project.name !== '') return;
  const auditDir = mkdtempSync(join(tmpdir(), 'gatehouse-audit-'));
  project.provide('auditDir', auditDir);
  return function teardown() {
    const report = scanAudit(auditDir);
    const leaks = report.leaks.length;
    // A run of a few files says little about the whole suite: figures only from a broad run (the
    // soak alone reads many responses; its script sets RELIABILITY_SUITE_FIGURES=0).
    if (report.responses > 1000 && process.env.RELIABILITY_SUITE_FIGURES !== '0') {
      writeFigures({
        area: 'secrets',
        title:
          'Every response body read and every log line written during the whole test suite, scanned for every secret the suite created',
        rows: [
          ['API keys created (recognised by shape anywhere)', report.secrets['api-key']],
          ['BYOK keys sent', report.secrets['byok-key']],
          ['operator provider keys configured', report.secrets['provider-key']],
          ['vault values stored', report.secrets['vault-value']],
          ['master keys configured (hex and base64)', report.secrets['master-key']],
          ['webhook signing secrets made', report.secrets['webhook-secret']],
          ['response bodies scanned', report.responses],
          ['response bytes scanned', report.responseBytes],
          ['log lines scanned', report.logLines],
          ['secrets found in a response or log line', leaks],
        ],
        notes: [
          'The one answer allowed to carry an API key is the one that creates it (POST …/keys), and a webhook signing secret the one that makes it (POST …/webhook-secret, POST /observability/destinations); they are not scanned.',
          'Gateways started in-process log at info level into the audit; spawned processes log at their own level (worker: info, serve: warn).',
        ],
      });
    }
    writeResults();
    rmSync(auditDir, { recursive: true, force: true });
    if (leaks > 0) {
      process.exitCode = 1;
      const list = report.leaks.slice(0, 20).map((l) => `  ${l.kind} ${l.hint} in ${l.where}`);
      throw new Error(`Secrets audit: ${leaks} secret(s) found in responses or logs:\n${list.join('\n')}`);
    }
  };
}
