import { join, resolve } from 'node:path';
import { adminTokenWeakness } from './accounts/admin.token.js';
import { type OidcSettings, oidcSettings } from './accounts/oidc.settings.js';
import { type HttpTimeouts, loadHttpTimeouts } from './lib/http-server.js';
import { loadMasterKey } from './lib/master-key.js';
import type { RemoteMediaMode } from './providers/remote-media.js';
import { type CredentialSettings, credentialSettings } from './routing/credentials/settings.js';
import { upstreamDeadlines } from './routing/deadlines.js';

/** The one typed configuration object, read from the environment (see the README's table). */
export interface Config {
  /** The environment this configuration was read from (the model catalog reads provider settings from it). */
  env: Env;
  port: number;
  host: string;
  dataDir: string;
  /** `sqlite:<path>` or a `postgres://` URL. */
  databaseUrl: string;
  /** 32-byte key for encryption at rest (BYOK secrets, vault values). */
  masterKey: Buffer;
  logLevel: string;
  adminToken: string | null;
  /**
   * The listener serving GET /metrics (GATEHOUSE_METRICS_PORT, default 9464; GATEHOUSE_METRICS_HOST,
   * default 127.0.0.1): null when `off`.
   */
  metrics: { port: number; host: string } | null;
  /** Failed operator authentications one client address may make per minute before 429 (0: unlimited). */
  adminAuthFailures: number;
  bootstrapManagementKey: string | null;
  bootstrapApiKey: string | null;
  /** Largest JSON body accepted on ordinary routes (management, stored state …), in bytes. */
  bodyLimit: number;
  /**
   * Largest body of a model call (GATEHOUSE_INFERENCE_BODY_LIMIT): the inference routes' JSON, a
   * Responses WebSocket message, one batch request item by default. As large as the providers take.
   */
  inferenceBodyLimit: number;
  /** Largest audio file a transcription takes (a multipart upload, or decoded base64), in bytes. */
  audioMaxBytes: number;
  /** Largest model input file an upload takes (GATEHOUSE_FILES_MAX_BYTES), in bytes. */
  filesMaxBytes: number;
  /** Requests each API key may make per rate-limit window. */
  rateLimitRequests: number;
  /** The rate-limit window, in seconds. */
  rateLimitWindowSeconds: number;
  /** Redis shared by the nodes for rate limiting; null = each node limits in memory. */
  redisUrl: string | null;
  /** Prefix of Gatehouse's Redis keys and channels (GATEHOUSE_REDIS_PREFIX): deployments or test runs apart on one Redis. */
  redisPrefix: string;
  /**
   * Whether calls paid on the operator's provider keys need a credit balance (GATEHOUSE_CREDITS):
   * `off` (default) records usage and cost but refuses nothing for want of credits; `enforce`
   * answers 402 once the organization's balance is spent.
   */
  credits: CreditsMode;
  /**
   * Fetching image and document URLs for providers that take data inline only (GATEHOUSE_REMOTE_MEDIA):
   * `public` (default) public addresses only, `any` private networks too, `off` refuse such URLs.
   */
  remoteMedia: RemoteMediaMode;
  /** Weighted credentials' circuit breakers and sticky routing (GATEHOUSE_CREDENTIAL_BREAKER, GATEHOUSE_STICKY_ROUTING …). */
  credentials: CredentialSettings;
  /** Deadline of one upstream attempt until it answers (a stream: its headers), ms (GATEHOUSE_UPSTREAM_TIMEOUT_MS). */
  upstreamTimeoutMs: number;
  /** Longest silence between two chunks of a stream once it started, ms (GATEHOUSE_STREAM_IDLE_TIMEOUT_MS). */
  streamIdleTimeoutMs: number;
  /** How long recorded generations wait to be written in one group commit, ms (GATEHOUSE_ACCOUNTING_INTERVAL_MS). */
  accountingIntervalMs: number;
  /**
   * How often the models of OpenAI-compatible servers are asked for again, ms
   * (GATEHOUSE_MODEL_DISCOVERY_INTERVAL_SECONDS; 0: at start and on reload only).
   */
  modelDiscoveryIntervalMs: number;
  /** Longest Retry-After honoured by retrying the last candidate once, ms. */
  maxRetryWaitMs: number;
  /**
   * On SIGTERM, how long in-flight requests (streams, batch uploads) may run before their
   * connections are closed, ms (GATEHOUSE_SHUTDOWN_GRACE_MS).
   */
  shutdownGraceMs: number;
  /** How long one Responses WebSocket connection serves, ms (GATEHOUSE_WEBSOCKET_MAX_AGE_MS). */
  websocketMaxAgeMs: number;
  /**
   * A keep-alive SSE comment on a stream silent this long, ms, so that proxies' idle timeouts do
   * not cut it (GATEHOUSE_STREAM_KEEPALIVE_MS; 0: none).
   */
  streamKeepaliveMs: number;
  /** How long a client may take to send a request (GATEHOUSE_HEADERS_TIMEOUT_MS, _REQUEST_TIMEOUT_MS, _KEEP_ALIVE_TIMEOUT_MS). */
  http: HttpTimeouts;
  /**
   * How long `/responses` responses stored for later reference are kept, and conversations after
   * their last change, ms (GATEHOUSE_RESPONSES_RETENTION_DAYS; 0 stores none).
   */
  responsesRetentionMs: number;
  /** How long audit events are kept, ms (GATEHOUSE_AUDIT_RETENTION_DAYS; 0 keeps them forever). */
  auditRetentionMs: number;
  batches: BatchConfig;
  interns: InternsConfig;
  /** Spend reservations of calls in flight (credits/spend-admission.ts). */
  spendReservations: { ttlMs: number; outputTokens: number };
  /**
   * Usage limits a new API key gets when its creation names none (GATEHOUSE_KEY_RPM, _TPM,
   * _CONCURRENCY; unset = no limit).
   */
  keyLimitDefaults: { rpm_limit: number | null; tpm_limit: number | null; concurrency_limit: number | null };
  /**
   * The media service's public base URL (GATEHOUSE_MEDIA_PUBLIC_URL, which it also reads), linked
   * from the landing page at `/`; null when not set (the service's address is not known here).
   */
  mediaUrl: string | null;
  /**
   * Where the gateway forwards `/api/v1/images…` (GATEHOUSE_MEDIA_URL): the media service's address
   * as the gateway reaches it; null → the media service `serve` runs beside it, if any.
   */
  mediaForwardUrl: string | null;
  /**
   * The gateway's public base URL as clients reach it (GATEHOUSE_PUBLIC_URL: scheme, host and any
   * path prefix a proxy adds, before `/api/v1`), for answers that link back to the gateway; null:
   * such links are built from the request (X-Forwarded-Proto / X-Forwarded-Host, else Host).
   */
  publicUrl: string | null;
  /**
   * Export destinations may be internal addresses (GATEHOUSE_EXPORT_PRIVATE=on): off by default, as
   * any management key may name a webhook URL.
   */
  exportPrivate: boolean;
  /** Records one export destination may hold waiting (GATEHOUSE_EXPORT_QUEUE_MAX); more are dropped and counted. */
  exportQueueMax: number;
  /**
   * The size cap of a record's content in exports, per field (input, output), bytes of UTF-8
   * (GATEHOUSE_EXPORT_CONTENT_MAX_BYTES; 0: no cap); larger fields are truncated with a marker.
   */
  exportContentMaxBytes: number;
  /** Console sign-in with an OpenID Connect provider (GATEHOUSE_OIDC_*); null when not configured. */
  oidc: OidcSettings | null;
}

