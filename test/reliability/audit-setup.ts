/**
 * Runs in every test worker before its test file (vitest `setupFiles`): points the secrets audit
 * at the run's directory and records every response body read through fetch.
 */
import { inject } from 'vitest';
import { AUDIT_DIR_ENV, installFetchRecorder } from '../support/secrets-audit.js';

declare module 'vitest' {
  export interface ProvidedContext {
    auditDir: string;
  }
}

process.env[AUDIT_DIR_ENV] = inject('auditDir');
installFetchRecorder();
