/** The generations bench/activity.ts seeds: 60 % in one organization, over 30 days. */
export const START = Date.UTC(2026, 9, 1);
export const SPAN_MS = 30 * 86_400_000;
export const ORG = 'org-big';

/** One statement that writes every row: the database generates them (SQLite: a recursive CTE). */
export function seedSql(kind: 'sqlite' | 'postgres', ROWS: number): string {
  const series =
    kind === 'sqlite'
      ? `with recursive s(i) as (select 0 union all select i + 1 from s where i < ${ROWS - 1}) `
      : '';
  const from = kind === 'sqlite' ? 'from s' : `from generate_series(0, ${ROWS - 1}) as s(i)`;
  const mod = (a: string, b: number) => `(${a} % ${b})`;
  const text = (e: string) => (kind === 'sqlite' ? `cast(${e} as text)` : `(${e})::text`);
  const iso =
    kind === 'sqlite'
      ? `strftime('%Y-%m-%dT%H:%M:%fZ', (${START} + i * ${SPAN_MS / ROWS}) / 1000.0, 'unixepoch')`
      : `to_char(to_timestamp((${START} + i::bigint * ${SPAN_MS / ROWS}) / 1000.0) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  const org = `case when ${mod('i', 10)} < 6 then '${ORG}' else 'org-' || ${text(mod('i', 99))} end`;
  return `${series}insert into generations (id, organization_id, workspace_id, key_hash, user_id, endpoint,
    requested_model, model, provider, status, http_status, streamed, prompt_tokens, completion_tokens,
    cost_usd, is_byok, latency_ms, created_at, passthrough)
    select 'gen-' || ${text('i')}, ${org}, 'ws-' || ${text(mod('i', 5))}, 'key-' || ${text(mod('i', 20))},
      'user-' || ${text(mod('i', 12))}, 'chat', 'm/model-' || ${text(mod('i', 30))},
      case when ${mod('i', 97)} = 0 then null else 'm/model-' || ${text(mod('i', 30))} end,
      'p' || ${text(mod('i', 8))}, case when ${mod('i', 40)} = 0 then 'error' else 'success' end,
      200, ${mod('i', 2)}, 100 + ${mod('i', 500)}, 20 + ${mod('i', 80)}, ${mod('i', 1000)} / 100000.0,
      0, 200 + ${mod('i', 1800)}, ${iso}, case when ${mod('i', 3)} = 0 then 1 else 0 end ${from}`;
}
