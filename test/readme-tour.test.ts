/**
 * The README's tour, run as written: its first block starts Gatehouse (`npm start`, with the
 * variables it exports; `npm ci` is left out — this checkout is installed), the others run in one
 * bash session against it, in order, and what they print is checked. Only the addresses move: the
 * tour's ports (8080, 8081, 9464) become free ones, in the blocks and in the server's environment,
 * and the data directory is a temporary one. `set -euo pipefail` makes a failing command fail the test.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from './support/build.js';
import { freePort, GiveUp, waitFor } from './support/processes.js';

const ROOT = resolve(import.meta.dirname, '..');

/** The ```sh blocks of the README's "A tour" section, in order. */
function tourBlocks(readme: string): string[] {
  const start = readme.indexOf('\n## A tour\n');
  if (start < 0) throw new Error('README.md has no "## A tour" section');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
}

/**
 * What a block printed, taken apart: `curl -s` ends no line, so JSON answers run into each other and
 * into the next command's text. `json`: every top-level JSON object in order; `text`: the rest.
 */
function taken(out: string): { json: any[]; text: string } {
  const json: unknown[] = [];
  let text = '';
  let i = 0;
  while (i < out.length) {
    if (out[i] !== '{') {
      text += out[i];
      i++;
      continue;
    }
    let depth = 0;
    let inString = false;
    let j = i;
    for (; j < out.length; j++) {
      const c = out[j];
      if (inString) {
        if (c === '\\') j++;
        else if (c === '"') inString = false;
      } else if (c === '"') inString = true;
      else if (c === '{') depth++;
      else if (c === '}' && --depth === 0) break;
    }
    try {
      json.push(JSON.parse(out.slice(i, j + 1)));
      i = j + 1;
    } catch {
      // Braces that are not JSON (Prometheus labels): text.
      text += out[i];
      i++;
    }
  }
  return { json, text };
}

const blocks = tourBlocks(readFileSync(join(ROOT, 'README.md'), 'utf8'));
const [startBlock = '', ...tour] = blocks;

