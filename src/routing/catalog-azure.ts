/**
 * Azure OpenAI entries of GATEHOUSE_CONFIG (`kind: azure`): the resource `endpoint`, `api_version`
 * and the `deployments` map, checked at startup so a misconfigured entry refuses to start with the
 * field named instead of failing on the first call.
 */
import { AZURE_DEFAULT_API_VERSION } from '../providers/azure/adapter.js';
import type { AzureSettings, EntraAuth } from '../providers/types.js';
import { CatalogError } from './catalog-error.js';
import type { ModelEntry, ProviderEntry } from './catalog-types.js';

/** What an Azure entry of GATEHOUSE_CONFIG carries besides the common provider fields. */
export interface AzureFileFields {
  endpoint?: unknown;
  api_version?: unknown;
  deployments?: unknown;
  api_key?: unknown;
  api_key_env?: unknown;
  byok?: unknown;
  /** Microsoft Entra ID client credentials instead of a key. */
  auth?: unknown;
}

/** The checked endpoint (no trailing slash) and settings of an Azure entry; CatalogError naming the bad field. */
export function azureSettings(
  p: AzureFileFields & { slug: string },
  apiKey: string | null,
  where: string,
  env: Record<string, string | undefined>,
): { endpoint: string; azure: AzureSettings } {
  const fail = (field: string, why: string): never => {
    throw new CatalogError(`${where}.${field} (provider ${p.slug}): ${why}`);
  };
  if (typeof p.endpoint !== 'string' || !p.endpoint)
    fail('endpoint', 'required: the resource URL, e.g. https://<resource>.openai.azure.com');
  let url: URL | null = null;
  try {
    url = new URL(p.endpoint as string);
  } catch {}
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.search || url.hash)
    fail('endpoint', `not an http(s) URL: ${JSON.stringify(p.endpoint)}`);
  if (p.api_version !== undefined && (typeof p.api_version !== 'string' || !/^[\w.-]+$/.test(p.api_version)))
    fail('api_version', 'must be a version string such as "2024-10-21"');
  const deployments: Record<string, string> = {};
  if (p.deployments !== undefined) {
    if (!p.deployments || typeof p.deployments !== 'object' || Array.isArray(p.deployments))
      fail('deployments', 'must map model ids to deployment names');
    for (const [model, name] of Object.entries(p.deployments as object)) {
      if (typeof name !== 'string' || !name.trim()) fail(`deployments.${model}`, 'must be a deployment name');
      deployments[model] = name;
    }
  }
  if (p.auth !== undefined) {
    if (p.api_key !== undefined || p.api_key_env !== undefined)
      fail('auth', 'takes the place of api_key/api_key_env: configure one of them');
    if (p.byok === true)
      fail('byok', 'organizations cannot bring keys to an entry authenticated by Entra ID');
    const entra = entraAuth(p.auth, env, (field, why) => fail(`auth.${field}`, why));
    return {
      endpoint: (p.endpoint as string).replace(/\/+$/, ''),
      azure: {
        apiVersion: (p.api_version as string | undefined) ?? AZURE_DEFAULT_API_VERSION,
        deployments,
        entra,
      },
    };
  }
  if (apiKey === null)
    fail(
      p.api_key_env !== undefined ? 'api_key_env' : 'api_key',
      p.api_key_env !== undefined
        ? `the variable ${String(p.api_key_env)} is not set`
        : 'required (or api_key_env naming the variable holding the key)',
    );
  return {
    endpoint: (p.endpoint as string).replace(/\/+$/, ''),
    azure: { apiVersion: (p.api_version as string | undefined) ?? AZURE_DEFAULT_API_VERSION, deployments },
  };
}

/** `auth: { tenant_id, client_id, client_secret | client_secret_env, token_url? }`, checked. */
function entraAuth(
  raw: unknown,
  env: Record<string, string | undefined>,
  fail: (field: string, why: string) => never,
): EntraAuth {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    return fail('tenant_id', 'auth needs tenant_id, client_id and client_secret');
  const a = raw as Record<string, unknown>;
  const text = (field: string): string => {
    const v = a[field];
    return typeof v === 'string' && v.trim() ? v : fail(field, 'required');
  };
  const tenantId = text('tenant_id');
  const clientId = text('client_id');
  let clientSecret: string;
  if (a.client_secret_env !== undefined) {
    const name = String(a.client_secret_env);
    clientSecret = env[name] || fail('client_secret_env', `the variable ${name} is not set`);
  } else clientSecret = text('client_secret');
  let tokenUrl: string | undefined;
  if (a.token_url !== undefined) {
    let url: URL | null = null;
    try {
      url = new URL(String(a.token_url));
    } catch {}
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:'))
      fail('token_url', `not an http(s) URL: ${JSON.stringify(a.token_url)}`);
    tokenUrl = String(a.token_url);
  }
  return { tenantId, clientId, clientSecret, ...(tokenUrl ? { tokenUrl } : {}) };
}

/**
 * Deployments keyed by a catalog model id also apply to that model's upstream id on the provider
 * (the adapter only sees upstream ids): `{ "openai/gpt-4o": "prod-4o" }` routes `gpt-4o` there.
 */
export function resolveAzureDeployments(
  providers: Map<string, ProviderEntry>,
  models: Map<string, ModelEntry>,
): void {
  for (const m of models.values())
    for (const e of m.endpoints) {
      const deployments = providers.get(e.provider)?.config.azure?.deployments;
      const name = deployments?.[m.id];
      if (deployments && name && deployments[e.upstreamModel] === undefined)
        deployments[e.upstreamModel] = name;
    }
}
