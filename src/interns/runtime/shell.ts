import { spawn } from 'node:child_process';
import { BWRAP, type SandboxView, sandboxArgs } from './sandbox.js';

export interface ShellResult {
  /** Exit code, or null when killed (timeout, run cancelled). */
  code: number | null;
  output: string;
  timedOut: boolean;
  truncated: boolean;
}

/**
 * Runs `bash -c <command>` inside the bubblewrap sandbox (sandbox.ts), in the intern's working
 * directory with only `env` as its environment (never the runtime's token), stdout and stderr
 * interleaved and capped, killed with its process group after `timeoutMs` or when `signal`
 * aborts. There is no unsandboxed fallback: without bwrap the command fails.
 */
export function runShell(
  command: string,
  opts: {
    sandbox: SandboxView;
    env: Record<string, string>;
    timeoutMs: number;
    capBytes: number;
    signal: AbortSignal;
  },
): Promise<ShellResult> {
  return new Promise((resolvePromise, reject) => {
    if (opts.signal.aborted) return reject(opts.signal.reason);
    // bwrap itself gets only PATH (to find itself): it is the sandbox's PID 1, and its
    // /proc/1/environ is readable from inside.
    const child = spawn(BWRAP, [...sandboxArgs(opts.sandbox, opts.env), 'bash', '-c', command], {
      cwd: opts.sandbox.workdir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const chunks: Buffer[] = [];
    let size = 0;
    let truncated = false;
    let timedOut = false;
    const collect = (b: Buffer) => {
      if (size >= opts.capBytes) {
        truncated = true;
        return;
      }
      const room = opts.capBytes - size;
      if (b.length > room) truncated = true;
      const piece = b.subarray(0, room);
      chunks.push(piece);
      size += piece.length;
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const kill = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, opts.timeoutMs);
    const onAbort = () => kill();
    opts.signal.addEventListener('abort', onAbort, { once: true });
    child.on('error', (err) => {
      clearTimeout(timer);
      opts.signal.removeEventListener('abort', onAbort);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      opts.signal.removeEventListener('abort', onAbort);
      if (opts.signal.aborted) return reject(opts.signal.reason);
      resolvePromise({ code, output: Buffer.concat(chunks).toString('utf8'), timedOut, truncated });
    });
  });
}
