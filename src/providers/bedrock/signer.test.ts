import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { UpstreamError } from '../types.js';
import { BedrockSigner } from './signer.js';

const URL_ = 'https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse';
const req = { url: URL_, body: '{}', headers: { 'content-type': 'application/json' } };
const signal = new AbortController().signal;
const keyIdOf = (h: Record<string, string>) => /Credential=([^/]+)\//.exec(h.authorization ?? '')?.[1];

/** The AWS default chain, isolated: no shared files, no instance metadata, only what a test sets. */
const CHAIN_ENV = [
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_PROFILE',
  'AWS_CONFIG_FILE',
  'AWS_SHARED_CREDENTIALS_FILE',
  'AWS_EC2_METADATA_DISABLED',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  'AWS_WEB_IDENTITY_TOKEN_FILE',
  'AWS_ROLE_ARN',
  'AWS_REGION',
  'AWS_ENDPOINT_URL_STS',
];
const saved = Object.fromEntries(CHAIN_ENV.map((k) => [k, process.env[k]]));
function isolate(): void {
  for (const k of CHAIN_ENV) delete process.env[k];
  process.env.AWS_CONFIG_FILE = '/nonexistent/aws-config';
  process.env.AWS_SHARED_CREDENTIALS_FILE = '/nonexistent/aws-credentials';
  process.env.AWS_EC2_METADATA_DISABLED = 'true';
}
afterEach(() => {
  for (const k of CHAIN_ENV) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});

describe('BedrockSigner', () => {
  it('signs with explicit keys for service bedrock in the region, the secret never in a header', async () => {
    const secret = 'explicit-secret-0123456789';
    const signer = new BedrockSigner({
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKIAEXPLICIT0000001', secretAccessKey: secret, sessionToken: 'tok-1' },
    });
    const h = await signer.sign(req, signal);
    expect(h.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIAEXPLICIT0000001\/\d{8}\/eu-west-1\/bedrock\/aws4_request, SignedHeaders=[^,]*host[^,]*, Signature=[0-9a-f]{64}$/,
    );
    expect(h['x-amz-security-token']).toBe('tok-1');
    expect(h.host).toBe('bedrock-runtime.us-east-1.amazonaws.com');
    expect(JSON.stringify(h)).not.toContain(secret);
    expect(signer.secrets()).toEqual([secret, 'tok-1']);
  });

  it('without keys, takes them from the environment through the AWS default chain', async () => {
    isolate();
    process.env.AWS_ACCESS_KEY_ID = 'AKIAFROMENVIRONMENT1';
    process.env.AWS_SECRET_ACCESS_KEY = 'env-secret-0123456789';
    const h = await new BedrockSigner({ region: 'us-east-1' }).sign(req, signal);
    expect(keyIdOf(h)).toBe('AKIAFROMENVIRONMENT1');
  });

  it('reads the named profile of the shared credentials file', async () => {
    isolate();
    const dir = mkdtempSync(join(tmpdir(), 'aws-'));
    process.env.AWS_SHARED_CREDENTIALS_FILE = join(dir, 'credentials');
    writeFileSync(
      process.env.AWS_SHARED_CREDENTIALS_FILE,
      '[default]\naws_access_key_id = AKIADEFAULTPROFILE01\naws_secret_access_key = d\n\n' +
        '[bedrock]\naws_access_key_id = AKIABEDROCKPROFILE01\naws_secret_access_key = b\n',
    );
    const h = await new BedrockSigner({ region: 'us-east-1', profile: 'bedrock' }).sign(req, signal);
    expect(keyIdOf(h)).toBe('AKIABEDROCKPROFILE01');
  });

  it('a chain that finds nothing fails the call with a 401 naming the credentials', async () => {
    isolate();
    const err = await new BedrockSigner({ region: 'us-east-1' }).sign(req, signal).catch((e) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err.status).toBe(401);
    expect(err.message).toContain('AWS credentials unavailable');
  });
});

