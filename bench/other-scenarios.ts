/**
 * The Gatehouse-only scenarios of `npm run bench` (bench/run.ts), selected with BENCH_SCENARIOS:
 *
 * - `messages`: `POST /api/v1/messages` (Anthropic Messages, non-streaming) for `bench/fast`, which an
 *   OpenAI-compatible provider (the mock) serves: the translation cost, "added" over the direct
 *   non-streaming OpenAI call to the mock.
 * - `policy`: non-streaming chat completions with an API key that has a guardrail assigned
 *   (allowed_models, content filter: builtin `email` + a custom pattern, both `redact`), on a body
 *   that really contains an email address and the pattern: the policy cost, "added" as above.
 * - `mgmt-read`: `GET /api/v1/guardrails/{id}` with the management key, on SQLite and on PostgreSQL
 *   (a second gateway on a fresh database `bench_<random>`, dropped afterwards).
 *
 * The two inference scenarios are measured interleaved with the direct call, round by round, like
 * the chat scenarios; the two management-read targets are interleaved with each other.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { request } from 'undici';
import { type LoadResult, runLoad, type Summary, summarize } from './loadgen.js';
import { log, measuring, type ProcessUse, poolUse, post, processCells } from './processes.js';

export const SCENARIO_NAMES = ['chat', 'lanes', 'messages', 'policy', 'mgmt-read', 'workers'] as const;
export type ScenarioName = (typeof SCENARIO_NAMES)[number];

export const MANAGEMENT_KEY = `sk-gh-v1-${randomBytes(32).toString('hex')}`;

/** One measured thing of the "Other scenarios" table. */
export interface LoadTarget {
  scenario: string;
  target: string;
  origin: string;
  path: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body: string;
  /** A streamed call, a success when its last chunk holds `streamEnd` (loadgen's default: `data: [DONE]`). */
  stream?: boolean;
  streamEnd?: string;
  /** The direct-to-mock reference of the same request (for "added"); not itself a row. */
  reference?: boolean;
  /** The process serving it (its CPU and peak RSS are reported). */
  pid?: number;
}

export interface OtherCell {
  scenario: string;
  target: string;
  concurrency: number;
  requests: number;
  errors: number;
  firstError: string | null;
  rps: number;
  total: Summary;
  /** Request to first body byte. */
  ttfb: Summary;
  /** The percentiles minus the direct call's at the same concurrency (µs; streams: of the TTFB); null when not applicable. */
  added: { p50: number; p90: number; p99: number } | null;
  /** The serving process: cores busy (mean over rounds), CPU per request, peak RSS (max). */
  cpuCores: number | null;
  cpuUsPerRequest: number | null;
  peakRssMB: number | null;
  rounds: { rps: number; p50: number; p99: number; errors: number }[];
}

const mgmtHeaders = { authorization: `Bearer ${MANAGEMENT_KEY}` };

