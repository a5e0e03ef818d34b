import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // One file at a time. Two at a time ran the whole suite in ~25 minutes instead of ~70 on the
    // 2-core CI machine (files keep to their own servers, ports and databases), but the files that
    // kill, stop and restart gateway processes (batches-crash: a SIGSTOPped worker's lease taken
    // over) then missed their deadlines beside another heavy file — PostgreSQL connections timed
    // out at 5 s. Running those alone (a second project after the rest) is the way to two.
    maxWorkers: 1,
    globalSetup: ['test/reliability/global-setup.ts'],
    setupFiles: ['test/reliability/audit-setup.ts'],
  },
});
