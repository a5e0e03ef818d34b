/**
 * How long Gatehouse waits for an upstream (GATEHOUSE_UPSTREAM_TIMEOUT_MS, GATEHOUSE_STREAM_IDLE_TIMEOUT_MS;
 * docs/configuration.md).
 */
export interface UpstreamDeadlines {
  /**
   * Deadline of one attempt until it answers: a whole non-streamed answer, or a stream's headers.
   * 10 minutes by default, as the official OpenAI and Anthropic clients wait: a reasoning model's
   * non-streamed answer often takes minutes, and cutting it falls back and pays for it again.
   */
  upstreamTimeoutMs: number;
  /** Longest silence between two chunks of a stream (or of relayed audio) once it started. */
  streamIdleTimeoutMs: number;
}

type Env = Record<string, string | undefined>;

/** Above a reasoning model's silences while it thinks (Codex CLI's own stream idle timeout). */
const STREAM_IDLE_DEFAULT_MS = 300_000;

function positive(env: Env, name: string): number | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return null;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`${name} must be a whole number of milliseconds, at least 1`);
  return n;
}

/**
 * The idle timeout, unset, is never longer than the attempt deadline: a deployment that set a
 * short deadline (fast fallbacks, tests) finds a stalled stream as soon as a stalled answer.
 * Set, it is taken as it is (a short deadline for headers, long silences for a thinking stream).
 */
export function upstreamDeadlines(env: Env): UpstreamDeadlines {
  const upstreamTimeoutMs = positive(env, 'GATEHOUSE_UPSTREAM_TIMEOUT_MS') ?? 600_000;
  const streamIdleTimeoutMs =
    positive(env, 'GATEHOUSE_STREAM_IDLE_TIMEOUT_MS') ?? Math.min(STREAM_IDLE_DEFAULT_MS, upstreamTimeoutMs);
  return { upstreamTimeoutMs, streamIdleTimeoutMs };
}