async function mgmt(origin: string, path: string, body: unknown) {
  const r = await post(origin, `/api/v1${path}`, mgmtHeaders, body);
  if (r.status !== 200 && r.status !== 201)
    throw new Error(`POST ${path} on ${origin}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
  return JSON.parse(r.text) as { key?: string; data: { id: string; hash?: string } };
}

/** The guardrail of the `policy` scenario (also what `mgmt-read` reads). */
export const GUARDRAIL = {
  name: 'bench policy',
  description: 'allowed_models + content filter (email and a custom pattern, redact)',
  allowed_models: ['bench/fast'],
  content_filter_builtins: [{ slug: 'email', action: 'redact' }],
  content_filters: [{ pattern: '\\bproject-x\\b', action: 'redact', label: 'Code name' }],
};

export const createGuardrail = async (origin: string) =>
  (await mgmt(origin, '/guardrails', GUARDRAIL)).data.id;

/** A fresh API key with GUARDRAIL assigned to it, through the management API. */
export async function keyWithGuardrail(origin: string) {
  const key = await mgmt(origin, '/keys', { name: 'bench policy key' });
  const guardrailId = await createGuardrail(origin);
  await mgmt(origin, `/guardrails/${guardrailId}/assignments/keys`, { key_hashes: [key.data.hash] });
  if (!key.key) throw new Error('POST /keys returned no key');
  return { apiKey: key.key, guardrailId };
}

export const messagesBody = (model: string) =>
  JSON.stringify({
    model,
    max_tokens: 16,
    messages: [{ role: 'user', content: 'Say hello to the benchmark.' }],
  });

export const policyBody = (model: string) =>
  JSON.stringify({
    model,
    messages: [{ role: 'user', content: 'Say hello to ada@example.com about project-x.' }],
    max_tokens: 16,
  });

/** One call of each scenario, checked for content (the policy one: both filters redacted). */
export async function checkTarget(t: LoadTarget) {
  const res = await request(`${t.origin}${t.path}`, {
    method: t.method,
    headers: { 'content-type': 'application/json', ...t.headers },
    body: t.method === 'POST' ? t.body : undefined,
  });
  const text = await res.body.text();
  const where = `${t.scenario} ${t.target}`;
  if (res.statusCode !== 200) throw new Error(`${where}: HTTP ${res.statusCode} ${text.slice(0, 300)}`);
  if (t.reference) return;
  const b = JSON.parse(text);
  if (t.scenario === 'messages') {
    if (b.type !== 'message' || !String(b.content?.[0]?.text ?? '').includes('benchmark mock'))
      throw new Error(`${where}: not an Anthropic message: ${text.slice(0, 300)}`);
  } else if (t.scenario === 'policy') {
    // The mock echoes nothing; the gateway reports what its filters did in safeguard_results.
    const statuses = (b.safeguard_results ?? []).map((r: { status?: { type?: string } }) => r.status?.type);
    if (statuses.length < 2 || statuses.some((s: unknown) => s !== 'redacted'))
      throw new Error(`${where}: expected two redactions in safeguard_results: ${text.slice(0, 500)}`);
    if (text.includes('ada@example.com'))
      throw new Error(`${where}: the email address leaked into the response`);
  } else if (t.scenario === 'mgmt-read') {
    if (b.data?.name !== GUARDRAIL.name)
      throw new Error(`${where}: unexpected guardrail ${text.slice(0, 300)}`);
  }
}

/** A fresh PostgreSQL database for the `mgmt-read` PostgreSQL row; an error message when unreachable. */
export async function freshPostgresDatabase(
  serverUrl: string,
): Promise<{ url: string; drop: () => Promise<void> } | { error: string }> {
  const name = `bench_${randomBytes(6).toString('hex')}`;
  const admin = () => new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 3000 });
  try {
    const c = admin();
    await c.connect();
    try {
      await c.query(`create database ${name}`);
    } finally {
      await c.end();
    }
  } catch (err) {
    return {
      error: `PostgreSQL at ${serverUrl.replace(/\/\/[^@]*@/, '//…@')} not usable: ${(err as Error).message}`,
    };
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = admin();
      await c.connect();
      try {
        await c.query(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** One measure's samples of every round, in one array. */
function pooled(runs: LoadResult[], pick: (r: LoadResult) => Float64Array): Float64Array {
  const all = new Float64Array(runs.reduce((k, r) => k + pick(r).length, 0));
  let at = 0;
  for (const r of runs) {
    all.set(pick(r), at);
    at += pick(r).length;
  }
  return all;
}

function pool(
  t: LoadTarget,
  concurrency: number,
  runs: LoadResult[],
  uses: (ProcessUse | null)[],
): OtherCell {
  const requests = runs.reduce((k, r) => k + r.requests, 0);
  const ms = runs.reduce((k, r) => k + r.durationMs, 0);
  const rps = Math.round((requests / ms) * 1000);
  return {
    scenario: t.scenario,
    target: t.target,
    concurrency,
    requests,
    errors: runs.reduce((k, r) => k + r.errors, 0),
    firstError: runs.find((r) => r.firstError)?.firstError ?? null,
    rps,
    total: summarize(pooled(runs, (r) => r.samples.total)),
    ttfb: summarize(pooled(runs, (r) => r.samples.ttfb)),
    added: null,
    ...poolUse(uses, rps),
    rounds: runs.map((r) => ({ rps: r.rps, p50: r.total.p50, p99: r.total.p99, errors: r.errors })),
  };
}

/**
 * Warms every non-reference target up (discarded), then measures the targets interleaved, round
 * by round, at each concurrency; rows get "added" over the group's reference target.
 */
export async function measureGroup(
  targets: LoadTarget[],
  concurrencies: number[],
  o: { rounds: number; durationMs: number; warmupMs: number; prewarmMs: number },
): Promise<OtherCell[]> {
  const load = (t: LoadTarget, concurrency: number, warmupMs: number, durationMs: number) =>
    measuring(t.pid, () =>
      runLoad({
        origin: t.origin,
        path: t.path,
        method: t.method,
        headers: t.headers,
        body: t.body,
        concurrency,
        warmupMs,
        durationMs,
        stream: t.stream === true,
        streamEnd: t.streamEnd,
      }),
    );
  for (const t of targets.filter((x) => !x.reference)) {
    await load(t, Math.max(...concurrencies), 0, o.prewarmMs / 2);
    log(`warmed up ${t.scenario} ${t.target}`);
  }
  const cells: OtherCell[] = [];
  for (const c of concurrencies) {
    const runs = new Map<LoadTarget, LoadResult[]>();
    const uses = new Map<LoadTarget, (ProcessUse | null)[]>();
    for (let round = 0; round < o.rounds; round++) {
      for (const t of targets) {
        const [r, use] = await load(t, c, o.warmupMs, o.durationMs);
        uses.set(t, [...(uses.get(t) ?? []), use]);
        const s = t.stream ? r.ttfb : r.total;
        log(
          `${t.scenario} c=${c} round ${round + 1} ${t.target}: p50 ${s.p50} µs p99 ${s.p99} µs ${r.rps} req/s${r.errors ? ` ${r.errors} errors (${r.firstError})` : ''}`,
        );
        runs.set(t, [...(runs.get(t) ?? []), r]);
      }
    }
    const measured = [...runs].map(([t, rs]) => ({ t, cell: pool(t, c, rs, uses.get(t) ?? []) }));
    const ref = measured.find((p) => p.t.reference)?.cell;
    for (const { t, cell } of measured) {
      const pick = (x: OtherCell) => (t.stream ? x.ttfb : x.total);
      if (ref && !t.reference)
        cell.added = {
          p50: pick(cell).p50 - pick(ref).p50,
          p90: pick(cell).p90 - pick(ref).p90,
          p99: pick(cell).p99 - pick(ref).p99,
        };
      cells.push(cell);
    }
  }
  return cells;
}

const fmt = (v: number) =>
  Number.isFinite(v) ? v.toLocaleString('en-US', { maximumFractionDigits: 0 }) : '–';

/** The "Other scenarios" table of the Markdown report. */
export function otherScenariosTable(cells: OtherCell[]): string[] {
  if (!cells.length) return [];
  const lines = [
    '## Other scenarios',
    '',
    'Gatehouse only, non-streaming, latency in µs (request to end of body). `direct` is the plain non-streaming OpenAI call to the mock at the same concurrency, measured interleaved with the rows below it; "added" = the row\'s percentile minus direct\'s. `messages`: `POST /api/v1/messages` (Anthropic format) served by the OpenAI-compatible mock (translation both ways). `policy`: chat completions with a key whose guardrail has allowed_models and a content filter (builtin email + a custom pattern, redact) on a prompt containing both. `mgmt-read`: `GET /api/v1/guardrails/{id}` with the management key. `workers`: chat completions on the pass-through lane through `serve` (one process) and `serve --workers 2` (CPU and peak RSS summed over the primary and its workers).',
    '',
    '| scenario | conc. | target | p50 µs | p90 µs | p99 µs | p50 added µs | p90 added µs | p99 added µs | req/s | CPU cores | CPU µs/req | peak RSS MB | errors |',
    '| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const x of cells) {
    const a = (k: 'p50' | 'p90' | 'p99') => (x.added ? fmt(x.added[k]) : '');
    lines.push(
      `| ${x.scenario} | ${x.concurrency} | ${x.target} | ${fmt(x.total.p50)} | ${fmt(x.total.p90)} | ${fmt(x.total.p99)} | ${a('p50')} | ${a('p90')} | ${a('p99')} | ${fmt(x.rps)} | ${processCells(x)} | ${x.errors} |`,
    );
  }
  lines.push('');
  return lines;
}