/** Interns and vaults (README, "Interns"). */
export interface InternsConfig {
  /** Lifecycle writes (create, update, provision, suspend, delete) allowed; off → 404 not_found. */
  writes: boolean;
  /** Vault writes allowed; off → 503. */
  vaultWrites: boolean;
  /** Vault writes (PUT, DELETE, copy) per member per window (429 beyond); 0 turns the limit off. */
  vaultWriteLimit: number;
  /** The vault write limit's window, seconds. */
  vaultWriteWindowSeconds: number;
  /** Hostnames (lowercase, no port) whose requests to /interns and /vault are refused with 403. */
  regionalHosts: string[];
  /** Interns' hostnames are `<name>-<short id>.<domain>`. */
  domain: string;
  /** Interns one member may own, all workspaces together (409 intern_limit_reached beyond). */
  perMemberLimit: number;
  /** Intern runtimes one organization may have running or starting (409 runtime_limit_reached beyond). */
  runtimesPerOrganization: number;
  /** Intern runtimes this node runs at most, all organizations together (409 runtime_limit_reached beyond). */
  runtimesMax: number;
  /** Deadline of one /interns or /vault request, ms (408 beyond). */
  deadlineMs: number;
  /** Model for interns whose `model` is null and whose workspace has no default_text_model. */
  defaultModel: string;
  /** How long a paused run waits for its answer before it is cancelled, ms. */
  interactionTimeoutMs: number;
  /** A `: keepalive` comment after this long without a chunk on a chat stream, ms. */
  keepaliveMs: number;
  /** The runtime offers its shell tool (off by default). */
  shell: boolean;
  /** Runtimes' working directories live under this directory. */
  runtimeDir: string;
  /** Start runtimes on this node and reconcile at boot (GATEHOUSE_INTERNS_RUNTIMES=off for API-only nodes). */
  runtimes: boolean;
  /** The egress layer may reach loopback and private addresses (tests and trusted networks). */
  egressPrivate: boolean;
  /** Model steps of one run before it ends with an error (a runaway loop guard). */
  maxSteps: number;
  /** Pause between provisioning steps, ms (0; tests raise it to observe `progress`). */
  stepDelayMs: number;
  /**
   * The name of the tool call a paused run ends with: `gateway.provide_input` (the seeds' name), or
   * `openrouter.provide_input` for clients such as @openrouter/sdk that accept only that one.
   */
  pauseTool: string;
}

