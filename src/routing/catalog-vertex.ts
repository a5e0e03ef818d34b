/**
 * Google Vertex AI entries of GATEHOUSE_CONFIG (`kind: vertex`): `project`, `region`, the
 * credentials (a service account's key file, inline or by path, else application default
 * credentials), an optional `endpoint` and `token_url`, and `publishers` overrides — checked at
 * startup so a misconfigured entry refuses to start with the field named. The private key is
 * never part of a message.
 */
import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ServiceAccountKey, VertexPublisher, VertexSettings } from '../providers/types.js';
import { vertexOrigin } from '../providers/vertex/urls.js';
import { CatalogError } from './catalog-error.js';

/** What a Vertex entry of GATEHOUSE_CONFIG carries besides the common provider fields. */
export interface VertexFileFields {
  project?: unknown;
  region?: unknown;
  endpoint?: unknown;
  /** A service account's key: the JSON object, its text, or the path of its file. */
  credentials?: unknown;
  /** The variable holding the key's JSON text or its file's path. */
  credentials_env?: unknown;
  token_url?: unknown;
  publishers?: unknown;
  api_key?: unknown;
  api_key_env?: unknown;
  byok?: unknown;
}

const PUBLISHERS: readonly VertexPublisher[] = ['google', 'anthropic'];

/** The checked origin (no trailing slash) and settings of a Vertex entry; CatalogError naming the bad field. */
export function vertexSettings(
  p: VertexFileFields & { slug: string },
  where: string,
  env: Record<string, string | undefined>,
): { endpoint: string; vertex: VertexSettings } {
  const fail = (field: string, why: string): never => {
    throw new CatalogError(`${where}.${field} (provider ${p.slug}): ${why}`);
  };
  if (typeof p.project !== 'string' || !p.project) fail('project', 'required: the Google Cloud project id');
  if (!/^[\w.:-]{1,100}$/.test(p.project as string))
    fail('project', `not a project id: ${JSON.stringify(p.project)}`);
  if (typeof p.region !== 'string' || !p.region)
    fail('region', 'required: e.g. us-central1, europe-west4 or global');
  if (!/^(global|[a-z]+(-[a-z0-9]+)+)$/.test(p.region as string))
    fail(
      'region',
      `not a Vertex AI region: ${JSON.stringify(p.region)} (e.g. us-central1, europe-west4, global)`,
    );
  for (const field of ['api_key', 'api_key_env'] as const)
    if (p[field] !== undefined)
      fail(
        field,
        'Vertex AI takes Google credentials: set credentials, or none for application default credentials',
      );
  if (p.byok === true) fail('byok', 'organizations cannot bring keys to a Vertex AI entry');
  const endpoint =
    p.endpoint === undefined ? vertexOrigin(p.region as string) : httpUrl(p.endpoint, 'endpoint', fail);
  const tokenUrl = p.token_url === undefined ? undefined : httpUrl(p.token_url, 'token_url', fail);
  const serviceAccount = credentials(p, env, fail);
  const publishers: Record<string, VertexPublisher> = {};
  if (p.publishers !== undefined) {
    if (!p.publishers || typeof p.publishers !== 'object' || Array.isArray(p.publishers))
      fail('publishers', 'must map model ids to "google" or "anthropic"');
    for (const [model, publisher] of Object.entries(p.publishers as object)) {
      if (!PUBLISHERS.includes(publisher)) fail(`publishers.${model}`, 'must be "google" or "anthropic"');
      publishers[model] = publisher;
    }
  }
  return {
    endpoint: endpoint.replace(/\/+$/, ''),
    vertex: {
      project: p.project as string,
      region: p.region as string,
      ...(serviceAccount ? { serviceAccount } : {}),
      ...(tokenUrl ? { tokenUrl } : {}),
      publishers,
    },
  };
}

function httpUrl(raw: unknown, field: string, fail: (field: string, why: string) => never): string {
  let url: URL | null = null;
  try {
    url = new URL(String(raw));
  } catch {}
  if (typeof raw !== 'string' || !url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.hash)
    fail(field, `not an http(s) URL: ${JSON.stringify(raw)}`);
  return raw as string;
}

/** The service account's key from `credentials` / `credentials_env`; undefined: application default credentials. */
function credentials(
  p: VertexFileFields,
  env: Record<string, string | undefined>,
  fail: (field: string, why: string) => never,
): ServiceAccountKey | undefined {
  if (p.credentials !== undefined && p.credentials_env !== undefined)
    fail('credentials', 'configure credentials or credentials_env, not both');
  let field = 'credentials';
  let raw = p.credentials;
  if (p.credentials_env !== undefined) {
    field = 'credentials_env';
    raw = env[String(p.credentials_env)];
    if (!raw) fail(field, `the variable ${String(p.credentials_env)} is not set`);
  }
  if (raw === undefined) return undefined;
  let json: unknown = raw;
  if (typeof raw === 'string') {
    const text = raw.trim();
    if (!text.startsWith('{')) {
      try {
        json = JSON.parse(readFileSync(text, 'utf8'));
      } catch (err) {
        const why = (err as NodeJS.ErrnoException).code ?? 'not JSON';
        return fail(field, `cannot read a service account key file at ${JSON.stringify(text)} (${why})`);
      }
    } else {
      try {
        json = JSON.parse(text);
      } catch {
        return fail(field, 'not valid JSON (a service account key file, or its path)');
      }
    }
  }
  return serviceAccountKey(json, (f, why) => fail(`${field}.${f}`, why));
}

/** A key file's fields, checked (the private key must load; it is never quoted). */
function serviceAccountKey(json: unknown, fail: (field: string, why: string) => never): ServiceAccountKey {
  if (!json || typeof json !== 'object' || Array.isArray(json))
    return fail('type', 'expected a service account key file (JSON object)');
  const k = json as Record<string, unknown>;
  if (k.type !== undefined && k.type !== 'service_account')
    fail(
      'type',
      `is ${JSON.stringify(k.type)}: only service_account keys (leave credentials out to use application default credentials)`,
    );
  if (typeof k.client_email !== 'string' || !k.client_email.includes('@'))
    fail('client_email', 'required: the service account e-mail');
  if (typeof k.private_key !== 'string' || !k.private_key) fail('private_key', 'required');
  try {
    createPrivateKey(k.private_key as string);
  } catch {
    fail('private_key', 'not a PEM private key');
  }
  if (k.token_uri !== undefined) httpUrl(k.token_uri, 'token_uri', fail);
  return {
    client_email: k.client_email as string,
    private_key: k.private_key as string,
    ...(typeof k.private_key_id === 'string' ? { private_key_id: k.private_key_id } : {}),
    ...(typeof k.token_uri === 'string' ? { token_uri: k.token_uri } : {}),
  };
}
