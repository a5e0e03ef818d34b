import { ADMIN_TOKEN } from './gateway.js';

export interface JsonResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/**
 * A small JSON client over real sockets: `client(base, key)('GET', '/keys')`. `timeoutMs` bounds
 * each call (tests against processes that may be down).
 */
export function client(baseUrl: string, key?: string, opts: { timeoutMs?: number } = {}) {
  return async function call<T = any>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<JsonResponse<T>> {
    const res = await fetch(`${baseUrl}/api/v1${path}`, {
      method,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      ...(opts.timeoutMs ? { signal: AbortSignal.timeout(opts.timeoutMs) } : {}),
    });
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {}
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  };
}

export const adminClient = (baseUrl: string) => client(baseUrl, ADMIN_TOKEN);

/** `client`, throwing on a 4xx or 5xx answer (set-up steps that must succeed). */
export function strictClient(baseUrl: string, key?: string, opts: { timeoutMs?: number } = {}) {
  const call = client(baseUrl, key, opts);
  return async <T = any>(method: string, path: string, body?: unknown): Promise<JsonResponse<T>> => {
    const res = await call<T>(method, path, body);
    if (res.status >= 400) throw new Error(`${method} ${path} → ${res.status}: ${res.text}`);
    return res;
  };
}

/** Creates a second organization with a management key and an API key through the operator API. */
export async function makeOrganization(
  baseUrl: string,
  name = 'Other Org',
  opts: { internsProgramme?: boolean } = {},
) {
  const admin = adminClient(baseUrl);
  const org = await admin('POST', '/admin/organizations', { name });
  const user = await admin('POST', '/admin/users', {
    email: `${name.toLowerCase().replace(/\W+/g, '-')}-${Date.now()}@example.com`,
    organization_id: org.body.data.id,
    role: 'owner',
    interns_programme: opts.internsProgramme ?? false,
  });
  const mgmt = await admin('POST', '/admin/keys', {
    name: 'mgmt',
    user_id: user.body.data.id,
    management: true,
  });
  const api = await admin('POST', '/admin/keys', { name: 'api', user_id: user.body.data.id });
  return {
    organizationId: org.body.data.id as string,
    workspaceId: org.body.data.default_workspace_id as string,
    userId: user.body.data.id as string,
    managementKey: mgmt.body.key as string,
    apiKey: api.body.key as string,
  };
}

/**
 * API keys of the tenants next to the test gateway's own: the owner's second workspace, and another
 * organization (funded with `credits` USD when given) — for checks that one tenant never reads
 * another's state.
 */
export async function otherTenants(
  gw: { url: string; managementKey: string },
  name: string,
  credits?: number,
): Promise<{ name: string; key: string }[]> {
  const mgmt = client(gw.url, gw.managementKey);
  const ws = await mgmt('POST', '/workspaces', { name: 'Second', slug: 'second' });
  const wsKey = await mgmt('POST', '/keys', { name: 'second', workspace_id: ws.body.data.id });
  const org = await makeOrganization(gw.url, name);
  if (credits !== undefined)
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: org.organizationId,
      amount_usd: credits,
    });
  return [
    { name: 'another workspace', key: wsKey.body.key as string },
    { name: 'another organization', key: org.apiKey },
  ];
}
