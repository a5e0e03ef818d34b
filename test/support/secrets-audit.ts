/**
 * The secrets audit (issue 8): during the whole test run, every response body a test reads through
 * `fetch` (the SDK clients included) and every log line of the gateways the tests start is
 * recorded, together with every secret the tests create — API keys, BYOK keys, vault values,
 * master keys. The run's global teardown then asserts that no secret appears in any of them.
 *
 * Recording is on when GATEHOUSE_TEST_AUDIT_DIR is set (test/reliability/audit-setup.ts sets it in
 * every test worker from the global setup). Each worker appends to its own files, named by pid.
 *
 * API keys are recognised by their shape (`sk-gh-v1-<64 hex>`): one may appear only in the answer
 * that created it (POST …/keys), which is therefore not scanned. Every other secret is registered
 * from what the tests send (a BYOK `key`, a vault `value`) or configure (master keys).
 */
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const AUDIT_DIR_ENV = 'GATEHOUSE_TEST_AUDIT_DIR';
export const API_KEY_SHAPE = /sk-gh-v1-[0-9a-f]{64}/g;
/** A response kept for the scan is cut here (a secret past 4 MB of one body goes unseen). */
const RESPONSE_CAP = 4 * 1024 * 1024;
/** Shorter registered values are not scanned for: they would match by chance. */
const MIN_SECRET_LENGTH = 8;

export type SecretKind =
  | 'api-key'
  | 'byok-key'
  | 'provider-key'
  | 'vault-value'
  | 'master-key'
  | 'webhook-secret';
/** Webhook signing secrets (a workspace's, an export destination's): shown once, in the answer that made them. */
const WEBHOOK_SECRET_SHAPE = /whsec_[A-Za-z0-9_-]{32}/g;

const dir = (): string | null => process.env[AUDIT_DIR_ENV] || null;
const file = (name: string) => join(dir() as string, `${name}-${process.pid}.jsonl`);

export function registerSecret(kind: SecretKind, value: string | null | undefined): void {
  if (!dir() || typeof value !== 'string' || value.length < MIN_SECRET_LENGTH) return;
  appendFileSync(file('secrets'), `${JSON.stringify({ kind, value })}\n`);
}

/** A master key as configured (hex) and in the other forms it could leak in. */
export function registerMasterKey(key: Buffer | string): void {
  const buf = typeof key === 'string' ? Buffer.from(key, 'hex') : key;
  registerSecret('master-key', buf.toString('hex'));
  registerSecret('master-key', buf.toString('base64'));
}

let logFiles = 0;
/**
 * A log destination copied into the audit (null when not auditing). Each write is appended at
 * once, so nothing is lost and nothing fails when a gateway logs after its test stopped it.
 */
export function auditLogStream(): { write(chunk: string): boolean } | null {
  const d = dir();
  if (!d) return null;
  mkdirSync(d, { recursive: true });
  const path = join(d, `log-${process.pid}-${++logFiles}.log`);
  return {
    write(chunk: string) {
      appendFileSync(path, chunk);
      return true;
    },
  };
}

/** Appends a child process's output to the audit (sync: the child may outlive the test). */
export function auditProcessOutput(name: string, chunk: Buffer | string): void {
  if (!dir()) return;
  appendFileSync(join(dir() as string, `proc-${process.pid}-${name.replace(/\W+/g, '_')}.log`), chunk);
}

let harvesting = true;
/**
 * Stops taking request bodies as secrets in this worker: a fuzzer sends generated strings as BYOK
 * keys and vault values and reuses them in every other field, so they are not secrets to look for.
 */
export function stopHarvesting(): void {
  harvesting = false;
}

/** Secrets a request body carries, by the route it goes to. */
function harvestRequest(path: string, body: string): void {
  if (!harvesting) return;
  if (!/^\{/.test(body.trimStart())) return;
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(body);
  } catch {
    return;
  }
  if (/\/byok(\/|$)/.test(path) && typeof parsed.key === 'string') registerSecret('byok-key', parsed.key);
  if (/\/vault(\/|$)/.test(path)) {
    if (typeof parsed.value === 'string') registerSecret('vault-value', parsed.value);
    // Bulk forms: {secrets:[{name,value}]}
    const list = Array.isArray(parsed.secrets) ? parsed.secrets : [];
    for (const s of list)
      if (s && typeof s === 'object')
        registerSecret('vault-value', (s as { value?: unknown }).value as string);
  }
}

/** Whether this answer is the one place an API key is shown: its creation. */
const isKeyCreation = (method: string, path: string) =>
  method === 'POST' && /\/keys\/?$/.test(path) && !/\/vault\//.test(path);
