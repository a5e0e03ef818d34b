/**
 * Google OAuth for Vertex AI through `google-auth-library`: a service account's key (signed JWT
 * exchanged at the token endpoint, RFC 7523) or, with no key configured, application default
 * credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's user credentials, workload identity, the
 * metadata server). The library caches the token and fetches a new one five minutes before it
 * expires; concurrent calls share one request. Neither the private key nor a token appears in an
 * error.
 */
import { type AuthClient, GoogleAuth, JWT } from 'google-auth-library';
import { type CallSignal, untilAborted } from '../../lib/call-abort.js';
import { redact } from '../redact.js';
import { type ServiceAccountKey, UpstreamError } from '../types.js';

export const VERTEX_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
/** Where the library sends every token request, whatever the key file's `token_uri` says. */
export const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';

export interface VertexAuthOptions {
  serviceAccount?: ServiceAccountKey;
  /** Another token endpoint (the entry's `token_url`, else the key file's `token_uri`). */
  tokenUrl?: string;
}

export class VertexTokenSource {
  private client: Promise<AuthClient> | null = null;
  private pending: Promise<string> | null = null;
  /** The private key, scrubbed from error messages. */
  private readonly secrets: string[] = [];

  constructor(private readonly opts: VertexAuthOptions) {
    if (opts.serviceAccount) this.secrets.push(opts.serviceAccount.private_key);
  }

  /** A current access token (cached by the library; a new one once it is about to expire). */
  get(signal: CallSignal): Promise<string> {
    this.pending ??= this.fetch().finally(() => {
      this.pending = null;
    });
    return untilAborted(this.pending, signal);
  }

  private async fetch(): Promise<string> {
    try {
      // A client that could not be made (no application default credentials yet) is tried again next call.
      this.client ??= this.makeClient().catch((err) => {
        this.client = null;
        throw err;
      });
      const { token } = await (await this.client).getAccessToken();
      if (!token) throw new Error('the token endpoint returned no access token');
      return token;
    } catch (err) {
      throw this.tokenError(err);
    }
  }

  private async makeClient(): Promise<AuthClient> {
    const sa = this.opts.serviceAccount;
    const client = sa
      ? new JWT({
          email: sa.client_email,
          key: sa.private_key,
          ...(sa.private_key_id ? { keyId: sa.private_key_id } : {}),
          scopes: [VERTEX_SCOPE],
        })
      : await new GoogleAuth({ scopes: [VERTEX_SCOPE] }).getClient();
    const tokenUrl = this.opts.tokenUrl ?? sa?.token_uri;
    // google-auth-library posts the JWT grant to Google's endpoint whatever the key file names:
    // point it at the configured one (a private endpoint, or a test's mock).
    if (tokenUrl && tokenUrl !== GOOGLE_TOKEN_URL)
      client.transporter.interceptors.request.add({
        resolved: async (config) => {
          if (String(config.url) === GOOGLE_TOKEN_URL) config.url = new URL(tokenUrl);
          return config;
        },
      });
    return client;
  }

  /**
   * A refused grant (unknown key, disabled account) is the operator's to fix: 401, not retryable.
   * An unreachable or failing token service is retryable, like any upstream 5xx.
   */
  private tokenError(err: unknown): UpstreamError {
    const e = err as { status?: unknown; response?: { status?: unknown }; message?: unknown };
    const status = Number(e?.status ?? e?.response?.status) || 0;
    const why = String(e?.message ?? err).split('\n')[0] ?? '';
    const refused = status >= 400 && status < 500 && status !== 429;
    const noCredentials = !status && /default credentials/i.test(why);
    // Neither the key nor a signed assertion (a JWT, good for an hour) is ever part of a message.
    const message = redact(`Google OAuth token request failed: ${why}`, this.secrets).replace(
      /eyJ[\w-]+\.[\w-]+\.[\w-]+/g,
      '[redacted]',
    );
    if (refused || noCredentials) return new UpstreamError(401, message, { retryable: false });
    return new UpstreamError(502, message, { retryable: true });
  }
}
