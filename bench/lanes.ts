/**
 * The `lanes` scenario of `npm run bench` (bench/run.ts): Gatehouse's pass-through lanes beside its
 * translations, the floor proxy and Portkey, for each caller format:
 *
 * - `/messages`: Anthropic Messages → `bench/claude` on the `anthropic` provider (the lane) or
 *   `bench/fast` on the `openai-compatible` one (translated); `direct` is the mock's `/v1/messages`.
 * - `/chat/completions`: Chat Completions → `bench/fast` (the lane) or `bench/claude` (translated);
 *   `direct` is the mock's `/v1/chat/completions`.
 *
 * Each lane is measured non-streaming and streaming at concurrency 1 and 64, its targets interleaved
 * round by round (bench/other-scenarios.ts `measureGroup`); with BENCH_BASELINE, another build's
 * lanes too (`baseline (lane)`: an A/B of a change in one run). Before that, every target's first call is
 * checked: status, shape, Gatehouse's `x-gatehouse-route` (passthrough / translated), and a stream's
 * last event. The report states the targets as ratios of this run (`lanesSection`).
 */
import { request } from 'undici';
import { type LoadTarget, measureGroup, messagesBody, type OtherCell } from './other-scenarios.js';
import { log } from './processes.js';

export type Mode = 'json' | 'stream';
type RowName =
  | 'direct'
  | 'floor'
  | 'gatehouse (lane)'
  | 'baseline (lane)'
  | 'gatehouse (translated)'
  | 'portkey';
type LaneName = '/messages' | '/chat/completions';

/** The processes the lanes are measured through (null: not running in this run). */
export interface LaneSetup {
  mock: { port: number; pid: number; baseUrl: string };
  gatehouse: { origin: string; pid?: number; headers: Record<string, string> };
  floor: { port: number; pid: number } | null;
  portkey: { origin: string; pid: number } | null;
  /** Another build (BENCH_BASELINE), its lanes measured beside Gatehouse's as `baseline (lane)`. */
  baseline: { origin: string; pid?: number } | null;
  /** Whether the translated rows are measured (BENCH_LANES_TRANSLATED=0 leaves them out). */
  translated: boolean;
  modes: Mode[];
  concurrencies: number[];
  rounds: number;
  durationMs: number;
  warmupMs: number;
  prewarmMs: number;
}

export interface LaneCell extends OtherCell {
  lane: LaneName;
  mode: Mode;
  row: RowName;
}

/** Target (b): a lane stream's frames compared, position by position, with the upstream's own. */
export interface FrameCheck {
  lane: LaneName;
  frames: number;
  identical: number;
  /** The frames that differ, shortened; those that only gained Gatehouse's cost are marked. */
  differing: { upstream: string; relayed: string; costAdded: boolean }[];
}

export interface LanesResult {
  cells: LaneCell[];
  frames: FrameCheck[];
  /** Rows left out (Portkey when its first call fails), with why: shown in the table. */
  skipped: { lane: LaneName; row: RowName; why: string }[];
}

const chatBody = (model: string, stream: boolean) =>
  JSON.stringify({
    model,
    messages: [{ role: 'user', content: 'Say hello to the benchmark.' }],
    max_tokens: 16,
    ...(stream ? { stream: true } : {}),
  });

const anthropicBody = (model: string, stream: boolean) =>
  stream ? JSON.stringify({ ...JSON.parse(messagesBody(model)), stream: true }) : messagesBody(model);

const MESSAGE_STOP = 'event: message_stop';
const DONE = 'data: [DONE]';

interface Row {
  name: RowName;
  origin: string;
  path: string;
  headers: Record<string, string>;
  model: string;
  pid?: number;
  /** Gatehouse's x-gatehouse-route for this row. */
  route?: 'passthrough' | 'translated';
}

/** A lane's rows: `direct`, floor and Portkey speak the lane's own format to the mock; Gatehouse twice (lane, translated). */
function laneRows(lane: LaneName, s: LaneSetup): Row[] {
  const messages = lane === '/messages';
  const mockOrigin = `http://127.0.0.1:${s.mock.port}`;
  const upstreamAuth: Record<string, string> = messages
    ? { 'x-api-key': 'sk-bench-upstream', 'anthropic-version': '2023-06-01' }
    : { authorization: 'Bearer sk-bench-upstream' };
  const json = { 'content-type': 'application/json' };
  const [laneModel, otherModel] = messages ? ['bench/claude', 'bench/fast'] : ['bench/fast', 'bench/claude'];
  const upstreamModel = laneModel.slice('bench/'.length);
  const v1 = messages ? '/v1/messages' : '/v1/chat/completions';
  const rows: Row[] = [
    {
      name: 'direct',
      origin: mockOrigin,
      path: v1,
      headers: { ...json, ...upstreamAuth },
      model: upstreamModel,
    },
  ];
  if (s.floor)
    rows.push({
      name: 'floor',
      origin: `http://127.0.0.1:${s.floor.port}`,
      path: v1,
      headers: json,
      model: laneModel,
      pid: s.floor.pid,
    });
  const gh = {
    origin: s.gatehouse.origin,
    path: `/api${v1}`,
    headers: s.gatehouse.headers,
    pid: s.gatehouse.pid,
  };
  rows.push({ name: 'gatehouse (lane)', ...gh, model: laneModel, route: 'passthrough' });
  if (s.baseline)
    rows.push({
      name: 'baseline (lane)',
      ...gh,
      origin: s.baseline.origin,
      pid: s.baseline.pid,
      model: laneModel,
      route: 'passthrough',
    });
  if (s.translated)
    rows.push({ name: 'gatehouse (translated)', ...gh, model: otherModel, route: 'translated' });
  if (s.portkey)
    rows.push({
      name: 'portkey',
      origin: s.portkey.origin,
      path: v1,
      headers: {
        ...json,
        ...upstreamAuth,
        'x-portkey-provider': messages ? 'anthropic' : 'openai',
        'x-portkey-custom-host': s.mock.baseUrl,
      },
      model: upstreamModel,
      pid: s.portkey.pid,
    });
  return rows;
}