/** Whether this answer is the one place a webhook signing secret is shown. */
const isWebhookSecretCreation = (method: string, path: string) =>
  method === 'POST' && /\/(webhook-secret|observability\/destinations)\/?$/.test(path);

function recordResponse(method: string, url: string, status: number, text: string, truncated: boolean) {
  const path = new URL(url).pathname;
  if (isKeyCreation(method, path) && status < 300) {
    for (const k of text.match(API_KEY_SHAPE) ?? []) registerSecret('api-key', k);
    return;
  }
  if (isWebhookSecretCreation(method, path) && status < 300) {
    for (const k of text.match(WEBHOOK_SECRET_SHAPE) ?? []) registerSecret('webhook-secret', k);
    return;
  }
  appendFileSync(file('responses'), `${JSON.stringify({ method, url, status, text, truncated })}\n`);
}

/**
 * Wraps `globalThis.fetch` so that every response body read is recorded as it streams through to
 * the caller (a cancelled stream records what was read; nothing is read that the caller did not).
 */
export function installFetchRecorder(): void {
  if (!dir()) return;
  mkdirSync(dir() as string, { recursive: true });
  const original = globalThis.fetch;
  globalThis.fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    const res = await original(input, init);
    // Only a stored secret is one: a refused request's value was never kept.
    if (typeof init?.body === 'string' && res.ok) harvestRequest(new URL(url).pathname, init.body);
    if (!res.body) {
      recordResponse(method, url, res.status, '', false);
      return res;
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let text = '';
    let truncated = false;
    let saved = false;
    const save = () => {
      if (saved) return;
      saved = true;
      text += decoder.decode();
      recordResponse(method, url, res.status, text, truncated);
    };
    const body = new ReadableStream<Uint8Array>({
      async pull(ctl) {
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (err) {
          save();
          throw err;
        }
        if (chunk.done) {
          save();
          ctl.close();
          return;
        }
        if (text.length < RESPONSE_CAP) text += decoder.decode(chunk.value, { stream: true });
        else truncated = true;
        ctl.enqueue(chunk.value);
      },
      cancel(reason) {
        save();
        return reader.cancel(reason);
      },
    });
    const wrapped = new Response(body, {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
    });
    Object.defineProperty(wrapped, 'url', { value: res.url });
    Object.defineProperty(wrapped, 'redirected', { value: res.redirected });
    return wrapped;
  };
}

export interface Leak {
  kind: SecretKind;
  /** Where it was seen: a response (method, URL, status) or a log file. */
  where: string;
  /** The secret's first characters only. */
  hint: string;
}

export interface AuditReport {
  secrets: Record<SecretKind, number>;
  responses: number;
  responseBytes: number;
  logLines: number;
  leaks: Leak[];
}

function readLines(path: string): string[] {
  return readFileSync(path, 'utf8').split('\n').filter(Boolean);
}

/** Scans everything recorded under `auditDir` for every registered secret. */
export function scanAudit(auditDir: string): AuditReport {
  const files = existsSync(auditDir) ? readdirSync(auditDir) : [];
  const secrets = new Map<string, SecretKind>();
  for (const f of files.filter((f) => f.startsWith('secrets-')))
    for (const line of readLines(join(auditDir, f))) {
      const { kind, value } = JSON.parse(line) as { kind: SecretKind; value: string };
      secrets.set(value, kind);
    }
  const report: AuditReport = {
    secrets: {
      'api-key': 0,
      'byok-key': 0,
      'provider-key': 0,
      'vault-value': 0,
      'master-key': 0,
      'webhook-secret': 0,
    },
    responses: 0,
    responseBytes: 0,
    logLines: 0,
    leaks: [],
  };
  for (const kind of secrets.values()) report.secrets[kind]++;
  const check = (text: string, where: string) => {
    for (const k of text.match(API_KEY_SHAPE) ?? [])
      report.leaks.push({ kind: 'api-key', where, hint: `${k.slice(0, 14)}…` });
    for (const [value, kind] of secrets)
      if (kind !== 'api-key' && text.includes(value))
        report.leaks.push({ kind, where, hint: `${value.slice(0, 4)}…` });
  };
  for (const f of files.filter((f) => f.startsWith('responses-')))
    for (const line of readLines(join(auditDir, f))) {
      const r = JSON.parse(line) as { method: string; url: string; status: number; text: string };
      report.responses++;
      report.responseBytes += r.text.length;
      check(r.text, `response ${r.method} ${r.url} → ${r.status}`);
    }
  for (const f of files.filter((f) => f.startsWith('log-') || f.startsWith('proc-')))
    for (const [i, line] of readLines(join(auditDir, f)).entries()) {
      report.logLines++;
      check(line, `log ${f}:${i + 1}`);
    }
  return report;
}
