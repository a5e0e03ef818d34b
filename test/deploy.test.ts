/**
 * The container image, without a container: no daemon runs where the tests do, so this test runs
 * the Dockerfile's own commands on the machine — the package as its build stage makes it (`npm pack`
 * unpacked into a clean directory), the production install of its `deps` stage, and the runtime
 * stage's ENTRYPOINT + CMD with its ENV (the data directory and ports moved to temporary ones) — and
 * checks the result serves: /health, the image's HEALTHCHECK, and a call through a mock provider.
 * The commands are read from the Dockerfile, so a change there is what this test runs.
 *
 * Slow (the production install compiles better-sqlite3 where no prebuilt binary can be fetched); it
 * needs the npm registry, or an npm cache holding the locked packages (`--prefer-offline`).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from './support/build.js';
import { argsOf, envOf, execForm, onlyArgs, parseDockerfile, stage } from './support/dockerfile.js';
import { type MockUpstream, startMockUpstream } from './support/mock-upstream.js';
import { freePort, GiveUp, waitFor } from './support/processes.js';

const ROOT = resolve(import.meta.dirname, '..');
const stages = parseDockerfile(join(ROOT, 'Dockerfile'));
const build = stage(stages, 'build');
const deps = stage(stages, 'deps');
const runtime = stage(stages, 'runtime');

/** The environment of the commands: ours without Gatehouse's settings or provider keys. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (
      /^(GATEHOUSE_|DATABASE_URL$|REDIS_URL$|PORT$|HOST$|MEDIA_PORT$|LOG_LEVEL$|NODE_ENV$)|_API_KEY$|_BASE_URL$/.test(
        k,
      )
    )
      continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

/** Runs one RUN line with bash (as `/bin/sh -c` would, but failing on the first error). */
function run(command: string, cwd: string, env: NodeJS.ProcessEnv) {
  const r = spawnSync('bash', ['-euo', 'pipefail', '-c', command], {
    cwd,
    env,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0)
    throw new Error(
      `\`${command}\` exited with ${r.status}\n${r.stdout.slice(-4000)}\n${r.stderr.slice(-4000)}`,
    );
  return r.stdout;
}

const API_KEY = 'sk-gh-v1-deploy-test-api-key-0000000000000';
const MANAGEMENT_KEY = 'sk-gh-v1-deploy-test-management-key-000000';
const PROVIDER_KEY = 'sk-deploy-test-provider-key-1234';

describe('the container image, run as its Dockerfile says (outside a container)', () => {
  let work: string;
  let appDir: string;
  let dataDir: string;
  let mock: MockUpstream;
  let child: ChildProcess | null = null;
  let output = '';
  let url: string;
  let runtimeEnv: NodeJS.ProcessEnv;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'gatehouse-deploy-'));
    appDir = join(work, 'app');
    dataDir = join(work, 'data');
    mock = await startMockUpstream();

    // The build stage: `npm ci` + `npm run build` are this checkout's own install and build (brought
    // up to date, as `npm start` does); its later RUN lines (the package) run as written, with the
    // stage's ARGs pointed into the temporary directory.
    const runs = argsOf(build, 'RUN');
    const buildAt = runs.indexOf('npm run build');
    expect(buildAt, 'the build stage runs `npm run build`').toBeGreaterThanOrEqual(0);
    const args = cleanEnv({ APP_DIR: appDir, PACK_DIR: join(work, 'pack') });
    await ensureBuilt(cleanEnv(), () => {
      for (const line of runs.slice(buildAt + 1)) run(line, ROOT, args);
    });

    // The deps stage: its RUN lines in the unpacked package (its WORKDIR).
    expect(argsOf(deps, 'WORKDIR')).toEqual(['/app']);
    for (const line of argsOf(deps, 'RUN')) run(line, appDir, cleanEnv());

    // The runtime stage: ENTRYPOINT + CMD with its ENV; the data directory and ports moved.
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    runtimeEnv = cleanEnv({
      ...envOf(runtime),
      GATEHOUSE_DATA_DIR: dataDir,
      PORT: String(port),
      MEDIA_PORT: String(await freePort()),
      GATEHOUSE_METRICS_PORT: '0',
      GATEHOUSE_BOOTSTRAP_API_KEY: API_KEY,
      GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY: MANAGEMENT_KEY,
      OPENAI_BASE_URL: `${mock.url}/v1`,
      OPENAI_API_KEY: PROVIDER_KEY,
      // The test's own keep-alive connections need not hold the stop below for the default 20 s.
      GATEHOUSE_SHUTDOWN_GRACE_MS: '2000',
    });
    const argv = [...execForm(onlyArgs(runtime, 'ENTRYPOINT')), ...execForm(onlyArgs(runtime, 'CMD'))];
    expect(argv[0]).toBe('node');
    child = spawn(process.execPath, argv.slice(1), {
      cwd: appDir,
      env: runtimeEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const append = (b: Buffer) => {
      output = (output + b.toString('utf8')).slice(-65_536);
    };
    child.stdout?.on('data', append);
    child.stderr?.on('data', append);
    let exited = false;
    child.once('exit', () => {
      exited = true;
    });
    await waitFor(
      'the packaged gateway to answer /health',
      async () => {
        if (exited) throw new GiveUp(`the gateway exited:\n${output}`);
        return (await fetch(`${url}/health`)).status === 200;
      },
      { timeoutMs: 60_000, everyMs: 200 },
    ).catch((err) => {
      throw new Error(`${String(err)}\n--- output ---\n${output}`);
    });
  }, 1_500_000);

  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child?.once('exit', r));
      child.kill('SIGKILL');
      await gone;
    }
    await mock?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  }, 120_000);

  it('packs the built server and console, and no sources or tests', () => {
    expect(existsSync(join(appDir, 'dist/cli.js'))).toBe(true);
    expect(existsSync(join(appDir, 'dist/console/index.html'))).toBe(true);
    expect(existsSync(join(appDir, 'src'))).toBe(false);
    expect(existsSync(join(appDir, 'test'))).toBe(false);
    expect(existsSync(join(appDir, 'dist/cli.test.js'))).toBe(false);
    // Production dependencies only: a dev dependency is not installed.
    expect(existsSync(join(appDir, 'node_modules/fastify'))).toBe(true);
    expect(existsSync(join(appDir, 'node_modules/vitest'))).toBe(false);
    expect(existsSync(join(appDir, 'node_modules/typescript'))).toBe(false);
  });

  it('serves /health and /ready, and passes the image HEALTHCHECK', async () => {
    const health = await fetch(`${url}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    expect((await fetch(`${url}/ready`)).status).toBe(200);
    const argv = execForm(onlyArgs(runtime, 'HEALTHCHECK'));
    expect(argv[0]).toBe('node');
    const r = spawnSync(process.execPath, argv.slice(1), { cwd: appDir, env: runtimeEnv, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
  });

  it('keeps its state in the data directory it is given', () => {
    expect(existsSync(join(dataDir, 'gatehouse.db'))).toBe(true);
    expect(existsSync(join(dataDir, 'master.key'))).toBe(true);
    expect(existsSync(join(appDir, 'data'))).toBe(false);
  });

  it('serves a first call through the configured provider', async () => {
    const res = await fetch(`${url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'openai/gpt-4o-mini',
        messages: [{ role: 'user', content: 'hello image' }],
      }),
    });
    const body = (await res.json()) as { choices?: { message: { content: string } }[] };
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body.choices?.[0]?.message.content).toBe('Hello from gpt-4o-mini!');
    const upstream = mock.requests.filter((r) => r.format === 'openai-chat');
    expect(upstream).toHaveLength(1);
    const [call] = upstream;
    expect(call?.headers.authorization).toBe(`Bearer ${PROVIDER_KEY}`);
    expect(JSON.stringify(call?.body.messages)).toContain('hello image');
  });

  it('logs in production mode, as JSON, without the keys it was given', () => {
    expect(runtimeEnv.NODE_ENV).toBe('production');
    expect(runtimeEnv.MALLOC_ARENA_MAX).toBe('2');
    const lines = output.split('\n').filter((l) => l.startsWith('{'));
    expect(lines.length).toBeGreaterThan(0);
    for (const secret of [API_KEY, MANAGEMENT_KEY, PROVIDER_KEY]) expect(output).not.toContain(secret);
    expect(readFileSync(join(appDir, 'package.json'), 'utf8')).toContain('"name": "gatehouse"');
  });

  it('stops on SIGTERM (what `docker stop` and Kubernetes send) with exit code 0', async () => {
    const proc = child as ChildProcess;
    const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
    proc.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 60_000);
});
