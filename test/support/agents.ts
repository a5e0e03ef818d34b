/**
 * Runs the real coding agents headless, as a user would behind a gateway: Claude Code
 * (`claude -p`, `@anthropic-ai/claude-code`) and Codex CLI (`codex exec`, `@openai/codex`), both
 * devDependencies with their native binaries.
 *
 * Every run is isolated: a fresh temp directory holds HOME (Claude Code keeps its settings and
 * sessions under ~/.claude), CODEX_HOME (Codex's config.toml, sessions and logs) and the working
 * directory (seeded with `files`); the agent gets a minimal environment (nothing inherited from the
 * test runner but PATH), a hard timeout that kills its whole process group, and the directory is
 * removed afterwards.
 *
 * Nothing may leave the machine: each agent's own phone-home is switched off (below), and every
 * run points HTTP(S)_PROXY at a local proxy that refuses and records any connection to a host
 * other than loopback (`outbound`), so a stray call fails fast and a test can assert there was none.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export interface AgentResult {
  /** null when the process ended by a signal (e.g. killed on timeout). */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** The agent's process id, also its process group's (all of it is killed when the run ends). */
  pid: number;
  /** Hosts the agent tried to reach other than loopback (`host:port`), in order. */
  outbound: string[];
}

interface AgentOptions {
  prompt: string;
  /** Files created in the agent's working directory (relative path → content). */
  files?: Record<string, string>;
  /** Extra environment variables (win over the defaults below). */
  env?: Record<string, string>;
  /** Extra command-line arguments, placed before the prompt. */
  args?: string[];
  /** Hard limit for the whole run (default 120 s); the process group is killed past it. */
  timeoutMs?: number;
  /** Called with the working directory's absolute path once it exists, before the agent starts. */
  beforeStart?: (cwd: string) => void | Promise<void>;
  /** Called with the agent's HOME once it exited, before its directories are removed. */
  afterExit?: (home: string) => void | Promise<void>;
}

export interface ClaudeCodeOptions extends AgentOptions {
  /** ANTHROPIC_BASE_URL: the client appends `/v1/messages?beta=true`. */
  baseUrl: string;
  /** ANTHROPIC_API_KEY, sent as `x-api-key`. */
  apiKey?: string;
  /** ANTHROPIC_AUTH_TOKEN, sent as `Authorization: Bearer …` (beside x-api-key when both are set). */
  authToken?: string;
  /** `--model`; by default Claude Code picks its own. */
  model?: string;
}

export interface CodexOptions extends AgentOptions {
  /** The custom provider's `base_url`: Codex appends `/responses`. */
  baseUrl: string;
  /** Read from the provider's `env_key` and sent as `Authorization: Bearer …`. */
  apiKey: string;
  /** `-m`; by default Codex picks its own. Other settings: `args: ['-c', 'key=value']`. */
  model?: string;
  /** The provider's `supports_websockets`: Codex then calls the Responses WebSocket mode first. */
  websockets?: boolean;
}

const require = createRequire(import.meta.url);

function packageDir(name: string): string | null {
  try {
    return dirname(require.resolve(`${name}/package.json`));
  } catch {
    return null;
  }
}

const claudeDir = packageDir('@anthropic-ai/claude-code');
const codexDir = packageDir('@openai/codex');
/** The native binary that install.cjs copies over the package's placeholder. */
const CLAUDE_BIN = claudeDir ? join(claudeDir, 'bin', 'claude.exe') : null;
/** The npm launcher: it finds the platform package's native binary and runs it. */
const CODEX_JS = codexDir ? join(codexDir, 'bin', 'codex.js') : null;

/** `--version` of each agent, or why it cannot run here (checked once, on first use). */
let availability: { claude: string | Error; codex: string | Error } | undefined;

function version(cmd: string, args: string[]): string | Error {
  const r = spawnSync(cmd, args, {
    encoding: 'utf8',
    timeout: 60_000,
    env: { PATH: process.env.PATH ?? '' },
  });
  if (r.error) return r.error;
  if (r.status !== 0) return new Error(`exit ${r.status}: ${(r.stderr || r.stdout).trim().slice(0, 300)}`);
  return r.stdout.trim();
}

export function agentVersions(): { claude: string | Error; codex: string | Error } {
  availability ??= {
    claude:
      CLAUDE_BIN && existsSync(CLAUDE_BIN)
        ? version(CLAUDE_BIN, ['--version'])
        : new Error('@anthropic-ai/claude-code is not installed'),
    codex:
      CODEX_JS && existsSync(CODEX_JS)
        ? version(process.execPath, [CODEX_JS, '--version'])
        : new Error('@openai/codex is not installed'),
  };
  return availability;
}

/** Claude Code: `claude -p <prompt>` with ANTHROPIC_BASE_URL and a key; prints the final answer. */
export async function runClaudeCode(opts: ClaudeCodeOptions): Promise<AgentResult> {
  if (!CLAUDE_BIN) throw new Error('@anthropic-ai/claude-code is not installed');
  return runAgent(opts, (dir) => ({
    cmd: CLAUDE_BIN,
    args: [...(opts.model ? ['--model', opts.model] : []), ...(opts.args ?? []), '-p', opts.prompt],
    env: {
      ANTHROPIC_BASE_URL: opts.baseUrl,
      ...(opts.apiKey ? { ANTHROPIC_API_KEY: opts.apiKey } : {}),
      ...(opts.authToken ? { ANTHROPIC_AUTH_TOKEN: opts.authToken } : {}),
      // No auto-update, telemetry, error reports or feature-flag fetches: without this Claude Code
      // opens connections to api.anthropic.com whatever ANTHROPIC_BASE_URL says. The umbrella
      // switch implies the other three; they are set too in case a version splits them.
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
      // A refusal is final in a test; the client's own backoff (up to 10 retries) would only hide it.
      CLAUDE_CODE_MAX_RETRIES: '0',
      XDG_CONFIG_HOME: join(dir.home, '.config'),
      ...opts.env,
    },
  }));
}

