import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { InternsConfig } from '../config.js';
import {
  ProvisionError,
  type Provisioner,
  type ProvisionTarget,
  type RuntimeEndpoint,
} from './provisioner.js';
import { RUNTIME_CONFIG_FILE, RUNTIME_ENV, type RuntimeFile } from './runtime/config.js';
import { RUNTIME_PATHS, RUNTIME_TOKEN_HEADER } from './runtime-protocol.js';

/** Where the provisioner reports runtimes' output and its own events (the gateway's logger). */
export interface RuntimeLog {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

const silent: RuntimeLog = { debug() {}, info() {}, warn() {} };

const START_TIMEOUT_MS = 10_000;
const HEALTH_TIMEOUT_MS = 10_000;
const KILL_AFTER_MS = 3_000;

interface Runtime {
  internId: string;
  child: ChildProcess;
  /** Set once the runtime reported its port. */
  url: string | null;
  token: string;
  tokenHash: string;
  hostname: string;
  model: string;
  /** Healthy once: an exit from then on that nobody asked for is reported. */
  ready: boolean;
  stopping: boolean;
  exited: Promise<void>;
  exitCode: number | null;
}

const tokenHashOf = (token: string) => createHash('sha256').update(token).digest('hex');
const normalHost = (h: string) => h.toLowerCase().replace(/\.$/, '');
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The runtime program's command line: from TypeScript source (through tsx) or from the build. */
function runtimeArgs(): string[] {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.ts')) {
    const tsx = createRequire(import.meta.url).resolve('tsx');
    return ['--import', pathToFileURL(tsx).href, join(dirname(here), 'runtime', 'main.ts')];
  }
  return [join(dirname(here), 'runtime', 'main.js')];
}

/** `Runtime exited with code N` (a signal counts as 128 + its number, as a shell reports it). */
function exitMessage(code: number | null, signal: NodeJS.Signals | null): string {
  if (code !== null) return `Runtime exited with code ${code}`;
  const n = signal ? constants.signals[signal] : undefined;
  return `Runtime exited with code ${n ? 128 + n : 'unknown'} (${signal ?? 'no signal'})`;
}

/**
 * One child process per intern on this machine, each with its own working directory
 * `<runtimeDir>/<internId>/`. The child gets only what it needs in its environment (never the
 * gateway's: provider keys, the master key), listens on loopback, reports its port over IPC and
 * exits when the IPC channel closes. A runtime that exits unasked is reported to `onExit`
 * listeners and is not restarted.
 */
export class LocalProvisioner implements Provisioner {
  readonly steps = ['Preparing working directory', 'Starting runtime', 'Checking health'] as const;

  private readonly runtimes = new Map<string, Runtime>();
  private readonly byToken = new Map<string, string>();
  private readonly byHostname = new Map<string, string>();
  private readonly exitListeners: ((internId: string, message: string) => void)[] = [];
  private gatewayUrl: string | null = null;

  constructor(
    readonly config: InternsConfig,
    private readonly log: RuntimeLog = silent,
  ) {}

  /** An intern's working directory. */
  workdir(internId: string): string {
    if (!/^[A-Za-z0-9_-]+$/.test(internId)) throw new ProvisionError('Invalid intern id');
    return join(this.config.runtimeDir, internId);
  }