/** Batches: submission limits and the worker (README, "Batches"). */
export interface BatchConfig {
  /** Run the batch worker inside the gateway process (GATEHOUSE_WORKER=off for API-only nodes). */
  worker: boolean;
  /** On shutdown, how long running batch requests may finish before they are handed back, ms. */
  drainMs: number;
  /** Largest batch body, bytes (413 beyond). */
  maxBytes: number;
  /** Largest JSON text of one request item, bytes. */
  maxItemBytes: number;
  /** Requests one worker runs at once. */
  concurrency: number;
  /** Requests one worker sends to one provider at once, unless the provider sets `batch_concurrency`. */
  providerConcurrency: number;
  /** How long a claimed request stays leased without a heartbeat, ms. */
  leaseMs: number;
  /** How often an idle worker looks for work, ms. */
  pollMs: number;
  /** Attempts per request before a 429/5xx becomes its final error. */
  maxAttempts: number;
  /** First retry delay, ms (doubling per attempt, at least the upstream's Retry-After). */
  retryBaseMs: number;
  /** What the `24h` completion window lasts, seconds (tests shorten it). */
  windowSeconds: number;
  /** Batches each API key may create per rate-limit window (0 = unlimited). */
  rateLimit: number;
  rateLimitWindowSeconds: number;
  /** How often a provider-native batch is polled at its provider, ms. */
  nativePollMs: number;
  /** How often the worker purges expired and abandoned uploaded batch files, ms (0: never). */
  fileSweepMs: number;
}

type Env = Record<string, string | undefined>;

export type CreditsMode = 'enforce' | 'off';

const isOff = (v: string | undefined) => ['off', 'false', '0'].includes((v ?? '').toLowerCase());
const isOn = (v: string | undefined) => ['on', 'true', '1'].includes((v ?? '').toLowerCase());
const listFrom = (v: string | undefined) =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);

