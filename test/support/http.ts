import { ADMIN_TOKEN } from './gateway.js';

export interface JsonResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** A small JSON client over real sockets: `call(base, key)('GET', '/keys')`. */
export function client(baseUrl: string, key?: string) {
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
