/**
 * CPU per exported record of each destination type's encoding (off the response path, but on the
 * gateway's CPU): a batch of 100 records as the webhook's JSON body, as OTLP/protobuf and as
 * OTLP/JSON spans, without and with content (a 6-message conversation and a 1 KB answer). Rounds
 * alternate the encodings; each reports the median over rounds of process CPU µs per record.
 *
 *   npx tsx bench/export-encode.ts            (BENCH_ROUNDS, default 9; BENCH_BATCHES per round, 200)
 */
import { encodeSpans } from '../src/observability/otlp.js';
import type { ExportRecord } from '../src/observability/records.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const BATCHES = Number(process.env.BENCH_BATCHES ?? 200);
const BATCH = 100;

function record(i: number, content: boolean): ExportRecord {
  return {
    id: `gen-${i}-${Math.random().toString(36).slice(2)}`,
    created_at: new Date().toISOString(),
    workspace_id: '8d6f3c1e-0000-4000-8000-000000000001',
    model: 'openai/gpt-4.1-mini',
    requested_model: 'openai/gpt-4.1-mini',
    provider: 'openai',
    upstream_model: 'gpt-4.1-mini',
    status: 'success',
    http_status: 200,
    finish_reason: 'stop',
    usage: {
      prompt_tokens: 120,
      completion_tokens: 400,
      total_tokens: 520,
      reasoning_tokens: 0,
      cached_tokens: 0,
      cache_write_tokens: 0,
      web_search_requests: 0,
      estimated: false,
    },
    latency_ms: 812,
    generation_time_ms: 790,
    attempts: 1,
    error_message: null,
    cost: { total_usd: 0.0000688, prompt_usd: 0.0000048, completion_usd: 0.000064, is_byok: false },
    identity: { api_key_hash: 'ab'.repeat(32), user_id: 'u-1' },
    ...(content
      ? {
          content: {
            input: {
              messages: Array.from({ length: 6 }, (_, k) => ({
                role: k % 2 ? 'assistant' : 'user',
                content: `message ${k} `.repeat(20),
              })),
            },
            output: { completion: 'x'.repeat(1024), reasoning: null, tool_calls: null },
          },
        }
      : {}),
  } as ExportRecord;
}

const encoders: Record<string, (rs: ExportRecord[]) => unknown> = {
  webhook: (rs) => JSON.stringify({ type: 'generations', destination_id: 'd', data: rs }),
  'otlp-protobuf': (rs) => encodeSpans(rs, { type: 'otlp', encoding: 'protobuf' }),
  'otlp-json': (rs) => encodeSpans(rs, { type: 'otlp', encoding: 'json' }),
  'langfuse-protobuf': (rs) => encodeSpans(rs, { type: 'langfuse', encoding: 'protobuf' }),
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

for (const content of [false, true]) {
  const batches = Array.from({ length: BATCHES }, (_, b) =>
    Array.from({ length: BATCH }, (_, i) => record(b * BATCH + i, content)),
  );
  const per: Record<string, number[]> = Object.fromEntries(Object.keys(encoders).map((k) => [k, []]));
  for (const enc of Object.values(encoders)) for (const b of batches.slice(0, 20)) enc(b); // warm-up
  for (let r = 0; r < ROUNDS; r++)
    for (const [name, enc] of Object.entries(encoders)) {
      const start = process.cpuUsage();
      for (const b of batches) enc(b);
      const used = process.cpuUsage(start);
      per[name]?.push((used.user + used.system) / (BATCHES * BATCH));
    }
  for (const [name, xs] of Object.entries(per))
    console.log(
      `${content ? 'with content' : 'no content  '}  ${name.padEnd(18)} ${median(xs).toFixed(2)} µs CPU/record`,
    );
}
