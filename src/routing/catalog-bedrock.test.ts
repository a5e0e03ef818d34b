import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CatalogError, loadCatalog } from './catalog.js';

const config = (providers: object[], models: object[] = []) => {
  const path = join(mkdtempSync(join(tmpdir(), 'bedrock-')), 'gatehouse.json');
  writeFileSync(path, JSON.stringify({ providers, models }));
  return { GATEHOUSE_CONFIG: path, GATEHOUSE_DEV_PROVIDER: 'false' };
};

const entry = { slug: 'aws', kind: 'bedrock', region: 'eu-central-1' };

describe('AWS Bedrock entries', () => {
  it("take the region's runtime endpoint, no key, and the model id map (catalog ids applied to upstream ids)", () => {
    const c = loadCatalog(
      config(
        [{ ...entry, model_ids: { 'acme/claude': 'eu.anthropic.claude-sonnet-4-20250514-v1:0' } }],
        [{ id: 'acme/claude', endpoints: [{ provider: 'aws', upstream_model: 'claude' }] }],
      ),
    );
    const aws = c.providers.get('aws')!;
    expect(aws.config).toMatchObject({
      kind: 'bedrock',
      baseUrl: 'https://bedrock-runtime.eu-central-1.amazonaws.com',
      apiKey: null,
      bedrock: { region: 'eu-central-1' },
    });
    expect(aws.config.bedrock!.credentials).toBeUndefined();
    expect(aws.config.bedrock!.modelIds.claude).toBe('eu.anthropic.claude-sonnet-4-20250514-v1:0');
    expect(aws.byok).toBe(false);
    expect(aws.region).toBe('eu-central-1');
  });

  it('take explicit keys, a session token and an endpoint override', () => {
    const c = loadCatalog(
      config([
        {
          ...entry,
          endpoint: 'http://127.0.0.1:9999/',
          access_key_id: 'ASIAEXAMPLE000000001',
          secret_access_key: 's3cr3t',
          session_token: 'tok',
        },
      ]),
    );
    const aws = c.providers.get('aws')!.config;
    expect(aws.baseUrl).toBe('http://127.0.0.1:9999');
    expect(aws.bedrock!.credentials).toEqual({
      accessKeyId: 'ASIAEXAMPLE000000001',
      secretAccessKey: 's3cr3t',
      sessionToken: 'tok',
    });
  });

  it.each([
    [{ region: undefined }, 'providers[0].region (provider aws): required'],
    [{ region: 'us_east_1' }, 'providers[0].region'],
    [{ endpoint: 'ftp://x' }, 'providers[0].endpoint'],
    [{ secret_access_key: 'sekrit' }, 'providers[0].access_key_id'],
    [{ access_key_id: 'AKIAEXAMPLE000000001' }, 'providers[0].secret_access_key'],
    [
      { access_key_id: 'AKIAEXAMPLE000000001', secret_access_key: 'sekrit', profile: 'p' },
      'providers[0].profile',
    ],
    [{ api_key_env: 'X' }, 'providers[0].api_key_env'],
    [{ byok: true }, 'providers[0].byok'],
    [{ model_ids: ['x'] }, 'providers[0].model_ids'],
    [{ model_ids: { 'a/b': 'x y' } }, 'providers[0].model_ids.a/b'],
  ])('refuse %j naming the field', (fields, message) => {
    const run = () => loadCatalog(config([{ ...entry, ...fields }]));
    expect(run).toThrow(CatalogError);
    expect(run).toThrow(message);
    try {
      run();
    } catch (err) {
      expect((err as Error).message).not.toContain('sekrit');
    }
  });
});

describe('Bedrock batch inference settings', () => {
  const ROLE = 'arn:aws:iam::123456789012:role/BedrockBatchRole';
  const batchEntry = (extra: Record<string, unknown>) =>
    loadCatalog(config([{ slug: 'aws', kind: 'bedrock', region: 'us-east-1', ...extra }])).providers.get(
      'aws',
    )!;

  it('takes the S3 location, the role and the optional endpoints', () => {
    const e = batchEntry({
      batch_s3_uri: 's3://my-bucket/gatehouse/',
      batch_role_arn: ROLE,
      batch_s3_endpoint: 'http://127.0.0.1:4569/',
    });
    expect(e.config.bedrock?.batch).toEqual({
      s3Uri: 's3://my-bucket/gatehouse',
      roleArn: ROLE,
      endpoint: 'https://bedrock.us-east-1.amazonaws.com',
      s3Endpoint: 'http://127.0.0.1:4569',
    });
    expect(batchEntry({}).config.bedrock?.batch).toBeUndefined();
  });

  it.each([
    [{ batch_s3_uri: 's3://my-bucket/p' }, /batch_role_arn.*required with batch_s3_uri/],
    [{ batch_role_arn: ROLE }, /batch_s3_uri.*required with batch_role_arn/],
    [
      { batch_s3_uri: 'https://my-bucket.s3.amazonaws.com/p', batch_role_arn: ROLE },
      /batch_s3_uri.*not an S3 location/,
    ],
    [{ batch_s3_uri: 's3://My_Bucket/p', batch_role_arn: ROLE }, /batch_s3_uri/],
    [
      { batch_s3_uri: 's3://my-bucket/p', batch_role_arn: 'BedrockBatchRole' },
      /batch_role_arn.*not an IAM role ARN/,
    ],
    [
      { batch_s3_uri: 's3://my-bucket/p', batch_role_arn: ROLE, batch_s3_endpoint: 'ftp://x' },
      /batch_s3_endpoint.*not an http\(s\) URL/,
    ],
    [{ batch_s3_endpoint: 'http://127.0.0.1:4569' }, /batch_s3_endpoint.*needs batch_s3_uri/],
    [{ native_batches: true }, /batch_s3_uri.*required for native_batches/],
  ])('refuses %j naming the field', (extra, message) => {
    expect(() => batchEntry(extra)).toThrow(CatalogError);
    expect(() => batchEntry(extra)).toThrow(message);
  });
});