function intFrom(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer`);
  return n;
}

/** GATEHOUSE_EXPORT_CONTENT_MAX_BYTES: 0 (no cap), or at least 1 KiB (room for the marker and some text). */
function exportContentMaxBytes(env: Env): number {
  const n = intFrom(env, 'GATEHOUSE_EXPORT_CONTENT_MAX_BYTES', 64 * 1024);
  if (n !== 0 && n < 1024)
    throw new Error('GATEHOUSE_EXPORT_CONTENT_MAX_BYTES must be 0 (no cap) or at least 1024');
  return n;
}

/** A positive whole number, or null when unset (no limit). */
function limitFrom(env: Env, name: string): number | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return null;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`${name} must be a whole number of at least 1, or unset`);
  return n;
}

function creditsMode(env: Env): CreditsMode {
  const raw = (env.GATEHOUSE_CREDITS ?? '').trim().toLowerCase();
  if (raw === '' || raw === 'off') return 'off';
  if (raw === 'enforce') return 'enforce';
  throw new Error("GATEHOUSE_CREDITS must be 'enforce' or 'off'");
}

function remoteMediaMode(env: Env): RemoteMediaMode {
  const raw = (env.GATEHOUSE_REMOTE_MEDIA ?? '').trim().toLowerCase();
  if (raw === '' || raw === 'public') return 'public';
  if (raw === 'any' || raw === 'off') return raw;
  throw new Error("GATEHOUSE_REMOTE_MEDIA must be 'public', 'any' or 'off'");
}

/** GATEHOUSE_ADMIN_TOKEN, refused at start when short or predictable (accounts/admin.token.ts). */
function adminTokenFrom(env: Env): string | null {
  const token = env.GATEHOUSE_ADMIN_TOKEN || null;
  const weakness = token === null ? null : adminTokenWeakness(token);
  if (weakness) throw new Error(weakness);
  return token;
}

export function loadConfig(env: Env = process.env): Config {
  const dataDir = resolve(env.GATEHOUSE_DATA_DIR || './data');
  const databaseUrl = env.DATABASE_URL || `sqlite:${join(dataDir, 'gatehouse.db')}`;
  // OpenAI takes up to 50 MB of request payload (images included), Anthropic's Messages API 32 MB:
  // a long agent session or a phone's photo in base64 is well over the ordinary 1 MiB.
  const inferenceBodyLimit = intFrom(env, 'GATEHOUSE_INFERENCE_BODY_LIMIT', 52_428_800);
  return {
    env,
    port: intFrom(env, 'PORT', 8080),
    host: env.HOST || '0.0.0.0',
    dataDir,
    databaseUrl,
    masterKey: loadMasterKey(env, dataDir),
    logLevel: env.LOG_LEVEL || 'info',
    adminToken: adminTokenFrom(env),
    adminAuthFailures: intFrom(env, 'GATEHOUSE_ADMIN_AUTH_FAILURES', 10),
    // `off` turns the listener off; 0 is a free port (tests).
    metrics: ['off', 'false'].includes((env.GATEHOUSE_METRICS_PORT ?? '').toLowerCase())
      ? null
      : {
          port: intFrom(env, 'GATEHOUSE_METRICS_PORT', 9464),
          host: env.GATEHOUSE_METRICS_HOST || '127.0.0.1',
        },
    bootstrapManagementKey: env.GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY || null,
    bootstrapApiKey: env.GATEHOUSE_BOOTSTRAP_API_KEY || null,
    bodyLimit: intFrom(env, 'GATEHOUSE_BODY_LIMIT', 1_048_576),
    inferenceBodyLimit,
    audioMaxBytes: intFrom(env, 'GATEHOUSE_AUDIO_MAX_BYTES', 26_214_400),
    filesMaxBytes: intFrom(env, 'GATEHOUSE_FILES_MAX_BYTES', 33_554_432),
    // Off unless the operator sets it: keys have their own rpm_limit, and a blanket default of a few
    // requests a second 429'd a team's services that had asked for no limit.
    rateLimitRequests: intFrom(env, 'GATEHOUSE_RATE_LIMIT_REQUESTS', 0),
    rateLimitWindowSeconds: intFrom(env, 'GATEHOUSE_RATE_LIMIT_WINDOW', 60),
    redisUrl: env.REDIS_URL || null,
    redisPrefix: env.GATEHOUSE_REDIS_PREFIX || 'gatehouse',
    credits: creditsMode(env),
    remoteMedia: remoteMediaMode(env),
    ...upstreamDeadlines(env),
    credentials: credentialSettings(env),
    accountingIntervalMs: intFrom(env, 'GATEHOUSE_ACCOUNTING_INTERVAL_MS', 25),
    maxRetryWaitMs: intFrom(env, 'GATEHOUSE_MAX_RETRY_WAIT_MS', 5_000),
    modelDiscoveryIntervalMs:
      Math.max(0, intFrom(env, 'GATEHOUSE_MODEL_DISCOVERY_INTERVAL_SECONDS', 300)) * 1000,
    shutdownGraceMs: intFrom(env, 'GATEHOUSE_SHUTDOWN_GRACE_MS', 20_000),
    // OpenAI's own limit for a Responses WebSocket connection: 60 minutes.
    websocketMaxAgeMs: Math.max(1, intFrom(env, 'GATEHOUSE_WEBSOCKET_MAX_AGE_MS', 3_600_000)),
    streamKeepaliveMs: intFrom(env, 'GATEHOUSE_STREAM_KEEPALIVE_MS', 15_000),
    http: loadHttpTimeouts(env),
    responsesRetentionMs: intFrom(env, 'GATEHOUSE_RESPONSES_RETENTION_DAYS', 30) * 86_400_000,
    auditRetentionMs: Math.max(0, intFrom(env, 'GATEHOUSE_AUDIT_RETENTION_DAYS', 365)) * 86_400_000,
    batches: {
      worker: !isOff(env.GATEHOUSE_WORKER),
      drainMs: intFrom(env, 'GATEHOUSE_WORKER_DRAIN_MS', 10_000),
      maxBytes: intFrom(env, 'GATEHOUSE_BATCH_MAX_BYTES', 200 * 1024 * 1024),
      // One item is one model call's body.
      maxItemBytes: intFrom(env, 'GATEHOUSE_BATCH_MAX_ITEM_BYTES', inferenceBodyLimit),
      concurrency: Math.max(1, intFrom(env, 'GATEHOUSE_BATCH_CONCURRENCY', 64)),
      providerConcurrency: Math.max(1, intFrom(env, 'GATEHOUSE_BATCH_PROVIDER_CONCURRENCY', 64)),
      leaseMs: Math.max(500, intFrom(env, 'GATEHOUSE_BATCH_LEASE_MS', 60_000)),
      pollMs: Math.max(10, intFrom(env, 'GATEHOUSE_BATCH_POLL_MS', 250)),
      maxAttempts: Math.max(1, intFrom(env, 'GATEHOUSE_BATCH_MAX_ATTEMPTS', 5)),
      retryBaseMs: intFrom(env, 'GATEHOUSE_BATCH_RETRY_BASE_MS', 1_000),
      windowSeconds: Math.max(1, intFrom(env, 'GATEHOUSE_BATCH_WINDOW_SECONDS', 86_400)),
      rateLimit: intFrom(env, 'GATEHOUSE_BATCH_RATE_LIMIT', 30),
      rateLimitWindowSeconds: intFrom(env, 'GATEHOUSE_BATCH_RATE_LIMIT_WINDOW', 60),
      nativePollMs: Math.max(10, intFrom(env, 'GATEHOUSE_BATCH_NATIVE_POLL_MS', 60_000)),
      fileSweepMs: Math.max(0, intFrom(env, 'GATEHOUSE_BATCH_FILE_SWEEP_MS', 600_000)),
    },
    interns: loadInternsConfig(env, dataDir),
    spendReservations: {
      ttlMs: Math.max(1, intFrom(env, 'GATEHOUSE_SPEND_RESERVATION_TTL_SECONDS', 900)) * 1000,
      outputTokens: intFrom(env, 'GATEHOUSE_RESERVE_OUTPUT_TOKENS', 4096),
    },
    keyLimitDefaults: {
      rpm_limit: limitFrom(env, 'GATEHOUSE_KEY_RPM'),
      tpm_limit: limitFrom(env, 'GATEHOUSE_KEY_TPM'),
      concurrency_limit: limitFrom(env, 'GATEHOUSE_KEY_CONCURRENCY'),
    },
    mediaUrl: mediaUrlFrom(env),
    mediaForwardUrl: httpUrlFrom(env, 'GATEHOUSE_MEDIA_URL'),
    publicUrl: httpUrlFrom(env, 'GATEHOUSE_PUBLIC_URL'),
    exportPrivate: isOn(env.GATEHOUSE_EXPORT_PRIVATE),
    exportQueueMax: intFrom(env, 'GATEHOUSE_EXPORT_QUEUE_MAX', 10_000),
    exportContentMaxBytes: exportContentMaxBytes(env),
    oidc: oidcSettings(env),
  };
}

/** GATEHOUSE_MEDIA_PUBLIC_URL without its trailing slashes, checked as the media service checks it. */
const mediaUrlFrom = (env: Env): string | null => httpUrlFrom(env, 'GATEHOUSE_MEDIA_PUBLIC_URL');

/** An http(s) base URL variable without its trailing slashes; null when unset. */
function httpUrlFrom(env: Env, name: string): string | null {
  const url = env[name]?.trim();
  if (!url) return null;
  if (!/^https?:\/\/[^/]/i.test(url)) throw new Error(`${name} must be an http(s) URL`);
  return url.replace(/\/+$/, '');
}

/** The interns settings (README, "Configuration"); tests build one from an empty environment. */
export function loadInternsConfig(env: Env, dataDir: string): InternsConfig {
  return {
    writes: !isOff(env.GATEHOUSE_INTERNS_WRITES),
    vaultWrites: !isOff(env.GATEHOUSE_VAULT_WRITES),
    vaultWriteLimit: intFrom(env, 'GATEHOUSE_VAULT_WRITE_LIMIT', 60),
    vaultWriteWindowSeconds: intFrom(env, 'GATEHOUSE_VAULT_WRITE_WINDOW', 60),
    regionalHosts: listFrom(env.GATEHOUSE_REGIONAL_HOSTS),
    domain: (env.GATEHOUSE_INTERNS_DOMAIN || 'interns.localhost').toLowerCase(),
    perMemberLimit: intFrom(env, 'GATEHOUSE_INTERNS_PER_MEMBER', 10),
    runtimesPerOrganization: Math.max(1, intFrom(env, 'GATEHOUSE_INTERNS_RUNTIMES_PER_ORGANIZATION', 20)),
    runtimesMax: Math.max(1, intFrom(env, 'GATEHOUSE_INTERNS_RUNTIMES_MAX', 40)),
    deadlineMs: Math.max(100, intFrom(env, 'GATEHOUSE_INTERNS_DEADLINE_MS', 30_000)),
    defaultModel: env.GATEHOUSE_INTERNS_DEFAULT_MODEL || 'gatehouse/echo',
    interactionTimeoutMs: Math.max(100, intFrom(env, 'GATEHOUSE_INTERNS_INTERACTION_TIMEOUT_MS', 300_000)),
    keepaliveMs: Math.max(100, intFrom(env, 'GATEHOUSE_INTERNS_KEEPALIVE_MS', 30_000)),
    shell: isOn(env.GATEHOUSE_INTERNS_SHELL),
    runtimeDir: resolve(env.GATEHOUSE_INTERNS_DIR || join(dataDir, 'interns')),
    runtimes: !isOff(env.GATEHOUSE_INTERNS_RUNTIMES),
    egressPrivate: isOn(env.GATEHOUSE_INTERNS_EGRESS_PRIVATE),
    maxSteps: Math.max(1, intFrom(env, 'GATEHOUSE_INTERNS_MAX_STEPS', 20)),
    stepDelayMs: intFrom(env, 'GATEHOUSE_INTERNS_STEP_DELAY_MS', 0),
    pauseTool: env.GATEHOUSE_INTERNS_PAUSE_TOOL || 'gateway.provide_input',
  };
}
