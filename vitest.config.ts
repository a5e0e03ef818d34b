import { defineConfig } from 'vitest/config';

// Files that kill, stop and restart processes (gateways, batch workers, coding agents, npm) or hold
// the server to short deadlines (slow-client timeouts). Beside another heavy file on a 2-core machine they missed those deadlines
// (a SIGSTOPped worker's lease taken over late: its PostgreSQL connects timed out at 5 s), so they
// run one at a time, after everything else.
const ALONE = [
  'test/agents.test.ts',
  'test/batches-crash.test.ts',
  'test/deploy.test.ts',
  'test/limits-processes.test.ts',
  'test/native-batches-bedrock-crash.test.ts',
  'test/native-batches-crash.test.ts',
  'test/provider-reload.test.ts',
  'test/usage-journal.test.ts',
  'test/workers.test.ts',
  'test/reliability/faults.test.ts',
  'test/reliability/hostile-http.test.ts',
  'test/reliability/multi-node.test.ts',
  'test/reliability/soak.test.ts',
  'src/cluster/bus.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    globalSetup: ['test/reliability/global-setup.ts'],
    setupFiles: ['test/reliability/audit-setup.ts'],
    // Each body a lane serializes from the caller's bytes is checked against JSON.stringify (a
    // parsed body changed in place would otherwise go upstream as the caller first sent it).
    env: { GATEHOUSE_VERIFY_RAW_JSON: '1' },
    projects: [
      {
        // Everything else, two files at a time: most files wait on sockets, timers and child
        // processes, and each keeps to its own servers, ports and databases (~25 minutes for the
        // suite instead of ~70 one at a time on the 2-core CI machine).
        extends: true,
        test: {
          name: 'shared',
          include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: ALONE,
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'alone',
          include: ALONE,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
