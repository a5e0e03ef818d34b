/**
 * AWS Bedrock entries of GATEHOUSE_CONFIG (`kind: bedrock`): the `region`, an optional `endpoint`
 * (a VPC endpoint, or a test server), explicit credentials or the AWS default provider chain
 * (with an optional `profile`), and the `model_ids` map — checked at startup so a misconfigured
 * entry refuses to start with the field named instead of failing on the first call.
 */
import { bedrockRuntimeUrl } from '../providers/bedrock/signer.js';
import type { AwsKeys, BedrockBatchSettings, BedrockSettings } from '../providers/types.js';
import { CatalogError } from './catalog-error.js';
import type { ModelEntry, ProviderEntry } from './catalog-types.js';

/** What a Bedrock entry of GATEHOUSE_CONFIG carries besides the common provider fields. */
export interface BedrockFileFields {
  region?: unknown;
  endpoint?: unknown;
  access_key_id?: unknown;
  secret_access_key?: unknown;
  session_token?: unknown;
  profile?: unknown;
  model_ids?: unknown;
  api_key?: unknown;
  api_key_env?: unknown;
  byok?: unknown;
  native_batches?: unknown;
  batch_s3_uri?: unknown;
  batch_role_arn?: unknown;
  batch_s3_endpoint?: unknown;
  batch_endpoint?: unknown;
}

/** The checked endpoint (no trailing slash) and settings of a Bedrock entry; CatalogError naming the bad field. */
export function bedrockSettings(
  p: BedrockFileFields & { slug: string },
  where: string,
): { endpoint: string; bedrock: BedrockSettings } {
  const fail = (field: string, why: string): never => {
    throw new CatalogError(`${where}.${field} (provider ${p.slug}): ${why}`);
  };
  if (p.region === undefined || p.region === '') fail('region', 'required: the AWS region, e.g. us-east-1');
  if (typeof p.region !== 'string' || !/^[a-z]{2}(-[a-z]+)+-\d+$/.test(p.region))
    fail('region', `not an AWS region: ${JSON.stringify(p.region)} (e.g. us-east-1)`);
  const region = p.region as string;
  const httpUrl = (field: 'endpoint' | 'batch_endpoint' | 'batch_s3_endpoint'): string | undefined => {
    const v = p[field];
    if (v === undefined) return undefined;
    let url: URL | null = null;
    try {
      url = new URL(String(v));
    } catch {}
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.search || url.hash)
      fail(field, `not an http(s) URL: ${JSON.stringify(v)}`);
    return String(v).replace(/\/+$/, '');
  };
  const endpoint = httpUrl('endpoint') ?? bedrockRuntimeUrl(region);
  // Calls are signed with AWS credentials: a Gatehouse key (or an organization's) has no place here.
  if (p.api_key !== undefined || p.api_key_env !== undefined)
    fail(
      p.api_key !== undefined ? 'api_key' : 'api_key_env',
      'not used by kind bedrock: give AWS credentials (access_key_id and secret_access_key) or let the AWS default chain find them',
    );
  if (p.byok === true) fail('byok', 'organizations cannot bring keys to a Bedrock entry');
  const text = (field: 'access_key_id' | 'secret_access_key' | 'session_token' | 'profile') => {
    const v = p[field];
    if (v === undefined) return undefined;
    return typeof v === 'string' && v.trim() ? v.trim() : fail(field, 'must be a non-empty string');
  };
  const accessKeyId = text('access_key_id');
  const secretAccessKey = text('secret_access_key');
  const sessionToken = text('session_token');
  const profile = text('profile');
  let credentials: AwsKeys | undefined;
  if (accessKeyId !== undefined || secretAccessKey !== undefined || sessionToken !== undefined) {
    if (accessKeyId === undefined) fail('access_key_id', 'required with secret_access_key');
    if (secretAccessKey === undefined) fail('secret_access_key', 'required with access_key_id');
    if (!/^[A-Z0-9]{16,128}$/.test(accessKeyId as string))
      fail('access_key_id', 'not an AWS access key id (AKIA…/ASIA…)');
    if (profile !== undefined) fail('profile', 'takes the place of explicit keys: configure one of them');
    credentials = {
      accessKeyId: accessKeyId as string,
      secretAccessKey: secretAccessKey as string,
      ...(sessionToken ? { sessionToken } : {}),
    };
  }
  const modelIds: Record<string, string> = {};
  if (p.model_ids !== undefined) {
    if (!p.model_ids || typeof p.model_ids !== 'object' || Array.isArray(p.model_ids))
      fail('model_ids', 'must map model ids to Bedrock model ids');
    for (const [model, id] of Object.entries(p.model_ids as object)) {
      if (typeof id !== 'string' || !/^[\w.:/-]{1,256}$/.test(id))
        fail(`model_ids.${model}`, 'must be a Bedrock model id, inference profile id or ARN');
      modelIds[model] = id;
    }
  }
  const batch = batchSettings(p, region, fail, httpUrl);
  return {
    endpoint,
    bedrock: {
      region,
      modelIds,
      ...(credentials ? { credentials } : {}),
      ...(profile ? { profile } : {}),
      ...(batch ? { batch } : {}),
    },
  };
}

