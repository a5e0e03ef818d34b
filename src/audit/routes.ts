import { Type } from '@sinclair/typebox';
import { instant } from '../activity/time-range.js';
import type { Router } from '../server/router.js';
import { errors, Nullable } from '../server/schemas.js';
import type { Services } from '../services.js';
import { type AdminAuditQuery, AdminAuditQuery as AdminQuery, AuditEvent, AuditQuery } from './schemas.js';
import type { AuditFilter } from './store.js';

const tags = ['Audit log'];

/** The query's filters as the store takes them (the organization comes from who asks). */
function filterOf(q: AuditQuery): Omit<AuditFilter, 'organizationId'> {
  return {
    actorId: q.actor,
    actorKind: q.actor_kind,
    action: q.action,
    resourceType: q.resource_type,
    resourceId: q.resource_id,
    from: q.from === undefined ? undefined : instant('from', q.from),
    to: q.to === undefined ? undefined : instant('to', q.to),
  };
}

export async function auditRoutes(app: Router, { audit }: Pick<Services, 'audit'>) {
  app.addSchema(AuditEvent);
  const Page = Type.Object({
    data: Type.Array(Type.Ref(AuditEvent)),
    next_cursor: Nullable(Type.String({ description: 'Pass as cursor for the next page; null on the last' })),
  });
  const description =
    'Every management write, made or refused after authentication, newest first: who (the key or the ' +
    'operator), what (action and resource), the state before and after with secrets masked, and the ' +
    'answer. Filters combine with AND. Pages follow next_cursor until it is null.';

  app.get(
    '/audit-log',
    {
      config: { auth: 'management' },
      schema: {
        tags,
        summary: "The organization's audit log",
        description,
        querystring: AuditQuery,
        response: { 200: Page, ...errors(400, 401, 403, 500) },
      },
    },
    async (req) =>
      audit.list(
        { ...filterOf(req.query), organizationId: req.caller.organizationId },
        req.query.limit ?? 50,
        req.query.cursor,
      ),
  );

  app.get(
    '/admin/audit-log',
    {
      config: { auth: 'admin' },
      schema: {
        tags: ['Operator'],
        summary: 'The audit log of every organization and of the operator API',
        description,
        querystring: AdminQuery,
        response: { 200: Page, ...errors(400, 401, 404) },
      },
    },
    async (req) => {
      const q: AdminAuditQuery = req.query;
      const org = q.organization_id;
      return audit.list(
        { ...filterOf(q), organizationId: org === undefined ? undefined : org === 'none' ? null : org },
        q.limit ?? 50,
        q.cursor,
      );
    },
  );
}
