/**
 * SigV4 for Bedrock Runtime with the AWS SDK's own signer (`@smithy/signature-v4`, service
 * `bedrock`). Credentials are the entry's explicit keys, or the SDK's default provider chain
 * (environment, shared config/credentials profiles, web identity, ECS container and EC2 instance
 * roles). The chain memoizes what it found and fetches again five minutes before the credentials'
 * `expiration`, so temporary credentials are renewed before they lapse; one chain per provider.
 */
import { Sha256 } from '@aws-crypto/sha256-js';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { SignatureV4 } from '@smithy/signature-v4';
import type { CallSignal } from '../../lib/call-abort.js';
import { extended } from '../../lib/objects.js';
import { abortReason, redact } from '../http.js';
import { type BedrockSettings, UpstreamError } from '../types.js';

export const BEDROCK_SERVICE = 'bedrock';

interface AwsCredentialIdentity {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}
type AwsCredentialIdentityProvider = () => Promise<AwsCredentialIdentity>;

/** The Bedrock Runtime endpoint of a region. */
export const bedrockRuntimeUrl = (region: string): string =>
  `https://bedrock-runtime.${region}.amazonaws.com`;

/** What a request needs signed: the exact bytes and headers that go on the wire. */
export interface Signable {
  /** POST unless said (batch inference's control plane also has GETs). */
  method?: 'GET' | 'POST';
  url: string;
  body: string;
  headers: Record<string, string>;
}

export class BedrockSigner {
  private readonly signer: SignatureV4;
  private readonly credentials: AwsCredentialIdentityProvider;
  /** The secrets of the credentials seen so far, scrubbed from every error message. */
  private readonly seen = new Set<string>();

  constructor(settings: Pick<BedrockSettings, 'region' | 'credentials' | 'profile'>) {
    const keys = settings.credentials;
    this.credentials = keys
      ? async () => keys
      : defaultProvider(settings.profile ? { profile: settings.profile } : {});
    if (keys) this.remember(keys);
    this.signer = new SignatureV4({
      service: BEDROCK_SERVICE,
      region: settings.region,
      sha256: Sha256,
      credentials: () => this.current(),
    });
  }

  /** Secret access keys and session tokens known to this signer (for `redact`). */
  secrets(): string[] {
    return [...this.seen];
  }

  private remember(c: AwsCredentialIdentity): void {
    this.seen.add(c.secretAccessKey);
    if (c.sessionToken) this.seen.add(c.sessionToken);
  }

  /** The same credentials for other AWS clients (batch inference's S3 client). */
  credentialProvider(): AwsCredentialIdentityProvider {
    return () => this.current();
  }

  /** The current credentials (cached by the chain); a chain that finds none → UpstreamError. */
  private async current(): Promise<AwsCredentialIdentity> {
    try {
      const c = await this.credentials();
      this.remember(c);
      return c;
    } catch (err) {
      // The operator's to fix, but another provider of the model may still serve the call.
      throw new UpstreamError(
        401,
        redact(`AWS credentials unavailable: ${String((err as Error)?.message ?? err)}`, this.secrets()),
        { retryable: true },
      );
    }
  }

  /** The headers to send: `req.headers` plus host, x-amz-date, (x-amz-security-token) and Authorization. */
  async sign(req: Signable, signal: CallSignal): Promise<Record<string, string>> {
    const u = new URL(req.url);
    const signed = await this.signer.sign({
      method: req.method ?? 'POST',
      protocol: u.protocol,
      hostname: u.hostname,
      ...(u.port ? { port: Number(u.port) } : {}),
      path: u.pathname,
      query: Object.fromEntries(u.searchParams),
      headers: extended(req.headers, { host: u.host }),
      body: req.body,
    });
    if (signal.aborted) throw abortReason(signal);
    return signed.headers as Record<string, string>;
  }
}