  async runStep(target: ProvisionTarget, index: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) throw new ProvisionError('Provisioning was cancelled');
    switch (index) {
      case 0:
        return this.prepare(target);
      case 1:
        return this.start(target, signal);
      case 2:
        return this.checkHealth(target.id, signal);
      default:
        throw new Error(`LocalProvisioner has no step ${index}`);
    }
  }

  private async prepare(target: ProvisionTarget): Promise<void> {
    const dir = this.workdir(target.id);
    try {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      const file: RuntimeFile = {
        intern_id: target.id,
        name: target.name,
        model: target.model,
        instructions: target.instructions,
        hostname: normalHost(target.hostname),
      };
      const path = join(dir, RUNTIME_CONFIG_FILE);
      await writeFile(`${path}.tmp`, JSON.stringify(file, null, 2), { mode: 0o600 });
      await rename(`${path}.tmp`, path);
    } catch (err) {
      this.log.warn(
        { intern: target.id, err: (err as Error).message },
        'could not prepare working directory',
      );
      throw new ProvisionError('Could not prepare the intern’s working directory');
    }
  }

  private async start(target: ProvisionTarget, signal: AbortSignal): Promise<void> {
    if (!this.gatewayUrl) throw new ProvisionError('The gateway is not listening yet; try again');
    // Idempotent: a re-run (retry, resume) replaces the runtime this intern may still have.
    await this.stop(target.id);
    // The host-wide cap, enforced here too: requests are checked before they queue, but provisions
    // started together (or at boot) only meet here.
    if (this.runtimes.size >= this.config.runtimesMax) {
      throw new ProvisionError(
        `This host already runs ${this.config.runtimesMax} intern runtimes, the most it allows; suspend one or try later`,
      );
    }
    const dir = this.workdir(target.id);
    const token = randomBytes(32).toString('base64url');
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: dir,
      [RUNTIME_ENV.token]: token,
      [RUNTIME_ENV.gatewayUrl]: this.gatewayUrl,
      [RUNTIME_ENV.internId]: target.id,
      [RUNTIME_ENV.model]: target.model,
      [RUNTIME_ENV.configFile]: join(dir, RUNTIME_CONFIG_FILE),
      [RUNTIME_ENV.shell]: this.config.shell ? 'on' : 'off',
      [RUNTIME_ENV.interactionTimeoutMs]: String(this.config.interactionTimeoutMs),
      [RUNTIME_ENV.maxSteps]: String(this.config.maxSteps),
    };
    if (process.env.TMPDIR) env.TMPDIR = process.env.TMPDIR;

    let child: ChildProcess;
    try {
      child = spawn(process.execPath, runtimeArgs(), {
        cwd: dir,
        env,
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      });
    } catch (err) {
      this.log.warn({ intern: target.id, err: (err as Error).message }, 'could not start runtime');
      throw new ProvisionError('Could not start the intern’s runtime');
    }
    const rt: Runtime = {
      internId: target.id,
      child,
      url: null,
      token,
      tokenHash: tokenHashOf(token),
      hostname: normalHost(target.hostname),
      model: target.model,
      ready: false,
      stopping: false,
      exitCode: null,
      exited: new Promise((resolve) => {
        child.once('exit', (code, sig) => {
          rt.exitCode = code;
          this.exited(rt, code, sig);
          resolve();
        });
      }),
    };
    this.runtimes.set(target.id, rt);
    this.pipeOutput(rt);
    child.on('error', (err) =>
      this.log.warn({ intern: target.id, err: err.message }, 'runtime process error'),
    );

    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(
        () => finish(new ProvisionError('The runtime did not start within 10 s')),
        START_TIMEOUT_MS,
      );
      const onMessage = (m: unknown) => {
        const msg = m as { type?: unknown; port?: unknown };
        if (msg?.type === 'listening' && typeof msg.port === 'number') finish(null, msg.port);
      };
      const onExit = (code: number | null, sig: NodeJS.Signals | null) =>
        finish(new ProvisionError(`${exitMessage(code, sig)} while starting`));
      const onAbort = () => finish(new ProvisionError('Provisioning was cancelled'));
      const finish = (err: Error | null, p?: number) => {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
        signal.removeEventListener('abort', onAbort);
        if (err) reject(err);
        else resolve(p as number);
      };
      child.on('message', onMessage);
      child.once('exit', onExit);
      signal.addEventListener('abort', onAbort, { once: true });
    }).catch(async (err: unknown) => {
      await this.stop(target.id);
      throw err;
    });

    rt.url = `http://127.0.0.1:${port}`;
    this.byToken.set(rt.tokenHash, target.id);
    this.byHostname.set(rt.hostname, target.id);
    this.log.info({ intern: target.id, port, pid: child.pid }, 'intern runtime started');
  }

  private async checkHealth(internId: string, signal: AbortSignal): Promise<void> {
    const deadline = Date.now() + HEALTH_TIMEOUT_MS;
    for (;;) {
      if (signal.aborted) throw new ProvisionError('Provisioning was cancelled');
      const rt = this.runtimes.get(internId);
      if (!rt?.url) {
        throw new ProvisionError(
          rt && rt.exitCode !== null
            ? `Runtime exited with code ${rt.exitCode}`
            : 'The runtime is not running',
        );
      }
      try {
        const res = await fetch(`${rt.url}${RUNTIME_PATHS.health}`, {
          headers: { [RUNTIME_TOKEN_HEADER]: rt.token },
          signal: AbortSignal.any([signal, AbortSignal.timeout(2_000)]),
        });
        const body = (await res.json().catch(() => null)) as { ok?: unknown } | null;
        if (res.ok && body?.ok === true) {
          rt.ready = true;
          return;
        }
      } catch {
        // Not answering yet.
      }
      if (Date.now() > deadline) {
        await this.stop(internId);
        throw new ProvisionError('The runtime did not become healthy within 10 s');
      }
      await sleep(100);
    }
  }

  private pipeOutput(rt: Runtime): void {
    const { child, internId } = rt;
    if (child.stdout) {
      createInterface({ input: child.stdout }).on('line', (line) =>
        this.log.debug({ intern: internId, stream: 'stdout' }, line),
      );
    }
    if (child.stderr) {
      createInterface({ input: child.stderr }).on('line', (line) =>
        this.log.info({ intern: internId, stream: 'stderr' }, line),
      );
    }
  }

  private forget(rt: Runtime): void {
    if (this.runtimes.get(rt.internId) === rt) this.runtimes.delete(rt.internId);
    if (this.byToken.get(rt.tokenHash) === rt.internId) this.byToken.delete(rt.tokenHash);
    if (this.byHostname.get(rt.hostname) === rt.internId && this.runtimes.get(rt.internId) === undefined)
      this.byHostname.delete(rt.hostname);
  }

  private exited(rt: Runtime, code: number | null, sig: NodeJS.Signals | null): void {
    const wasCurrent = this.runtimes.get(rt.internId) === rt;
    this.forget(rt);
    if (!wasCurrent || rt.stopping || !rt.ready) return;
    const message = exitMessage(code, sig);
    this.log.warn({ intern: rt.internId }, `intern runtime exited unasked: ${message}`);
    for (const listener of this.exitListeners) {
      try {
        listener(rt.internId, message);
      } catch (err) {
        this.log.warn({ intern: rt.internId, err: (err as Error).message }, 'runtime exit listener failed');
      }
    }
  }

  async stop(internId: string): Promise<void> {
    const rt = this.runtimes.get(internId);
    if (!rt) return;
    rt.stopping = true;
    this.forget(rt);
    const { child } = rt;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), KILL_AFTER_MS);
      await rt.exited;
      clearTimeout(timer);
    }
    this.log.info({ intern: internId }, 'intern runtime stopped');
  }

  async destroy(internId: string, opts: { discard: boolean }): Promise<void> {
    await this.stop(internId);
    const dir = this.workdir(internId);
    const exists = await stat(dir).then(
      () => true,
      () => false,
    );
    if (!exists) return;
    if (opts.discard) {
      await rm(dir, { recursive: true, force: true });
      return;
    }
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const target = join(this.config.runtimeDir, 'archive', `${internId}-${stamp}`);
    try {
      await mkdir(dirname(target), { recursive: true, mode: 0o700 });
      await rename(dir, target);
    } catch (err) {
      this.log.warn({ intern: internId, err: (err as Error).message }, 'could not archive working directory');
      throw new ProvisionError('Could not archive the intern’s working directory');
    }
  }

  runtimeCount(): number {
    return this.runtimes.size;
  }

  endpoint(internId: string): RuntimeEndpoint | null {
    const rt = this.runtimes.get(internId);
    return rt?.url ? { url: rt.url, token: rt.token } : null;
  }

  /** The model the intern's runtime was started with, or null when it does not run here. */
  modelOf(internId: string): string | null {
    return this.runtimes.get(internId)?.model ?? null;
  }

  /** The runtime's process id (tests, diagnostics), or null. */
  pidOf(internId: string): number | null {
    return this.runtimes.get(internId)?.child.pid ?? null;
  }

  internOfToken(token: string): string | null {
    if (!token) return null;
    return this.byToken.get(tokenHashOf(token)) ?? null;
  }

  internOfHostname(hostname: string): string | null {
    return this.byHostname.get(normalHost(hostname)) ?? null;
  }

  onExit(listener: (internId: string, message: string) => void): void {
    this.exitListeners.push(listener);
  }

  setGatewayUrl(url: string): void {
    this.gatewayUrl = url.replace(/\/+$/, '');
  }

  async close(): Promise<void> {
    await Promise.all([...this.runtimes.keys()].map((id) => this.stop(id)));
  }
}
