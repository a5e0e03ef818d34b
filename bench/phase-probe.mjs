/**
 * Preloaded into a gateway process (`node --import <this file> …`) by bench/phases.ts: times each
 * call's phases from Node's own diagnostics channels, without a line of the gateway changed —
 *
 *   http.server.request.start   the request has arrived (headers parsed)
 *   undici:request:create       the upstream request is created (undici is the client of Gatehouse
 *                               and of the floor proxy)
 *   undici:request:trailers     the upstream's answer is complete
 *   http.server.response.finish the response is written
 *
 * pre = arrival → upstream request, upstream = the upstream's round trip, post = upstream answer →
 * response written; pre + post is what the call costs in the gateway's own process. A call that
 * overlaps another one is not counted (the probe is for concurrency 1, where phases are sequential).
 * On SIGUSR2 it writes the calls counted since the previous signal (their medians and p90s, µs) to
 * BENCH_PHASES_FILE as one JSON object, and starts afresh.
 */
import { subscribe } from 'node:diagnostics_channel';
import { renameSync, writeFileSync } from 'node:fs';

const file = process.env.BENCH_PHASES_FILE;
if (!file) throw new Error('bench/phase-probe.mjs: BENCH_PHASES_FILE is not set');

const now = () => process.hrtime.bigint();
/** Requests started and not finished. */
let open = 0;
/** The call being timed (null when none, or when it overlaps another). */
let call = null;
let samples = { pre: [], upstream: [], post: [], inProcess: [] };
let discarded = 0;

subscribe('http.server.request.start', () => {
  open++;
  if (call) discarded++;
  call = open === 1 ? { start: now(), created: 0n, answered: 0n } : null;
});
subscribe('undici:request:create', () => {
  if (call && !call.created) call.created = now();
});
subscribe('undici:request:trailers', () => {
  if (call?.created && !call.answered) call.answered = now();
});
subscribe('http.server.response.finish', () => {
  open = Math.max(0, open - 1);
  if (!call?.answered) return;
  const end = now();
  const us = (ns) => Number(ns) / 1000;
  const pre = us(call.created - call.start);
  const post = us(end - call.answered);
  samples.pre.push(pre);
  samples.upstream.push(us(call.answered - call.created));
  samples.post.push(post);
  samples.inProcess.push(pre + post);
  call = null;
});

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? null;

process.on('SIGUSR2', () => {
  const out = { calls: samples.pre.length, discarded };
  for (const [name, values] of Object.entries(samples)) {
    const sorted = Float64Array.from(values).sort();
    out[name] = { p50: percentile(sorted, 0.5), p90: percentile(sorted, 0.9) };
  }
  // Whole or not at all: the reader polls for the file.
  writeFileSync(`${file}.tmp`, JSON.stringify(out));
  renameSync(`${file}.tmp`, file);
  samples = { pre: [], upstream: [], post: [], inProcess: [] };
  discarded = 0;
});
