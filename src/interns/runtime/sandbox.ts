import { spawnSync } from 'node:child_process';
import { lstatSync, readlinkSync } from 'node:fs';

/**
 * The sandbox the shell tool's commands run in: bubblewrap (`bwrap`). Each command gets
 * - new user, mount, PID, IPC, UTS, cgroup and network namespaces (`--unshare-all`: the shell has
 *   no network; the intern reaches the outside only through its http_request tool and the
 *   gateway's egress rules), running as uid/gid 65534 (nobody);
 * - a read-only view of the system (`/usr`, and `/bin` `/lib` `/lib64` `/sbin` as the host has
 *   them), a few files of `/etc`, a fresh `/tmp`, a fresh `/dev`, and a `/proc` showing only the
 *   sandbox's own processes (not the gateway's, nor its environment);
 * - the intern's working directory, and nothing else of the host, writable at SANDBOX_WORKDIR,
 *   with the runtime's own entries (sessions, config) masked: the data directory (database,
 *   master key) and the other interns' directories are not in the sandbox at all;
 * - a clean environment (only what the caller passes), its own session (no terminal to inject
 *   into), and it dies with the runtime.
 */

/** Where the intern's working directory appears inside the sandbox (also its HOME and cwd). */
export const SANDBOX_WORKDIR = '/workspace';

/** uid and gid inside the sandbox: nobody. */
const SANDBOX_ID = '65534';

/** The bubblewrap program (looked up on PATH). */
export const BWRAP = 'bwrap';

/** /etc entries a shell needs to run ordinary tools; the rest of /etc stays out. */
const ETC = [
  '/etc/alternatives',
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
  '/etc/localtime',
];

/** The top-level system directories: a symlink into /usr on merged-/usr systems, else a directory. */
function systemDirs(): string[] {
  const args: string[] = [];
  for (const dir of ['/bin', '/sbin', '/lib', '/lib64', '/lib32', '/libx32']) {
    let stat: ReturnType<typeof lstatSync>;
    try {
      stat = lstatSync(dir);
    } catch {
      continue;
    }
    if (stat.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else if (stat.isDirectory()) args.push('--ro-bind', dir, dir);
  }
  return args;
}

/** What the sandbox shows of the intern's working directory. */
export interface SandboxView {
  /** The intern's working directory on the host. */
  workdir: string;
  /** Subdirectories of it the commands must not see (replaced by an empty, throwaway directory). */
  hiddenDirs: readonly string[];
  /** Files of it the commands must not see (replaced by an empty read-only file). */
  hiddenFiles: readonly string[];
}

/** The bwrap arguments for `command` (argv) with environment `env`, before the command itself. */
export function sandboxArgs(view: SandboxView | null, env: Record<string, string>): string[] {
  const args = [
    '--unshare-all',
    '--uid',
    SANDBOX_ID,
    '--gid',
    SANDBOX_ID,
    '--die-with-parent',
    '--new-session',
    '--hostname',
    'intern',
    '--ro-bind',
    '/usr',
    '/usr',
    ...systemDirs(),
    ...ETC.flatMap((p) => ['--ro-bind-try', p, p]),
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--tmpfs',
    '/tmp',
  ];
  if (view) {
    args.push('--bind', view.workdir, SANDBOX_WORKDIR);
    for (const d of view.hiddenDirs) args.push('--tmpfs', `${SANDBOX_WORKDIR}/${d}`);
    for (const f of view.hiddenFiles) args.push('--ro-bind', '/dev/null', `${SANDBOX_WORKDIR}/${f}`);
    args.push('--chdir', SANDBOX_WORKDIR);
  }
  // The sandbox's root is a throwaway tmpfs: read-only, so only the workdir and /tmp take writes.
  args.push('--remount-ro', '/', '--clearenv');
  for (const [k, v] of Object.entries(env)) args.push('--setenv', k, v);
  args.push('--');
  return args;
}

let probed: { bin: string; problem: string | null } | null = null;

/**
 * Why the sandbox cannot run here (bwrap missing, or unable to create its namespaces), or null
 * when it works: a trivial command is run in it once and the answer remembered.
 */
export function sandboxProblem(bin: string = BWRAP): string | null {
  if (probed?.bin === bin) return probed.problem;
  const r = spawnSync(bin, [...sandboxArgs(null, { PATH: '/usr/bin:/bin' }), 'true'], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    encoding: 'utf8',
    timeout: 10_000,
  });
  let problem: string | null = null;
  if (r.error) {
    const code = (r.error as NodeJS.ErrnoException).code;
    problem =
      code === 'ENOENT'
        ? `${bin} (bubblewrap) is not installed`
        : `${bin} (bubblewrap) could not be run: ${r.error.message}`;
  } else if (r.status !== 0) {
    const why = (r.stderr || '').trim().split('\n')[0] || `exit code ${r.status ?? r.signal}`;
    problem = `${bin} (bubblewrap) cannot create its sandbox here: ${why}`;
  }
  probed = { bin, problem };
  return problem;
}

/**
 * Gateway start with GATEHOUSE_INTERNS_SHELL=on: throws, naming the problem, when the sandbox
 * does not work here, so that no shell ever runs unconfined.
 */
export function assertShellSandbox(bin: string = BWRAP): void {
  const problem = sandboxProblem(bin);
  if (problem) {
    throw new Error(
      `GATEHOUSE_INTERNS_SHELL=on needs the bubblewrap sandbox, and ${problem}. Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) where unprivileged user namespaces are allowed, or set GATEHOUSE_INTERNS_SHELL=off.`,
    );
  }
}
