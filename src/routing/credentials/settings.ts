/** How credentials are chosen and taken out of rotation (GATEHOUSE_* variables; docs/reliability.md). */
export interface CredentialSettings {
  /** Circuit breakers per credential (GATEHOUSE_CREDENTIAL_BREAKER, default on). */
  breaker: boolean;
  /** Consecutive 5xx / timeouts / connection errors that open a breaker (a 429 opens it at once). */
  failures: number;
  /** First cooldown of an open breaker without Retry-After, ms; doubled at each re-opening. */
  cooldownMs: number;
  /** Longest cooldown (Retry-After included), ms. */
  maxCooldownMs: number;
  /** Sticky routing of conversations (GATEHOUSE_STICKY_ROUTING, default on). */
  sticky: boolean;
  /** How long a conversation's route is remembered after its last turn, ms. */
  stickyTtlMs: number;
  /** Conversations remembered per node (least recently used go first). */
  stickyMax: number;
}

type Env = Record<string, string | undefined>;

function onOff(env: Env, name: string): boolean {
  const raw = (env[name] ?? '').trim().toLowerCase();
  if (raw === '' || raw === 'on' || raw === 'true') return true;
  if (raw === 'off' || raw === 'false') return false;
  throw new Error(`${name} must be on or off`);
}

function positive(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a whole number of at least 1`);
  return n;
}

export function credentialSettings(env: Env): CredentialSettings {
  const cooldownMs = positive(env, 'GATEHOUSE_BREAKER_COOLDOWN_MS', 10_000);
  return {
    breaker: onOff(env, 'GATEHOUSE_CREDENTIAL_BREAKER'),
    failures: positive(env, 'GATEHOUSE_BREAKER_FAILURES', 3),
    cooldownMs,
    maxCooldownMs: Math.max(cooldownMs, positive(env, 'GATEHOUSE_BREAKER_MAX_COOLDOWN_MS', 300_000)),
    sticky: onOff(env, 'GATEHOUSE_STICKY_ROUTING'),
    stickyTtlMs: positive(env, 'GATEHOUSE_STICKY_TTL_SECONDS', 300) * 1000,
    stickyMax: positive(env, 'GATEHOUSE_STICKY_MAX', 100_000),
  };
}