describe('BedrockSigner with web identity (an EKS service account)', () => {
  it('exchanges the token file for role credentials at STS', async () => {
    let call = '';
    const sts = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        call = body;
        res.writeHead(200, { 'content-type': 'text/xml' });
        res.end(
          '<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">' +
            '<AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIAWEBIDENTITY00001</AccessKeyId>' +
            '<SecretAccessKey>wi-secret</SecretAccessKey><SessionToken>wi-token</SessionToken>' +
            `<Expiration>${new Date(Date.now() + 3_600_000).toISOString()}</Expiration></Credentials>` +
            '</AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>',
        );
      });
    });
    await new Promise<void>((r) => sts.listen(0, '127.0.0.1', r));
    try {
      isolate();
      const dir = mkdtempSync(join(tmpdir(), 'aws-wi-'));
      writeFileSync(join(dir, 'token'), 'oidc-token-from-the-cluster');
      process.env.AWS_WEB_IDENTITY_TOKEN_FILE = join(dir, 'token');
      process.env.AWS_ROLE_ARN = 'arn:aws:iam::123456789012:role/gatehouse';
      process.env.AWS_REGION = 'us-east-1';
      process.env.AWS_ENDPOINT_URL_STS = `http://127.0.0.1:${(sts.address() as AddressInfo).port}`;
      const h = await new BedrockSigner({ region: 'us-east-1' }).sign(req, signal);
      expect(keyIdOf(h)).toBe('ASIAWEBIDENTITY00001');
      expect(h['x-amz-security-token']).toBe('wi-token');
      const form = new URLSearchParams(call);
      expect(form.get('Action')).toBe('AssumeRoleWithWebIdentity');
      expect(form.get('RoleArn')).toBe('arn:aws:iam::123456789012:role/gatehouse');
      expect(form.get('WebIdentityToken')).toBe('oidc-token-from-the-cluster');
    } finally {
      await new Promise<void>((r) => sts.close(() => r()));
    }
  });
});

describe('BedrockSigner with a container role (temporary credentials)', () => {
  let fetches = 0;
  const server = createServer((_req, res) => {
    fetches++;
    // The first credentials are four minutes from expiring (inside the five-minute renewal
    // window); the next ones last an hour.
    const ttl = fetches === 1 ? 4 * 60_000 : 3_600_000;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        AccessKeyId: `ASIACONTAINER000000${fetches}`,
        SecretAccessKey: `container-secret-${fetches}`,
        Token: `container-token-${fetches}`,
        Expiration: new Date(Date.now() + ttl).toISOString(),
      }),
    );
  });
  let uri = '';
  beforeAll(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    uri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/creds`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('caches them, and fetches new ones before they expire', async () => {
    isolate();
    process.env.AWS_CONTAINER_CREDENTIALS_FULL_URI = uri;
    const signer = new BedrockSigner({ region: 'us-east-1' });
    const first = await signer.sign(req, signal);
    expect(keyIdOf(first)).toBe('ASIACONTAINER0000001');
    expect(first['x-amz-security-token']).toBe('container-token-1');
    // Still valid, but close to expiry: used while new ones are fetched (one fetch), then replaced.
    let renewed = await signer.sign(req, signal);
    for (let i = 0; i < 10_000 && keyIdOf(renewed) !== 'ASIACONTAINER0000002'; i++) {
      await new Promise((r) => setImmediate(r));
      renewed = await signer.sign(req, signal);
    }
    expect(keyIdOf(renewed)).toBe('ASIACONTAINER0000002');
    expect(renewed['x-amz-security-token']).toBe('container-token-2');
    // The renewed credentials last an hour: no more fetches.
    await signer.sign(req, signal);
    await signer.sign(req, signal);
    expect(fetches).toBe(2);
    expect(signer.secrets()).toEqual(expect.arrayContaining(['container-secret-1', 'container-secret-2']));
  });
});
