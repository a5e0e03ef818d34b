import { type TSchema, Type } from '@sinclair/typebox';
import type { Router } from '../server/router.js';
import { errors, IdParams, PageQuery, toPage } from '../server/schemas.js';
import type { Services } from '../services.js';
import { KeyAssignment, KeyHashesBody, MemberAssignment, MemberIdsBody } from './schemas.js';

const tags = ['Guardrails'];
const config = { auth: 'management' as const };
/** Writes: organization owners and admins only (members read). */
const adminConfig = { auth: 'management' as const, role: 'admin' as const };
const Envelope = (item: TSchema) => Type.Object({ data: Type.Array(item), total_count: Type.Integer() });

/**
 * Guardrail assignments. The organization-wide lists (/guardrails/assignments/…) are static
 * routes; Fastify's router prefers static segments, and their depth differs from /guardrails/:id.
 */
export async function guardrailAssignmentsRoutes(
  app: Router,
  { guardrailAssignments: assignments }: Pick<Services, 'guardrailAssignments'>,
) {
  app.addSchema(KeyAssignment);
  app.addSchema(MemberAssignment);
  const Keys = Envelope(Type.Ref(KeyAssignment));
  const Members = Envelope(Type.Ref(MemberAssignment));

  app.get(
    '/guardrails/assignments/keys',
    {
      config,
      schema: {
        tags,
        summary: "All key assignments of the caller's organization, oldest first",
        querystring: PageQuery,
        response: { 200: Keys, ...errors(400, 401, 403, 500) },
      },
    },
    async (req) => assignments.listKeys(req.caller, toPage(req.query)),
  );

  app.get(
    '/guardrails/assignments/members',
    {
      config,
      schema: {
        tags,
        summary: "All member assignments of the caller's organization, oldest first",
        querystring: PageQuery,
        response: { 200: Members, ...errors(400, 401, 403, 500) },
      },
    },
    async (req) => assignments.listMembers(req.caller, toPage(req.query)),
  );

  app.get(
    '/guardrails/:id/assignments/keys',
    {
      config,
      schema: {
        tags,
        summary: 'Key assignments of a guardrail, oldest first',
        params: IdParams,
        querystring: PageQuery,
        response: { 200: Keys, ...errors(400, 401, 403, 404, 500) },
      },
    },
    async (req) => assignments.listKeys(req.caller, toPage(req.query), req.params.id),
  );

  app.get(
    '/guardrails/:id/assignments/members',
    {
      config,
      schema: {
        tags,
        summary: 'Member assignments of a guardrail, oldest first',
        params: IdParams,
        querystring: PageQuery,
        response: { 200: Members, ...errors(400, 401, 403, 404, 500) },
      },
    },
    async (req) => assignments.listMembers(req.caller, toPage(req.query), req.params.id),
  );

  app.post(
    '/guardrails/:id/assignments/keys',
    {
      config: adminConfig,
      schema: {
        tags,
        summary: 'Assign API keys to a guardrail',
        description:
          'A key holds at most one guardrail: a key on another guardrail is moved here. assigned_count ' +
          'counts the keys that changed. Hashes that are not API keys of the organization, or keys of ' +
          "another workspace than the guardrail's, make the whole request a 400.",
        params: IdParams,
        body: KeyHashesBody,
        response: {
          200: Type.Object({ assigned_count: Type.Integer() }),
          ...errors(400, 401, 403, 404, 500),
        },
      },
    },
    async (req) => ({
      assigned_count: await assignments.assignKeys(req.caller, req.params.id, req.body.key_hashes),
    }),
  );

  app.post(
    '/guardrails/:id/assignments/keys/remove',
    {
      config: adminConfig,
      schema: {
        tags,
        summary: 'Unassign API keys from a guardrail',
        params: IdParams,
        body: KeyHashesBody,
        response: {
          200: Type.Object({ unassigned_count: Type.Integer() }),
          ...errors(400, 401, 403, 404, 500),
        },
      },
    },
    async (req) => ({
      unassigned_count: await assignments.unassignKeys(req.caller, req.params.id, req.body.key_hashes),
    }),
  );

  app.post(
    '/guardrails/:id/assignments/members',
    {
      config: adminConfig,
      schema: {
        tags,
        summary: 'Assign organization members to a guardrail',
        description:
          'assigned_count counts the members newly assigned. User ids that are not members of the ' +
          'organization make the whole request a 400.',
        params: IdParams,
        body: MemberIdsBody,
        response: {
          200: Type.Object({ assigned_count: Type.Integer() }),
          ...errors(400, 401, 403, 404, 500),
        },
      },
    },
    async (req) => ({
      assigned_count: await assignments.assignMembers(req.caller, req.params.id, req.body.member_user_ids),
    }),
  );

  app.post(
    '/guardrails/:id/assignments/members/remove',
    {
      config: adminConfig,
      schema: {
        tags,
        summary: 'Unassign organization members from a guardrail',
        params: IdParams,
        body: MemberIdsBody,
        response: {
          200: Type.Object({ unassigned_count: Type.Integer() }),
          ...errors(400, 401, 403, 404, 500),
        },
      },
    },
    async (req) => ({
      unassigned_count: await assignments.unassignMembers(
        req.caller,
        req.params.id,
        req.body.member_user_ids,
      ),
    }),
  );
}
