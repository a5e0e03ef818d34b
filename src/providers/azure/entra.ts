/**
 * Microsoft Entra ID for Azure OpenAI: an OAuth2 client-credentials token (scope
 * `https://cognitiveservices.azure.com/.default`) sent as `Authorization: Bearer`. One token per
 * provider, cached and fetched again a few minutes before it expires; concurrent calls share one
 * token request. The client secret never appears in an error.
 */
import { type CallSignal, untilAborted } from '../../lib/call-abort.js';
import { nonEmpty, obj } from '../errors.js';
import { redact, upstreamAgent } from '../http.js';
import { type EntraAuth, UpstreamError } from '../types.js';

export const ENTRA_SCOPE = 'https://cognitiveservices.azure.com/.default';
export const entraTokenUrl = (tenantId: string): string =>
  `https://login.microsoftonline.com/${encodeURIComponent(tenantId)}/oauth2/v2.0/token`;

/** A token is renewed this long before it expires (Entra's tokens last an hour or more). */
const RENEW_BEFORE_MS = 5 * 60_000;
/** The longest a token request may take. */
const TOKEN_TIMEOUT_MS = 30_000;

export class EntraTokenSource {
  private token: { value: string; renewAt: number } | null = null;
  private pending: Promise<string> | null = null;

  constructor(
    private readonly auth: EntraAuth,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * A valid token: the cached one, or a new one (one request however many calls wait for it). The
   * request is not tied to any one caller: a caller who leaves stops waiting, the others do not.
   */
  async get(signal: CallSignal): Promise<string> {
    if (this.token && this.now() < this.token.renewAt) return this.token.value;
    this.pending ??= this.fetch().finally(() => {
      this.pending = null;
    });
    return untilAborted(this.pending, signal);
  }

  private async fetch(): Promise<string> {
    const auth = this.auth;
    const url = new URL(auth.tokenUrl ?? entraTokenUrl(auth.tenantId));
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: auth.clientId,
      client_secret: auth.clientSecret,
      scope: ENTRA_SCOPE,
    });
    const secrets = [auth.clientSecret];
    let status: number;
    let text: string;
    try {
      const res = await upstreamAgent().request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form.toString(),
        signal: AbortSignal.timeout(TOKEN_TIMEOUT_MS),
      });
      status = res.statusCode;
      text = await res.body.text();
    } catch (err) {
      throw new UpstreamError(
        0,
        redact(
          `Microsoft Entra ID token endpoint unreachable: ${String((err as Error)?.message ?? err)}`,
          secrets,
        ),
      );
    }
    let body: Record<string, unknown> = {};
    try {
      body = obj(JSON.parse(text));
    } catch {}
    const token = nonEmpty(body.access_token);
    if (status >= 400 || !token) {
      const why = nonEmpty(body.error_description) ?? nonEmpty(body.error) ?? `HTTP ${status}`;
      // A refused client (bad secret, unknown app) is the operator's to fix: not retryable. The
      // token service failing is, like any upstream 5xx.
      const retryable = status >= 500 || status === 429;
      throw new UpstreamError(
        retryable ? 502 : 401,
        redact(`Microsoft Entra ID refused the token request: ${why.split('\n')[0]}`, secrets),
        { retryable },
      );
    }
    const lifetimeS = Number(body.expires_in) || 3600;
    // Renewed 5 minutes early, or halfway through a lifetime shorter than 10 minutes.
    const renewIn = Math.max(lifetimeS * 1000 - RENEW_BEFORE_MS, (lifetimeS * 1000) / 2);
    this.token = { value: token, renewAt: this.now() + renewIn };
    return token;
  }
}
