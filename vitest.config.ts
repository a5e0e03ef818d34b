import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Two files at a time. Vitest's default on a 2-core machine is one (cores − 1), but most files
    // wait on sockets, timers and child processes; each file has its own servers, ports and
    // databases (a temp SQLite file or a PostgreSQL schema), so files never share state. Measured on
    // the 2-core CI machine: the whole suite in ~32 minutes against ~70 one file at a time.
    maxWorkers: 2,
    globalSetup: ['test/reliability/global-setup.ts'],
    setupFiles: ['test/reliability/audit-setup.ts'],
  },
});