/** Our environment without Gatehouse's settings or provider keys: the README's are all the server gets. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
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

describe("the README's tour", () => {
  let dataDir: string;
  let server: ChildProcess | null = null;
  let serverOutput = '';
  let ports: { gateway: number; media: number; metrics: number };
  /** Each tour block's output, and the exit status of the whole session. */
  let outputs: string[] = [];
  let status: number | null = null;
  let stderr = '';
  const apiKey = /GATEHOUSE_BOOTSTRAP_API_KEY=(\S+)/.exec(startBlock)?.[1] ?? '';

  /** The tour's addresses moved to the free ports. */
  const moved = (text: string) =>
    text
      .replaceAll(':8080', `:${ports.gateway}`)
      .replaceAll(':8081', `:${ports.media}`)
      .replaceAll(':9464', `:${ports.metrics}`);

  beforeAll(async () => {
    ports = { gateway: await freePort(), media: await freePort(), metrics: await freePort() };
    dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-tour-'));
    const lines = startBlock.trimEnd().split('\n');
    // The start block exports the tour's keys, then installs and starts: this checkout is installed.
    expect(lines.at(-1)).toBe('npm ci && npm start');
    const script = [...lines.slice(0, -1), 'exec npm start'].join('\n');
    // `npm start` builds what is stale first; built here, under the lock the parallel test files share.
    await ensureBuilt(cleanEnv({}));
    server = spawn('bash', ['-c', script], {
      cwd: ROOT,
      env: cleanEnv({
        PORT: String(ports.gateway),
        MEDIA_PORT: String(ports.media),
        GATEHOUSE_METRICS_PORT: String(ports.metrics),
        GATEHOUSE_DATA_DIR: dataDir,
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group: npm start's children stop with it.
      detached: true,
    });
    const append = (b: Buffer) => {
      serverOutput = (serverOutput + b.toString('utf8')).slice(-65_536);
    };
    server.stdout?.on('data', append);
    server.stderr?.on('data', append);
    let exited = false;
    server.once('exit', () => {
      exited = true;
    });
    // `npm start` builds first when the sources changed since the last build: minutes on a slow machine.
    await waitFor(
      'the tour gateway and media service to answer',
      async () => {
        if (exited) throw new GiveUp('npm start exited');
        const [g, m] = await Promise.all([
          fetch(`http://127.0.0.1:${ports.gateway}/health`),
          fetch(`http://127.0.0.1:${ports.media}/health`),
        ]);
        return g.status === 200 && m.status === 200;
      },
      { timeoutMs: 600_000, everyMs: 250 },
    ).catch((err) => {
      throw new Error(`${String(err)}\n--- output ---\n${serverOutput}`);
    });

    const session = ['set -euo pipefail'];
    tour.forEach((block, i) => {
      session.push(`echo '@@@ block ${i} @@@'`, moved(block), 'echo');
    });
    const r = spawnSync('bash', ['-c', session.join('\n')], {
      cwd: dataDir,
      env: cleanEnv({}),
      encoding: 'utf8',
      timeout: 300_000,
    });
    status = r.status;
    stderr = r.stderr;
    outputs = r.stdout.split(/@@@ block \d+ @@@\n/).slice(1);
  }, 900_000);

  afterAll(async () => {
    if (server?.pid && server.exitCode === null && server.signalCode === null) {
      const gone = new Promise((r) => server?.once('exit', r));
      process.kill(-server.pid, 'SIGTERM');
      await gone;
    }
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it('has its start block and seven more, all of which run without a failing command', () => {
    expect(tour).toHaveLength(7);
    expect(stderr).toBe('');
    expect(status, `${outputs.join('\n---\n')}\n${stderr}`).toBe(0);
    expect(outputs).toHaveLength(tour.length);
  });

  it('checks liveness, readiness and metrics', () => {
    const { json, text } = taken(outputs[0] ?? '');
    expect(json.slice(0, 2)).toEqual([{ status: 'ok' }, { status: 'ready' }]);
    expect(text).toMatch(
      /^gatehouse_http_requests_total\{method="GET",route="\/health",status_code="200"\} \d+$/m,
    );
  });

  it('calls the development model in three formats, streamed too, and counts tokens', () => {
    const out = outputs[1] ?? '';
    const { json } = taken(out);
    const completions = json.filter((j) => j.object === 'chat.completion');
    expect(completions).toHaveLength(1);
    expect(completions[0].choices[0].message.content).toBe('hello gatehouse');
    const chunks = json.filter((j) => j.object === 'chat.completion.chunk');
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('stream this');
    expect(out).toContain('data: [DONE]');
    const message = json.find((j) => j.type === 'message');
    expect(message.content[0].text).toBe('hello from Anthropic format');
    const response = json.find((j) => j.object === 'response');
    expect(response.status).toBe('completed');
    expect(JSON.stringify(response.output)).toContain('hello from Responses');
    const count = json.at(-1);
    expect(count).toMatchObject({ estimated: true });
    expect(count.input_tokens).toBeGreaterThan(0);
  });

  it('shows how a call was served, and finds the generation it recorded', () => {
    const { json, text } = taken(outputs[2] ?? '');
    expect(text).toMatch(/^x-gatehouse-route: translated$/m);
    expect(text).toMatch(/^x-gatehouse-provider: gatehouse$/m);
    expect(json).toHaveLength(1);
    expect(json[0].data).toMatchObject({ model: 'gatehouse/echo', status: 'success' });
    expect(json[0].data.id).toMatch(/^gen-/);
  });

  it('continues a stored response, deletes it, and lists the catalog', () => {
    const { json, text } = taken(outputs[3] ?? '');
    const [next, deleted] = json;
    expect(next.previous_response_id).toMatch(/^resp_/);
    expect(JSON.stringify(next.output)).toContain('what did I ask you to remember?');
    expect(deleted).toMatchObject({ id: next.previous_response_id, deleted: true });
    expect(text.split('\n')).toContain('gatehouse/echo');
  });

  it('creates a key and a guardrail that refuses the development model for it', () => {
    const { json, text } = taken(outputs[4] ?? '');
    expect(json[0]).toEqual({ assigned_count: 1 });
    expect(json[1].error.code).toBe(403);
    expect(json[1].error.message).toContain('team budget');
    const keys = text.split('\n').filter(Boolean);
    expect(keys.some((l) => /^ci sk-gh-v1-\w+\.\.\.\w+$/.test(l))).toBe(true);
    // The new key itself is never printed: it stays in the shell's variable.
    expect(text).not.toMatch(/sk-gh-v1-[0-9a-f]{20}/);
  });

  it('stores a provider key without showing it again, and grants credits', () => {
    const out = outputs[5] ?? '';
    expect(out).not.toContain('sk-my-openai-key-1234567890');
    const { json } = taken(out);
    expect(json).toHaveLength(3);
    expect(json[0].data).toMatchObject({ provider: 'openai', label: 'sk-my-...890' });
    expect(json[1].data).toMatchObject({ amount_usd: 25 });
    expect(json[2].data.total_credits).toBe(25);
  });

  it('runs a batch on the in-process worker and generates an image', async () => {
    const out = outputs[6] ?? '';
    const { json, text } = taken(out);
    expect(text).toMatch(/^(validating|in_progress|finalizing|completed) $/m);
    const image = json.at(-1);
    expect(image.success).toBe(true);
    const url: string = image.data.outputs[0].url;
    expect(url.startsWith(`http://localhost:${ports.media}/files/`)).toBe(true);
    expect((await fetch(url.replace('localhost', '127.0.0.1'))).status).toBe(200);
    if (/^completed $/m.test(text)) {
      expect(json[0]).toEqual({ completed: 2, failed: 0, total: 2 });
      const results = json.filter((j) => j.custom_id);
      expect(results.map((r) => [r.custom_id, r.response.body.choices[0].message.content])).toEqual([
        ['q1', 'one'],
        ['q2', 'two'],
      ]);
    } else {
      // The tour waits two seconds; a slow machine may take longer to finish the batch.
      await waitFor(
        'the batch to complete',
        async () => {
          const r = await fetch(`http://127.0.0.1:${ports.gateway}/api/v1/batches`, {
            headers: { authorization: `Bearer ${apiKey}` },
          });
          return ((await r.json()) as { data: { status: string }[] }).data[0]?.status === 'completed';
        },
        { timeoutMs: 60_000 },
      );
    }
  });
});
