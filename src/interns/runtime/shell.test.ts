import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RUNTIME_CONFIG_FILE, SESSIONS_DIR } from './config.js';
import { assertShellSandbox, SANDBOX_WORKDIR, sandboxProblem } from './sandbox.js';
import { runShell } from './shell.js';

/**
 * The interns shell in its bubblewrap sandbox, for real. This process stands for the gateway: it
 * holds an operator's provider key in its environment, and a data directory with a database and a
 * master key next to the interns' directories. Skipped, loudly, where bwrap cannot run.
 */
const problem = sandboxProblem();
if (problem)
  console.warn(
    `\n⚠️  ${problem}: SKIPPING the interns shell sandbox tests (src/interns/runtime/shell.test.ts). Install bubblewrap to run them.\n`,
  );

const OPERATOR_KEY = 'sk-operator-openai-key-that-must-not-leak';
const MASTER = 'master-key-material-that-must-not-leak';
const data = mkdtempSync(join(tmpdir(), 'gatehouse-sandbox-'));
const workdir = join(data, 'interns', 'intern-1');
mkdirSync(join(workdir, SESSIONS_DIR), { recursive: true, mode: 0o700 });
writeFileSync(join(workdir, SESSIONS_DIR, 's1.json'), '{"transcript":"another user said hello"}');
writeFileSync(join(workdir, RUNTIME_CONFIG_FILE), '{"intern_id":"intern-1"}');
writeFileSync(join(data, 'master.key'), MASTER);
writeFileSync(join(data, 'gatehouse.db'), 'SQLite format 3\0tenant rows');
mkdirSync(join(data, 'interns', 'intern-2'), { recursive: true });
writeFileSync(join(data, 'interns', 'intern-2', 'notes.txt'), 'the other intern');

afterAll(() => {
  delete process.env.OPENAI_API_KEY;
  rmSync(data, { recursive: true, force: true });
});

async function sh(command: string) {
  process.env.OPENAI_API_KEY = OPERATOR_KEY; // the "gateway's" environment
  const r = await runShell(command, {
    sandbox: { workdir, hiddenDirs: [SESSIONS_DIR], hiddenFiles: [RUNTIME_CONFIG_FILE] },
    env: { PATH: '/usr/bin:/bin', HOME: SANDBOX_WORKDIR, LANG: 'C.UTF-8' },
    timeoutMs: 10_000,
    capBytes: 64 * 1024,
    signal: new AbortController().signal,
  });
  expect(r.output).not.toContain(OPERATOR_KEY);
  expect(r.output).not.toContain(MASTER);
  return r;
}

describe.skipIf(problem !== null)('interns shell sandbox', () => {
  it('runs ordinary commands in the intern’s directory, which it can write', async () => {
    const r = await sh(
      'pwd; echo made-here > note.txt; cat note.txt; mkdir -p sub && echo x > sub/y; ls; id -u',
    );
    expect(r.code).toBe(0);
    expect(r.output).toContain(`${SANDBOX_WORKDIR}\n`);
    expect(r.output).toContain('made-here');
    expect(r.output).toMatch(/\n65534\n?$/);
    expect(readFileSync(join(workdir, 'note.txt'), 'utf8')).toBe('made-here\n');
    expect(existsSync(join(workdir, 'sub', 'y'))).toBe(true);
  });

  it('does not see the gateway’s processes or environment', async () => {
    const environ = await sh(`cat /proc/${process.pid}/environ; cat /proc/${process.ppid}/environ`);
    expect(environ.code).not.toBe(0);
    expect(environ.output).toMatch(/No such file/);
    // The sandbox's own processes (bwrap as PID 1 included) carry nothing of the gateway's.
    const all = await sh('cat /proc/[0-9]*/environ | tr "\\0" "\\n"; echo; ls /proc | grep -c "^[0-9]"');
    expect(all.output).not.toContain('OPENAI_API_KEY');
    const env = await sh('env');
    expect(env.code).toBe(0);
    expect(env.output).not.toContain('OPENAI_API_KEY');
    expect(env.output).not.toContain('GATEHOUSE_');
    expect(env.output).toContain(`HOME=${SANDBOX_WORKDIR}`);
  });

  it('cannot read the data directory (database, master key), other interns or its own sessions', async () => {
    for (const command of [
      `cat ${join(data, 'master.key')}`,
      `cat ${join(data, 'gatehouse.db')}`,
      `ls ${data}`,
      'cat ../master.key ../../master.key',
      `cat ${join(data, 'interns', 'intern-2', 'notes.txt')}`,
      'ls ../intern-2',
    ]) {
      const r = await sh(command);
      expect(r.code, command).not.toBe(0);
      expect(r.output).not.toContain('tenant rows');
      expect(r.output).not.toContain('the other intern');
    }
    const sessions = await sh(
      `ls -A ${SESSIONS_DIR}; cat ${SESSIONS_DIR}/s1.json; cat ${RUNTIME_CONFIG_FILE}`,
    );
    expect(sessions.output).not.toContain('another user said hello');
    expect(sessions.output).not.toContain('intern_id');
  });

  it('cannot write outside the intern’s directory (nor tamper with its sessions)', async () => {
    const outside = join(data, 'escaped');
    const r = await sh(
      [
        `echo x > ${outside}`,
        `echo x > ${join(data, 'master.key')}`,
        'echo x > /usr/pwned',
        'echo x > /pwned',
        'echo x > ../pwned',
        `echo '{}' > ${SESSIONS_DIR}/s1.json`,
        'echo tmp-ok > /tmp/t && cat /tmp/t',
      ].join('; '),
    );
    expect(r.output).toContain('tmp-ok'); // a private /tmp works
    expect(existsSync(outside)).toBe(false);
    expect(readFileSync(join(data, 'master.key'), 'utf8')).toBe(MASTER);
    expect(existsSync('/usr/pwned')).toBe(false);
    expect(existsSync('/pwned')).toBe(false);
    expect(existsSync(join(data, 'interns', 'pwned'))).toBe(false);
    expect(readFileSync(join(workdir, SESSIONS_DIR, 's1.json'), 'utf8')).toContain('another user said hello');
    // /tmp is the sandbox's own: nothing landed in the host's.
    expect(existsSync('/tmp/t')).toBe(false);
  });

  it('has no network', async () => {
    const r = await sh('cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d " "');
    expect(r.output.trim().split('\n')).toEqual(['lo']);
  });
});

describe('interns shell sandbox probe', () => {
  it('names the problem when bubblewrap is missing or cannot sandbox, and refuses the shell', () => {
    expect(sandboxProblem('/nonexistent/bwrap')).toMatch(/not installed/);
    expect(sandboxProblem('/bin/false')).toMatch(/cannot create its sandbox/);
    expect(() => assertShellSandbox('/nonexistent/bwrap')).toThrow(
      /GATEHOUSE_INTERNS_SHELL=on needs the bubblewrap sandbox/,
    );
  });
});
