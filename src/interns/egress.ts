import { type Dispatcher, request } from 'undici';
import { AddressRefused, pinnedAgent, type Resolved, resolveAllowed } from '../lib/address-guard.js';
import type { UsableSecret } from '../vault/service.js';
import { transportProblem } from '../vault/transport.js';
import { decodedBody } from './content-encoding.js';
import { Redactor } from './redaction.js';
import type { EgressRefusal, EgressRequest, EgressResponse } from './runtime-protocol.js';

/**
 * The egress layer of interns' http_request tool: fills `{{vault:NAME}}` placeholders with secret
 * values only for the hosts each secret is bound to (over HTTPS to port 443 unless the secret
 * allows plain HTTP or other ports), refuses private destinations, sends the
 * request (no redirects, 30 s, response capped) and removes secret values from what comes back.
 * Secret values never appear in a refusal, an error or a log line; only names and hosts do.
 */

export const EGRESS_TIMEOUT_MS = 30_000;
export const EGRESS_BODY_CAP = 256 * 1024;
/** Bytes read at most for one response, whatever redaction removes (4 × the cap). */
const EGRESS_READ_LIMIT = 4 * EGRESS_BODY_CAP;
const PLACEHOLDER = /\{\{vault:([^{}\s]+)\}\}/g;
const METHOD = /^[A-Z]{1,16}$/;
/** Headers the caller may not set: the transport's own, and Host (the destination is the URL's). */
const DROPPED_HEADERS = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'keep-alive',
  'upgrade',
  'proxy-connection',
  'te',
  'trailer',
  'expect',
  // Answers come uncompressed (see content-encoding.ts).
  'accept-encoding',
]);

export interface EgressLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface EgressOptions {
  secrets: UsableSecret[];
  /** Loopback, private, link-local and unspecified destinations allowed (GATEHOUSE_INTERNS_EGRESS_PRIVATE). */
  allowPrivate: boolean;
  signal?: AbortSignal;
  log?: EgressLog;
  /** Intern id, for log lines. */
  internId?: string;
  timeoutMs?: number;
  bodyCap?: number;
}

export type EgressResult =
  | { status: 200; body: EgressResponse }
  | { status: 403; body: EgressRefusal }
  | { status: 400 | 502; body: { error: { code: number; message: string } } };

const refused = (code: EgressRefusal['error']['code'], message: string): EgressResult => ({
  status: 403,
  body: { error: { code, message } },
});
const failure = (status: 400 | 502, message: string): EgressResult => ({
  status,
  body: { error: { code: status, message } },
});

const placeholderNames = (text: string) => [...text.matchAll(PLACEHOLDER)].map((m) => m[1] as string);

function fill(text: string, byName: Map<string, UsableSecret>): string {
  return text.replace(PLACEHOLDER, (_, name: string) => byName.get(name)?.value ?? '');
}

/** Validates the request's shape; a message naming the problem, or null. */
function shapeProblem(req: unknown): string | null {
  if (!req || typeof req !== 'object') return 'The body must be a JSON object';
  const r = req as Record<string, unknown>;
  if (typeof r.method !== 'string' || !METHOD.test(r.method.toUpperCase()))
    return 'method must be an HTTP method name';
  if (typeof r.url !== 'string' || !r.url) return 'url must be a non-empty string';
  if (r.headers !== undefined && r.headers !== null) {
    if (typeof r.headers !== 'object' || Array.isArray(r.headers))
      return 'headers must be an object of strings';
    for (const v of Object.values(r.headers))
      if (typeof v !== 'string') return 'headers must be an object of strings';
  }
  if (r.body !== undefined && r.body !== null && typeof r.body !== 'string') return 'body must be a string';
  return null;
}

