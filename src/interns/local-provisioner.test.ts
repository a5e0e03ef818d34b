import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { type InternsConfig, loadInternsConfig } from '../config.js';
import { LocalProvisioner } from './local-provisioner.js';
import { ProvisionError, type ProvisionTarget } from './provisioner.js';
import { RUNTIME_PATHS, RUNTIME_TOKEN_HEADER } from './runtime-protocol.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-provisioner-'));
const config = (over: Partial<InternsConfig> = {}): InternsConfig => ({
  ...loadInternsConfig({}, dir),
  runtimeDir: dir,
  interactionTimeoutMs: 60_000,
  ...over,
});
const target = (id: string): ProvisionTarget => ({
  id,
  name: `name-${id}`,
  workspaceId: 'ws',
  hostname: `Name-${id}.Interns.localhost`,
  model: 'gatehouse/echo',
  instructions: 'Say hi.',
});
const signal = new AbortController().signal;

async function boot(p: LocalProvisioner, id: string) {
  for (let i = 0; i < p.steps.length; i++) await p.runStep(target(id), i, signal);
}

/** Whether a process is gone (or a zombie nobody reaped yet). */
function gone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

async function waitFor<T>(
  what: string,
  fn: () => T | null | undefined | false,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const provisioners: LocalProvisioner[] = [];
function provisioner(over: Partial<InternsConfig> = {}) {
  const p = new LocalProvisioner(config(over));
  p.setGatewayUrl('http://127.0.0.1:9');
  provisioners.push(p);
  return p;
}

afterAll(async () => {
  await Promise.all(provisioners.map((p) => p.close()));
  rmSync(dir, { recursive: true, force: true });
});

describe('LocalProvisioner', () => {
  it('prepares the working directory, starts the runtime and checks its health', async () => {
    const p = provisioner();
    expect(p.steps).toEqual(['Preparing working directory', 'Starting runtime', 'Checking health']);
    process.env.GATEHOUSE_TEST_PROVIDER_KEY = 'sk-should-not-leak';
    try {
      await boot(p, 'health');
    } finally {
      delete process.env.GATEHOUSE_TEST_PROVIDER_KEY;
    }
    const cfg = JSON.parse(readFileSync(join(dir, 'health', '.runtime.json'), 'utf8'));
    expect(cfg).toEqual({
      intern_id: 'health',
      name: 'name-health',
      model: 'gatehouse/echo',
      instructions: 'Say hi.',
      hostname: 'name-health.interns.localhost',
    });
    const ep = p.endpoint('health');
    expect(ep?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const res = await fetch(`${ep?.url}${RUNTIME_PATHS.health}`, {
      headers: { [RUNTIME_TOKEN_HEADER]: ep?.token ?? '' },
    });
    expect(await res.json()).toEqual({ ok: true, model: 'gatehouse/echo' });
    expect(p.internOfToken(ep?.token ?? '')).toBe('health');
    expect(p.internOfToken('nope')).toBeNull();
    expect(p.internOfHostname('NAME-health.interns.localhost.')).toBe('health');
    expect(p.internOfHostname('other.interns.localhost')).toBeNull();

    // The child's environment holds what it needs and nothing of the gateway's.
    const pid = p.pidOf('health') as number;
    const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
    const names = env.map((e) => e.slice(0, e.indexOf('=')));
    expect(names).not.toContain('GATEHOUSE_TEST_PROVIDER_KEY');
    expect(env).toContain(`HOME=${join(dir, 'health')}`);
    // (NODE_CHANNEL_* is Node's own IPC channel.)
    const allowed = (n: string) =>
      ['PATH', 'HOME', 'TMPDIR'].includes(n) ||
      n.startsWith('GATEHOUSE_RUNTIME_') ||
      n.startsWith('NODE_CHANNEL_');
    expect(names.filter((n) => !allowed(n))).toEqual([]);

    // A restart gets a fresh token; the old one stops working.
    const oldToken = ep?.token ?? '';
    await p.runStep(target('health'), 1, signal);
    await p.runStep(target('health'), 2, signal);
    expect(p.endpoint('health')?.token).not.toBe(oldToken);
    expect(p.internOfToken(oldToken)).toBeNull();
    await p.stop('health');
  });

  it('reports a runtime that exits unasked (crash) and does not restart it; stop is not reported', async () => {
    const p = provisioner();
    const exits: [string, string][] = [];
    p.onExit((id, message) => exits.push([id, message]));
    await boot(p, 'crash');
    const token = p.endpoint('crash')?.token ?? '';
    process.kill(p.pidOf('crash') as number, 'SIGKILL');
    await waitFor('the exit report', () => exits.length === 1);
    expect(exits).toEqual([['crash', 'Runtime exited with code 137 (SIGKILL)']]);
    expect(p.endpoint('crash')).toBeNull();
    expect(p.internOfToken(token)).toBeNull();
    expect(p.internOfHostname('name-crash.interns.localhost')).toBeNull();

    await boot(p, 'calm');
    const pid = p.pidOf('calm') as number;
    await p.stop('calm');
    expect(gone(pid)).toBe(true);
    await new Promise((r) => setTimeout(r, 100));
    expect(exits).toHaveLength(1);
  });

  it('destroy archives the working directory, or removes it with discard', async () => {
    const p = provisioner();
    await boot(p, 'keep');
    writeFileSync(join(dir, 'keep', 'work.txt'), 'precious');
    await p.destroy('keep', { discard: false });
    expect(p.endpoint('keep')).toBeNull();
    expect(existsSync(join(dir, 'keep'))).toBe(false);
    const archived = readdirSync(join(dir, 'archive')).filter((n) => n.startsWith('keep-'));
    expect(archived).toHaveLength(1);
    expect(readFileSync(join(dir, 'archive', archived[0] as string, 'work.txt'), 'utf8')).toBe('precious');

    await p.runStep(target('toss'), 0, signal);
    await p.destroy('toss', { discard: true });
    expect(existsSync(join(dir, 'toss'))).toBe(false);
    expect(readdirSync(join(dir, 'archive')).some((n) => n.startsWith('toss-'))).toBe(false);
    // Nothing to destroy is fine.
    await p.destroy('never-made', { discard: false });
  });

  it('fails a step with ProvisionError when archiving fails or the gateway URL is unknown', async () => {
    const p = new LocalProvisioner(config());
    await expect(p.runStep(target('early'), 1, signal)).rejects.toBeInstanceOf(ProvisionError);
    // An archive folder that is a file cannot hold archives.
    const odd = mkdtempSync(join(tmpdir(), 'gatehouse-provisioner-odd-'));
    writeFileSync(join(odd, 'archive'), 'not a folder');
    const q = new LocalProvisioner(config({ runtimeDir: odd }));
    await q.runStep(target('stuck'), 0, signal);
    await expect(q.destroy('stuck', { discard: false })).rejects.toThrow(ProvisionError);
    rmSync(odd, { recursive: true, force: true });
  });

  it('leaves no orphan: the runtime exits when the gateway process dies', async () => {
    const script = join(dir, 'parent.mts');
    const module = pathToFileURL(join(import.meta.dirname, 'local-provisioner.ts')).href;
    writeFileSync(
      script,
      `import { LocalProvisioner } from ${JSON.stringify(module)};
const p = new LocalProvisioner(${JSON.stringify(config({ runtimeDir: join(dir, 'orphans') }))});
p.setGatewayUrl('http://127.0.0.1:9');
const t = { id: 'orphan', name: 'orphan', workspaceId: 'ws', hostname: 'orphan.interns.localhost', model: 'm', instructions: null };
const s = new AbortController().signal;
for (let i = 0; i < 3; i++) await p.runStep(t, i, s);
process.stdout.write('pid=' + p.pidOf('orphan') + '\\n');
setInterval(() => {}, 1000);
`,
    );
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
    const parent = spawn(process.execPath, ['--import', tsx, script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    let parentExit: number | null = null;
    parent.stdout.on('data', (b: Buffer) => {
      out += b.toString();
    });
    parent.on('exit', (code) => {
      parentExit = code ?? -1;
    });
    const found = await waitFor(
      'the runtime pid',
      () => /pid=(\d+)/.exec(out) ?? parentExit !== null,
      20_000,
    );
    if (found === true) throw new Error(`the parent script exited with ${parentExit}`);
    const pid = Number(found[1]);
    expect(gone(pid)).toBe(false);
    parent.kill('SIGKILL');
    await waitFor('the orphaned runtime to exit', () => gone(pid), 10_000);
  }, 30_000);
  it('refuses to start a runtime past GATEHOUSE_INTERNS_RUNTIMES_MAX on this host', async () => {
    const p = provisioner({ runtimesMax: 1 });
    await boot(p, 'cap-a');
    expect(p.runtimeCount()).toBe(1);
    const refused = boot(p, 'cap-b');
    await expect(refused).rejects.toBeInstanceOf(ProvisionError);
    await expect(refused).rejects.toThrow(/1 intern runtimes/);
    expect(p.endpoint('cap-b')).toBeNull();
    // Restarting the same intern is no extra runtime; stopping one makes room.
    await boot(p, 'cap-a');
    await p.stop('cap-a');
    await boot(p, 'cap-b');
    expect(p.runtimeCount()).toBe(1);
  }, 30_000);
});