/**
 * Batch inference (native batches), only where configured: the S3 location and the service role
 * go together; `native_batches: true` without them is refused rather than silently ignored.
 */
function batchSettings(
  p: BedrockFileFields,
  region: string,
  fail: (field: string, why: string) => never,
  httpUrl: (field: 'batch_endpoint' | 'batch_s3_endpoint') => string | undefined,
): BedrockBatchSettings | undefined {
  const s3Endpoint = httpUrl('batch_s3_endpoint');
  const endpoint = httpUrl('batch_endpoint');
  if (p.batch_s3_uri === undefined && p.batch_role_arn === undefined) {
    if (p.native_batches === true)
      fail('batch_s3_uri', 'required for native_batches on kind bedrock (with batch_role_arn)');
    if (s3Endpoint || endpoint)
      fail(s3Endpoint ? 'batch_s3_endpoint' : 'batch_endpoint', 'needs batch_s3_uri and batch_role_arn');
    return undefined;
  }
  if (p.batch_s3_uri === undefined) fail('batch_s3_uri', 'required with batch_role_arn');
  if (p.batch_role_arn === undefined) fail('batch_role_arn', 'required with batch_s3_uri');
  // Bucket names: 3–63 lowercase letters, digits, dots and hyphens.
  if (
    typeof p.batch_s3_uri !== 'string' ||
    !/^s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\/[^?#]*)?$/.test(p.batch_s3_uri)
  )
    fail('batch_s3_uri', `not an S3 location: ${JSON.stringify(p.batch_s3_uri)} (s3://bucket/prefix)`);
  if (
    typeof p.batch_role_arn !== 'string' ||
    !/^arn:aws(-[a-z]+)*:iam::\d{12}:role\/[\w+=,.@/-]{1,512}$/.test(p.batch_role_arn)
  )
    fail('batch_role_arn', 'not an IAM role ARN (arn:aws:iam::123456789012:role/name)');
  return {
    s3Uri: (p.batch_s3_uri as string).replace(/\/+$/, ''),
    roleArn: p.batch_role_arn as string,
    endpoint: endpoint ?? `https://bedrock.${region}.amazonaws.com`,
    ...(s3Endpoint ? { s3Endpoint } : {}),
  };
}

/**
 * Model ids keyed by a catalog model id also apply to that model's upstream id on the provider
 * (the adapter only sees upstream ids): `{ "anthropic/claude-sonnet-4": "us.anthropic.…" }`.
 */
export function resolveBedrockModelIds(
  providers: Map<string, ProviderEntry>,
  models: Map<string, ModelEntry>,
): void {
  for (const m of models.values())
    for (const e of m.endpoints) {
      const ids = providers.get(e.provider)?.config.bedrock?.modelIds;
      const id = ids?.[m.id];
      if (ids && id && ids[e.upstreamModel] === undefined) ids[e.upstreamModel] = id;
    }
}