/** Sends one egress request for an intern (see the module comment). */
export async function sendEgress(input: unknown, opts: EgressOptions): Promise<EgressResult> {
  const problem = shapeProblem(input);
  if (problem) return failure(400, problem);
  const req = input as EgressRequest;
  const method = req.method.toUpperCase();
  const log = opts.log;

  // The authority (userinfo, host, port) is judged before anything is filled in: no placeholder there.
  const authority = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)/i.exec(req.url);
  if (!authority) return failure(400, 'url must be an absolute http(s) URL');
  const scheme = (authority[1] as string).toLowerCase();
  if (scheme !== 'http' && scheme !== 'https')
    return failure(400, 'Only http and https URLs can be requested');
  if (placeholderNames(authority[2] as string).length || (authority[2] as string).includes('{{vault:'))
    return refused('host_not_allowed', 'A secret placeholder cannot be used in the host part of a URL');
  let target: URL;
  try {
    target = new URL(req.url.replace(PLACEHOLDER, 'x'));
  } catch {
    return failure(400, 'url is not a valid URL');
  }
  const hostname = target.hostname.toLowerCase().replace(/\.$/, '');
  const bareHost = hostname.replace(/^\[|\]$/g, '');

  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers ?? {})) {
    if (!DROPPED_HEADERS.has(k.toLowerCase())) headers[k] = v;
  }
  headers['accept-encoding'] = 'identity';
  const used = new Set([...placeholderNames(req.url), ...Object.values(headers).flatMap(placeholderNames)]);
  const byName = new Map(opts.secrets.map((s) => [s.name, s]));
  for (const name of used) {
    if (!byName.has(name)) return refused('secret_unknown', `This intern has no secret named ${name}`);
  }
  for (const name of used) {
    const secret = byName.get(name) as UsableSecret;
    if (!secret.hosts?.includes(hostname)) {
      log?.warn({ intern: opts.internId, secret: name, host: hostname }, 'egress refused: host not allowed');
      return refused(
        'host_not_allowed',
        secret.hosts === null
          ? `Secret ${name} is not bound to any host; it cannot be sent to ${hostname}`
          : `Secret ${name} may not be sent to ${hostname} (it is bound to ${secret.hosts.join(', ')})`,
      );
    }
    // HTTPS to port 443 only, unless the secret allows plain HTTP or other ports.
    const port = target.port ? Number(target.port) : scheme === 'https' ? 443 : 80;
    const wrong = transportProblem(name, secret, scheme as 'http' | 'https', port);
    if (wrong) {
      log?.warn(
        { intern: opts.internId, secret: name, host: hostname, scheme, port },
        `egress refused: ${wrong.code}`,
      );
      return refused(wrong.code, wrong.message);
    }
  }

  const url = fill(req.url, byName);
  let final: URL;
  try {
    final = new URL(url);
  } catch {
    return failure(400, 'url is not a valid URL once its placeholders are filled in');
  }
  if (final.hostname.toLowerCase().replace(/\.$/, '') !== hostname)
    return refused('host_not_allowed', 'Filling in the placeholders would change the destination host');
  for (const k of Object.keys(headers)) headers[k] = fill(headers[k] as string, byName);

  // Resolve once, judge every address, then connect to exactly the address judged.
  let pinned: Resolved;
  try {
    pinned = await resolveAllowed(bareHost, opts.allowPrivate);
  } catch (err) {
    if (!(err instanceof AddressRefused)) throw err;
    if (err.reason === 'unresolved') return failure(502, err.message);
    log?.warn({ intern: opts.internId, host: hostname }, 'egress refused: private address');
    return refused('address_not_allowed', `${err.message} interns may not reach`);
  }

  const redactor = new Redactor(opts.secrets.map((s) => s.value));
  const timeoutMs = opts.timeoutMs ?? EGRESS_TIMEOUT_MS;
  const cap = opts.bodyCap ?? EGRESS_BODY_CAP;
  const dispatcher = pinnedAgent(pinned, { headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  const signal = opts.signal
    ? AbortSignal.any([opts.signal, AbortSignal.timeout(timeoutMs)])
    : AbortSignal.timeout(timeoutMs);
  try {
    const res = await request(final, {
      method: method as Dispatcher.HttpMethod,
      headers,
      body: req.body ?? null,
      dispatcher,
      signal,
    });
    const body = decodedBody(res.body, res.headers['content-encoding']);
    if (!body) {
      res.body.on('error', () => {}).destroy(); // not read: its abort is expected
      return failure(
        502,
        `The response from ${hostname} is compressed with an encoding egress does not decode (${String(res.headers['content-encoding'])})`,
      );
    }
    // Redacted as it streams in; read until the redacted text passes the cap (a secret cut by the
    // cap is still recognized whole) or the read limit is reached.
    const stream = redactor.stream();
    let text = '';
    let size = 0;
    let complete = true;
    for await (const chunk of body) {
      size += (chunk as Buffer).length;
      text += stream.push(chunk as Buffer);
      if (text.length > cap || size > Math.max(EGRESS_READ_LIMIT, cap)) {
        complete = false;
        break;
      }
    }
    // A body left unread is not flushed: its held-back tail may be the start of a secret.
    if (complete) text += stream.end();
    else {
      body.destroy();
      res.body.destroy();
    }
    const truncated = !complete || text.length > cap;
    if (text.length > cap) text = text.slice(0, cap);
    const outHeaders: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.headers)) {
      // The body is passed on decoded: its encoding and compressed length no longer apply.
      if (v === undefined || ((k === 'content-encoding' || k === 'content-length') && body !== res.body))
        continue;
      outHeaders[redactor.redact(k)] = redactor.redact(Array.isArray(v) ? v.join(', ') : v);
    }
    log?.info(
      { intern: opts.internId, method, host: hostname, secrets: [...used], status: res.statusCode },
      'egress request sent',
    );
    return { status: 200, body: { status: res.statusCode, headers: outHeaders, body: text, truncated } };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why =
      signal.aborted && !opts.signal?.aborted
        ? `timed out after ${Math.round(timeoutMs / 1000)} s`
        : e.code || e.message || 'request failed';
    log?.warn({ intern: opts.internId, method, host: hostname, secrets: [...used] }, 'egress request failed');
    return failure(502, redactor.redact(`The request to ${hostname} failed: ${why}`));
  } finally {
    dispatcher.close().catch(() => {});
  }
}
