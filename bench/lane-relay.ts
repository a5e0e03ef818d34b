/**
 * CPU per stream of a lane's relay stage alone, event path against byte path, in one process: the
 * benchmark mock's streamed answers (`bench/mock-upstream.ts`, the whole stream in one read, as the
 * mock sends it) fed through `relayStream` with the adapter's tap, and each frame handed on as the
 * socket write would take it (a string encoded to UTF-8, a Buffer as it is). The gateway around it
 * (auth, routing, accounting, the response) is the same on both paths and left out: this says how
 * many µs per stream the byte relay takes off, which the in-process A/B (bench/inproc-ab.ts) can
 * only see as a ratio of the whole call.
 *
 *   npx tsx bench/lane-relay.ts            # BENCH_K rounds (default 6) of BENCH_N streams (20,000)
 */
import { CallAbort } from '../src/lib/call-abort.js';
import { messagesStreamTap } from '../src/providers/anthropic/lane.js';
import { ArrivingBody } from '../src/providers/arriving-body.js';
import { relayStream } from '../src/providers/lane.js';
import { chatStreamTap } from '../src/providers/openai/lane.js';
import { messageFrames, streamFrames } from './mock-upstream.js';

const K = Number(process.env.BENCH_K ?? 6);
const N = Number(process.env.BENCH_N ?? 20_000);
const signal = new CallAbort();

const cases = {
  messages: { bytes: Buffer.concat(messageFrames('claude-x')), tap: () => messagesStreamTap([]) },
  chat: { bytes: Buffer.concat(streamFrames('gpt-x')), tap: () => chatStreamTap([]) },
};

let sink = 0;
async function stream(bytes: Buffer, tap: () => ReturnType<typeof chatStreamTap>, asBytes: boolean) {
  const body = new ArrivingBody(() => {});
  body.push(bytes, () => {});
  body.end();
  const res = { status: 200, headers: {}, body };
  for await (const f of relayStream(res, signal, [], tap(), asBytes))
    sink += typeof f.frame === 'string' ? Buffer.from(f.frame).length : f.frame.length;
}

async function round(c: (typeof cases)['chat'], asBytes: boolean): Promise<number> {
  const t = process.cpuUsage();
  for (let i = 0; i < N; i++) await stream(c.bytes, c.tap, asBytes);
  const d = process.cpuUsage(t);
  return (d.user + d.system) / N;
}

for (const [name, c] of Object.entries(cases)) {
  // Warm both paths first.
  await round(c, false);
  await round(c, true);
  const ratios: number[] = [];
  const ev: number[] = [];
  const by: number[] = [];
  for (let k = 0; k < K; k++) {
    const e = await round(c, false);
    const b = await round(c, true);
    ev.push(e);
    by.push(b);
    ratios.push(b / e);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  console.log(
    `${name}: events ${median(ev).toFixed(2)} µs/stream, bytes ${median(by).toFixed(2)} µs/stream, ` +
      `bytes/events ${median(ratios).toFixed(3)} (rounds ${ratios.map((r) => r.toFixed(2)).join(' ')})`,
  );
}
if (sink < 0) console.log(sink);
