/**
 * Azure OpenAI entries of GATEHOUSE_CONFIG (`kind: azure`): the resource `endpoint`, `api_version`
 * and the `deployments` map, checked at startup so a misconfigured entry refuses to start with the
 * field named instead of failing on the first call.
 */
import { AZURE_DEFAULT_API_VERSION } from '../providers/azure/adapter.js';
import type { AzureSettings } from '../providers/types.js';
import type { ModelEntry, ProviderEntry } from './catalog.js';
import { CatalogError } from './catalog-config.js';

/** What an Azure entry of GATEHOUSE_CONFIG carries besides the common provider fields. */
export interface AzureFileFields {
  endpoint?: unknown;
  api_version?: unknown;
  deployments?: unknown;
  api_key?: unknown;
  api_key_env?: unknown;
}

/** The checked endpoint (no trailing slash) and settings of an Azure entry; CatalogError naming the bad field. */
export function azureSettings(
  p: AzureFileFields & { slug: string },
  apiKey: string | null,
  where: string,
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
