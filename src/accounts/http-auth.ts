import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { credentialTooLong } from '../lib/credentials.js';
import { safeEqual } from '../lib/crypto.js';
import { ApiError } from '../lib/errors.js';
import { sendError } from '../server/errors.js';
import type { AdminThrottle } from './admin.throttle.js';
import type { Caller } from './caller.js';
import type { KeysService } from './keys.service.js';
import type { Roles } from './roles.js';

/**
 * Per-route authentication, declared in the route's `config.auth`:
 * - `none`: public (health, docs);
 * - `optional`: public, but a valid key presented is read (`caller` set; any other credential is
 *   ignored): the catalog lists what an Anthropic client's key may use;
 * - `key`: any valid key (API or management);
 * - `api`: an API key (inference, batches, interns);
 * - `management`: a management key;
 * - `admin`: the operator token GATEHOUSE_ADMIN_TOKEN.
 */
export type AuthMode = 'none' | 'optional' | 'key' | 'api' | 'management' | 'admin';

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthMode;
    /**
     * `admin`: a management write only the organization's owners and admins (or a key acting as the
     * organization) may make; members get 403.
     */
    role?: 'admin';
  }
  interface FastifyRequest {
    /**
     * Set on every route whose auth mode is key, api or management — also when the caller's role
     * is then refused (403), so the audit log records the attempt — and on an `optional` one when
     * the key presented is valid (else null).
     */
    caller: Caller;
    /** True once the operator token was accepted (admin routes). */
    operator: boolean;
  }
}

/**
 * The key a request presents: `Authorization: Bearer <key>`, or else `x-api-key: <key>` — the header
 * Anthropic-format clients send (the `@anthropic-ai/sdk` before 1.x, Claude Code with
 * ANTHROPIC_API_KEY), so they work pointed at Gatehouse without a custom header.
 */
function presentedKey(request: FastifyRequest): string | null {
  const h = request.headers.authorization;
  if (h) return /^Bearer\s+(\S+)\s*$/i.exec(h)?.[1] ?? null;
  const x = request.headers['x-api-key'];
  return typeof x === 'string' && x.trim() ? x.trim() : null;
}

export function installAuth(
  app: FastifyInstance,
  keys: KeysService,
  roles: Roles,
  adminToken: string | null,
  adminThrottle: AdminThrottle,
): void {
  app.decorateRequest('caller', null as unknown as Caller);
  app.decorateRequest('operator', false);

  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const mode = request.routeOptions.config?.auth ?? 'none';
    if (mode === 'none') return;
    const apiKeyHeader = request.headers['x-api-key'];
    if (
      credentialTooLong(request.headers.authorization) ||
      credentialTooLong(typeof apiKeyHeader === 'string' ? apiKeyHeader : undefined)
    )
      return sendError(reply, 401, 'Invalid credentials: the Authorization or x-api-key header is over 1 KB');
    const token = presentedKey(request);
    if (mode === 'optional') {
      const caller = token ? await keys.authenticate(token) : null;
      if (caller) request.caller = caller;
      return;
    }
    if (mode === 'admin') {
      if (!adminToken)
        return sendError(reply, 404, `Route ${request.method} ${request.url.split('?')[0]} not found`);
      return checkAdmin(request, reply, token, adminToken, adminThrottle);
    }
    if (!token) return sendError(reply, 401, 'Missing Authentication header');
    const caller = await keys.authenticate(token);
    if (!caller) return sendError(reply, 401, 'Invalid, disabled or expired API key');
    if (mode === 'management' && !caller.isManagement) {
      return sendError(reply, 403, 'Only management keys can perform this operation');
    }
    request.caller = caller;
    if (request.routeOptions.config?.role === 'admin') {
      try {
        await roles.requireAdmin(caller);
      } catch (err) {
        if (err instanceof ApiError) return sendError(reply, err.status, err.message);
        throw err;
      }
    }
  });
}

/**
 * The operator token, behind the per-address throttle of failed attempts. A wrong token is logged
 * (warn: address and route, never the token); an address past its allowance gets 429 with
 * Retry-After whatever it sends, and one line when that starts.
 */
async function checkAdmin(
  request: FastifyRequest,
  reply: FastifyReply,
  token: string | null,
  adminToken: string,
  throttle: AdminThrottle,
) {
  const waitMs = await throttle.blockedForMs(request.ip);
  if (waitMs > 0) {
    reply.header('retry-after', String(Math.ceil(waitMs / 1000)));
    return sendError(reply, 429, 'Too many failed operator authentications from this address; retry later');
  }
  if (token && safeEqual(token, adminToken)) {
    request.operator = true;
    return;
  }
  if (token) {
    const route = request.routeOptions.url;
    request.log.warn({ ip: request.ip, route }, 'operator authentication failed');
    if (await throttle.failed(request.ip))
      request.log.warn({ ip: request.ip }, 'operator authentication throttled for this address');
  }
  return sendError(reply, 401, 'Invalid or missing admin token');
}
