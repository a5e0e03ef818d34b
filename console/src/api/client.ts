/**
 * The typed API client: every path, parameter and body is checked against Gatehouse's OpenAPI
 * document (schema.d.ts is generated from it by `npm run build:console`), so a page that no
 * longer matches the API fails to build.
 */
import createClient, { type Middleware } from 'openapi-fetch';
import { getSession, setApiKey, signOut } from '../session';
import type { paths } from './schema';

export type { components, paths } from './schema';

/** The JSON body a route takes, e.g. `JsonBody<'/keys', 'post'>`. */
export type JsonBody<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends {
  requestBody?: { content: { 'application/json': infer B } };
}
  ? B
  : never;

/** The JSON a route answers with on success (200 or 201). */
export type JsonOk<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends {
  responses: infer R;
}
  ? R extends { 200: { content: { 'application/json': infer B } } }
    ? B
    : R extends { 201: { content: { 'application/json': infer B } } }
      ? B
      : never
  : never;

const auth: Middleware = {
  onRequest({ request }) {
    // A call that names its own key (a key being checked before it is used) keeps it.
    const session = getSession();
    if (session && !request.headers.has('Authorization'))
      request.headers.set('Authorization', `Bearer ${session.token}`);
    return request;
  },
  onResponse({ request, response }) {
    // The key was revoked, disabled or expired while signed in: back to the sign-in page, saying why
    // (only when the refused key is the session's: a pasted key being checked is the caller's business).
    const token = getSession()?.token;
    if (response.status === 401 && token && request.headers.get('Authorization') === `Bearer ${token}`) {
      signOut('Your key is no longer accepted (invalid, disabled or expired). Sign in again.');
    }
    return response;
  },
};

export const api = createClient<paths>({ baseUrl: '/api/v1' });
api.use(auth);

/** Why the session's API key was dropped (shown by <ApiKeyGate> when it asks for another). */
let apiKeyDroppedBecause: string | null = null;
export const apiKeyDropReason = () => apiKeyDroppedBecause;
/** A new API key is in use: the old one's refusal is no longer news. */
export const clearApiKeyDropReason = () => {
  apiKeyDroppedBecause = null;
};

/** Forgets the session's API key because the gateway refused it (<ApiKeyGate> then asks for another). */
export function dropApiKey() {
  apiKeyDroppedBecause = 'The API key is no longer accepted (invalid, disabled or expired).';
  setApiKey(null);
}

const apiKeyAuth: Middleware = {
  onRequest({ request }) {
    const key = getSession()?.apiKey?.key;
    if (key) request.headers.set('Authorization', `Bearer ${key}`);
    return request;
  },
  onResponse({ request, response }) {
    // The API key was revoked, disabled or expired: ask for another, the session itself stays.
    const key = getSession()?.apiKey?.key;
    if (response.status === 401 && key && request.headers.get('Authorization') === `Bearer ${key}`) {
      dropApiKey();
    }
    return response;
  },
};

/**
 * The client of the pages that call models, batches, interns and the vault: the same typed API,
 * authenticated with the session's API key (see <ApiKeyGate>), since a management key may not.
 */
export const dataApi = createClient<paths>({ baseUrl: '/api/v1' });
dataApi.use(apiKeyAuth);

/** An API answer that was not a success, with Gatehouse's own message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The message of Gatehouse's error envelope `{error:{code,message}}`, or a plain description. */
function messageOf(body: unknown, status: number): string {
  const error = (body as { error?: unknown } | null)?.error;
  if (typeof error === 'string') return error;
  const message = (error as { message?: unknown } | undefined)?.message;
  if (typeof message === 'string' && message) return message;
  return `The gateway answered ${status}`;
}

/**
 * The data of an openapi-fetch result, or an ApiError to throw — every page calls the API through
 * this, so TanStack Query sees failures as errors and <ErrorBanner> shows their message.
 */
export async function call<T>(
  request: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<NonNullable<T>> {
  let result: { data?: T; error?: unknown; response: Response };
  try {
    result = await request;
  } catch {
    throw new ApiError(0, 'The gateway could not be reached. Check that it is running and try again.');
  }
  if (result.error !== undefined || !result.response.ok) {
    throw new ApiError(result.response.status, messageOf(result.error, result.response.status));
  }
  return result.data as NonNullable<T>;
}
