import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AUDIT_READ_ADDRESS } from '../lib/audit-read.js';
import { AUDITED, type AuditedRoute } from './actions.js';
import type { AuditLog } from './service.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The audited resource's state before the write (see AuditedRoute.before). */
    auditBefore: unknown;
  }
}

/** `/keys/:hash` with the request's parameters filled in (URI-encoded). */
function fill(template: string, params: Record<string, string>): string {
  return template.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(params[name] ?? ''));
}

/** The object a JSON answer carries: its `data` when it has one. */
function objectOf(payload: unknown): unknown {
  if (typeof payload !== 'string' || payload === '') return null;
  try {
    const body = JSON.parse(payload) as unknown;
    if (body && typeof body === 'object' && 'data' in body) return (body as { data: unknown }).data;
    return body;
  } catch {
    return null;
  }
}

const field = (o: unknown, name: string): string | null => {
  const v = o && typeof o === 'object' ? (o as Record<string, unknown>)[name] : undefined;
  return typeof v === 'string' ? v : null;
};

/**
 * Records every audited write (actions.ts) in the audit log, from two hooks rather than from each
 * handler. Before the handler, the resource's current state is read through its own GET route with
 * the caller's credentials (so it is exactly what the caller could read, views without secrets).
 * When the answer is ready, the event is stored — awaited, so a write that was answered is already
 * listed — with the answer's object as the state after (nothing after a delete or a refusal).
 *
 * Recorded: every attempt that got past authentication (a key or the operator token was accepted),
 * whatever its outcome — refused by role (403), invalid (400), not found (404), failed (5xx) — with
 * its status. Not recorded: requests without valid credentials (401, 429), which name no actor.
 */
export function installAudit(app: FastifyInstance, audit: AuditLog): void {
  app.decorateRequest('auditBefore', null);

  // Hooks on the audited routes only (their spec looked up once, as each route is registered),
  // ahead of the route's own: every other request — inference above all — pays nothing for them.
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const spec = methods.map((m) => AUDITED[`${m} ${route.url}`]).find(Boolean);
    if (!spec) return;
    route.preHandler = [(req) => before(req, spec), ...hookList(route.preHandler)];
    route.onSend = [(req, reply, payload) => after(req, reply, payload, spec), ...hookList(route.onSend)];
  });

  /** The resource's state before the write, read through its own GET route. */
  async function before(req: FastifyRequest, spec: AuditedRoute): Promise<void> {
    if (!spec.before || (!req.caller && !req.operator)) return;
    const headers: Record<string, string> = {};
    for (const h of ['authorization', 'x-api-key'] as const) {
      const v = req.headers[h];
      if (typeof v === 'string') headers[h] = v;
    }
    // A failed read leaves no before state; it never fails the write.
    const res = await app
      .inject({
        method: 'GET',
        url: `/api/v1${fill(spec.before, req.params as Record<string, string>)}`,
        headers,
        remoteAddress: AUDIT_READ_ADDRESS,
      })
      .catch((err) => {
        req.log.warn({ err }, 'audit: reading the state before a write failed');
        return null;
      });
    req.auditBefore = res?.statusCode === 200 ? objectOf(res.payload) : null;
  }

  /** The event, stored once the answer is ready (awaited: an answered write is already listed). */
  async function after(req: FastifyRequest, reply: FastifyReply, payload: unknown, spec: AuditedRoute) {
    if (!req.caller && !req.operator) return payload;
    const status = reply.statusCode;
    const ok = status < 400;
    const params = (req.params ?? {}) as Record<string, string>;
    const body = req.body ?? null;
    const after = ok && req.method !== 'DELETE' ? objectOf(payload) : null;
    const before = req.auditBefore;
    const named = spec.id ? spec.id.map((p) => params[p] ?? '').join('/') : (params.id ?? null);
    const resourceId = named || field(after, 'id') || field(after, 'hash');
    const caller = req.caller;
    const workspaceId =
      field(after, 'workspace_id') ??
      field(before, 'workspace_id') ??
      field(body, 'workspace_id') ??
      (spec.resource === 'workspace' ? resourceId : null) ??
      (caller && !caller.isManagement ? caller.workspaceId : null);
    await audit.record({
      organizationId: caller
        ? caller.organizationId
        : // Operator: the organization the write concerns (none for the catalog).
          (field(after, 'organization_id') ??
          field(body, 'organization_id') ??
          (spec.resource === 'organization' ? resourceId : null)),
      workspaceId,
      actorKind: caller ? (caller.isManagement ? 'management_key' : 'api_key') : 'operator',
      actorId: caller?.keyHash ?? null,
      actorUserId: caller?.userId ?? null,
      action: spec.action,
      resourceType: spec.resource,
      resourceId,
      before,
      after,
      request: body,
      requestId: req.id,
      remoteAddress: req.ip,
      status,
    });
    return payload;
  }
}

/** A route's own hooks of one kind, as a list (Fastify takes one function or several). */
const hookList = <T>(h: T | T[] | undefined): T[] => (h === undefined ? [] : Array.isArray(h) ? h : [h]);