/**
 * Codex CLI: `codex exec <prompt>` with a CODEX_HOME whose config.toml defines one custom provider
 * on the Responses wire API; approvals off, no git repository required. Codex's own command
 * sandbox is off: it prefers a bubblewrap on PATH to the one it ships, and Debian's 0.8 (installed
 * for the interns shell) cannot start Codex's sandbox helper. Commands here only read a file in the
 * run's temporary directory.
 */
export async function runCodex(opts: CodexOptions): Promise<AgentResult> {
  if (!CODEX_JS) throw new Error('@openai/codex is not installed');
  return runAgent(opts, (dir) => {
    const codexHome = join(dir.root, 'codex-home');
    mkdirSync(codexHome);
    writeFileSync(join(codexHome, 'config.toml'), codexConfig(opts));
    return {
      cmd: process.execPath,
      args: [
        CODEX_JS,
        'exec',
        '--skip-git-repo-check',
        '--color',
        'never',
        ...(opts.model ? ['-m', opts.model] : []),
        ...(opts.args ?? []),
        opts.prompt,
      ],
      env: { CODEX_HOME: codexHome, GATEHOUSE_API_KEY: opts.apiKey, ...opts.env },
    };
  });
}

function codexConfig(opts: CodexOptions): string {
  return `# Written by test/support/agents.ts for one run.
model_provider = "gatehouse"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

# No usage analytics (ab.chatgpt.com).
[analytics]
enabled = false

# No plugin marketplace sync (github.com, api.github.com, chatgpt.com).
[features]
plugins = false

[model_providers.gatehouse]
name = "Gatehouse"
base_url = ${JSON.stringify(opts.baseUrl)}
env_key = "GATEHOUSE_API_KEY"
wire_api = "responses"
# A refusal is final in a test; retries with backoff would only hide it.
request_max_retries = 0
stream_max_retries = 0
${opts.websockets ? 'supports_websockets = true\n' : ''}`;
}

interface AgentDirs {
  root: string;
  home: string;
  cwd: string;
}

async function runAgent(
  opts: AgentOptions,
  command: (dirs: AgentDirs) => { cmd: string; args: string[]; env: Record<string, string> },
): Promise<AgentResult> {
  const root = mkdtempSync(join(tmpdir(), 'gatehouse-agent-'));
  const dirs: AgentDirs = { root, home: join(root, 'home'), cwd: join(root, 'work') };
  mkdirSync(dirs.home);
  mkdirSync(dirs.cwd);
  for (const [path, content] of Object.entries(opts.files ?? {})) {
    mkdirSync(dirname(join(dirs.cwd, path)), { recursive: true });
    writeFileSync(join(dirs.cwd, path), content);
  }
  await opts.beforeStart?.(dirs.cwd);
  const guard = await startOutboundGuard();
  try {
    const { cmd, args, env } = command(dirs);
    const result = await run(cmd, args, {
      cwd: dirs.cwd,
      timeoutMs: opts.timeoutMs ?? 120_000,
      outbound: guard.outbound,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: dirs.home,
        TMPDIR: root,
        LANG: 'C.UTF-8',
        TERM: 'dumb',
        NO_COLOR: '1',
        ...proxyEnv(guard.url),
        ...env,
      },
    });
    await opts.afterExit?.(dirs.home);
    return result;
  } finally {
    await guard.close();
    rmSync(root, { recursive: true, force: true });
  }
}

const LOOPBACK = '127.0.0.1,localhost,::1';

const proxyEnv = (url: string): Record<string, string> => ({
  HTTPS_PROXY: url,
  HTTP_PROXY: url,
  ALL_PROXY: url,
  https_proxy: url,
  http_proxy: url,
  all_proxy: url,
  NO_PROXY: LOOPBACK,
  no_proxy: LOOPBACK,
});

/** A proxy that refuses every connection and records where it was asked to go. */
async function startOutboundGuard(): Promise<{ url: string; outbound: string[]; close(): Promise<void> }> {
  const outbound: string[] = [];
  const server = createServer((req, res) => {
    outbound.push(hostOf(req.url ?? ''));
    res.writeHead(403).end();
  });
  server.on('connect', (req, socket) => {
    outbound.push(req.url ?? '');
    socket.on('error', () => {});
    socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
  });
  server.on('clientError', (_err, socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    outbound,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function hostOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || (u.protocol === 'https:' ? 443 : 80)}`;
  } catch {
    return url;
  }
}

function run(
  cmd: string,
  args: string[],
  o: { cwd: string; env: Record<string, string>; timeoutMs: number; outbound: string[] },
): Promise<AgentResult> {
  return new Promise((resolve, reject) => {
    // Its own process group, so the agent and everything it started can be killed together.
    const child: ChildProcess = spawn(cmd, args, {
      cwd: o.cwd,
      env: o.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const killGroup = (signal: NodeJS.Signals) => {
      try {
        if (child.pid) process.kill(-child.pid, signal);
      } catch {} // the group is already gone
    };
    let hardKill: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup('SIGTERM');
      hardKill = setTimeout(() => killGroup('SIGKILL'), 3000);
    }, o.timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (exitCode, signal) => {
      clearTimeout(timer);
      clearTimeout(hardKill);
      killGroup('SIGKILL'); // anything the agent left running in the background
      resolve({ exitCode, signal, stdout, stderr, timedOut, pid: child.pid ?? 0, outbound: [...o.outbound] });
    });
  });
}