const bodyOf = (lane: LaneName, model: string, stream: boolean) =>
  lane === '/messages' ? anthropicBody(model, stream) : chatBody(model, stream);

async function call(r: Row, lane: LaneName, stream: boolean) {
  const res = await request(`${r.origin}${r.path}`, {
    method: 'POST',
    headers: r.headers,
    body: bodyOf(lane, r.model, stream),
  });
  return { status: res.statusCode, route: res.headers['x-gatehouse-route'], text: await res.body.text() };
}

/** A row's first call in `mode`: null when right, else what is wrong. */
async function check(r: Row, lane: LaneName, mode: Mode): Promise<string | null> {
  const stream = mode === 'stream';
  const got = await call(r, lane, stream).catch((err: Error) => ({
    status: 0,
    route: '',
    text: err.message,
  }));
  if (got.status !== 200) return `HTTP ${got.status} ${got.text.slice(0, 200)}`;
  if (r.route && got.route !== r.route) return `x-gatehouse-route is ${got.route}, expected ${r.route}`;
  const end = lane === '/messages' ? MESSAGE_STOP : DONE;
  if (stream) return got.text.includes(end) ? null : `the stream has no ${end}: ${got.text.slice(-200)}`;
  const b = JSON.parse(got.text) as { type?: string; object?: string };
  const ok = lane === '/messages' ? b.type === 'message' : b.object === 'chat.completion';
  return ok ? null : `not a ${lane} answer: ${got.text.slice(0, 200)}`;
}

/** SSE frames of a body (split at the blank line that ends each). */
const framesOf = (text: string) => text.split('\n\n').filter((f) => f.trim() !== '');

/** Target (b): the lane's stream against the same call made to the mock directly. */
async function compareFrames(lane: LaneName, rows: Row[]): Promise<FrameCheck> {
  const direct = rows.find((r) => r.name === 'direct') as Row;
  const viaLane = rows.find((r) => r.name === 'gatehouse (lane)') as Row;
  const up = framesOf((await call(direct, lane, true)).text);
  const relayed = framesOf((await call(viaLane, lane, true)).text);
  const differing: FrameCheck['differing'] = [];
  for (let i = 0; i < Math.max(up.length, relayed.length); i++) {
    const [u, g] = [up[i] ?? '', relayed[i] ?? ''];
    if (u === g) continue;
    differing.push({
      upstream: u.slice(0, 120),
      relayed: g.slice(0, 120),
      costAdded: u !== '' && !u.includes('"cost"') && g.includes('"cost"'),
    });
  }
  return { lane, frames: up.length, identical: up.length - differing.length, differing };
}

/** Checks every row, then measures each lane × mode as one interleaved group. */
export async function measureLanes(s: LaneSetup): Promise<LanesResult> {
  const cells: LaneCell[] = [];
  const frames: FrameCheck[] = [];
  const skipped: LanesResult['skipped'] = [];
  for (const lane of ['/messages', '/chat/completions'] as const) {
    const rows = laneRows(lane, s);
    const usable: Row[] = [];
    for (const r of rows) {
      const problems = (await Promise.all(s.modes.map((m) => check(r, lane, m)))).filter(Boolean);
      if (!problems.length) usable.push(r);
      else if (r.name === 'portkey') {
        skipped.push({ lane, row: r.name, why: problems[0] as string });
        log(`lanes ${lane}: Portkey not measured: ${problems[0]}`);
      } else throw new Error(`lanes ${lane} ${r.name}: ${problems[0]}`);
    }
    if (s.modes.includes('stream')) frames.push(await compareFrames(lane, usable));
    for (const mode of s.modes) {
      const group: LoadTarget[] = usable.map((r) => ({
        scenario: `lanes ${lane} ${mode}`,
        target: r.name,
        origin: r.origin,
        path: r.path,
        method: 'POST',
        headers: r.headers,
        body: bodyOf(lane, r.model, mode === 'stream'),
        stream: mode === 'stream',
        streamEnd: lane === '/messages' ? MESSAGE_STOP : DONE,
        reference: r.name === 'direct',
        pid: r.name === 'direct' ? s.mock.pid : r.pid,
      }));
      const measured = await measureGroup(group, s.concurrencies, s);
      cells.push(...measured.map((c) => ({ ...c, lane, mode, row: c.target as RowName })));
    }
  }
  return { cells, frames, skipped };
}
