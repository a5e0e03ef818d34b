import { Type } from '@sinclair/typebox';
import { CreditTotals, LedgerEntry } from '../credits/schemas.js';
import type { Router } from '../server/router.js';
import { errors, Nullable, PageQuery, StringEnum, toPage } from '../server/schemas.js';
import type { Services } from '../services.js';
import { ApiKey } from './keys.schemas.js';
import { ORG_ROLES } from './organizations.service.js';

const Organization = Type.Object({
  id: Type.String(),
  name: Type.String(),
  default_workspace_id: Nullable(Type.String()),
  created_at: Type.String(),
});
const User = Type.Object({
  id: Type.String(),
  email: Type.String(),
  first_name: Nullable(Type.String()),
  last_name: Nullable(Type.String()),
  organization_id: Type.String(),
  role: Type.String(),
  interns_programme: Type.Boolean(),
  created_at: Type.String(),
});
const OrganizationQuery = Type.Composite([
  Type.Object({ organization_id: Type.String({ minLength: 1, maxLength: 200 }) }),
  PageQuery,
]);
const tags = ['Operator'];
const config = { auth: 'admin' as const };

/** The operator API under /admin, enabled by GATEHOUSE_ADMIN_TOKEN (404 when unset). */
export async function adminRoutes(app: Router, { admin }: Pick<Services, 'admin'>) {
  app.post(
    '/admin/organizations',
    {
      config,
      schema: {
        tags,
        summary: 'Create an organization with its default workspace',
        body: Type.Object({ name: Type.String({ minLength: 1 }) }),
        response: { 201: Type.Object({ data: Organization }), ...errors(400, 401, 404) },
      },
    },
    async (req, reply) => reply.code(201).send({ data: await admin.createOrganization(req.body.name) }),
  );

  app.get(
    '/admin/organizations',
    {
      config,
      schema: {
        tags,
        summary: 'List organizations, oldest first',
        response: { 200: Type.Object({ data: Type.Array(Organization) }), ...errors(401, 404) },
      },
    },
    async () => ({ data: await admin.listOrganizations() }),
  );

  app.post(
    '/admin/users',
    {
      config,
      schema: {
        tags,
        summary: 'Create a user as a member of an organization',
        body: Type.Object({
          email: Type.String({ minLength: 3, pattern: '^[^@\\s]+@[^@\\s]+$' }),
          organization_id: Type.String(),
          role: StringEnum(ORG_ROLES),
          interns_programme: Type.Optional(Type.Boolean()),
          first_name: Type.Optional(Nullable(Type.String())),
          last_name: Type.Optional(Nullable(Type.String())),
        }),
        response: {
          201: Type.Object({ data: User }),
          ...errors(400, 401, 404, 409),
        },
      },
    },
    async (req, reply) => reply.code(201).send({ data: await admin.createUser(req.body) }),
  );

  app.get(
    '/admin/users',
    {
      config,
      schema: {
        tags,
        summary: 'List the members of an organization (its users), in the order they joined',
        querystring: OrganizationQuery,
        response: {
          200: Type.Object({ data: Type.Array(User), total_count: Type.Integer() }),
          ...errors(400, 401, 404),
        },
      },
    },
    async (req) => admin.listUsers(req.query.organization_id, toPage(req.query)),
  );

  app.post(
    '/admin/keys',
    {
      config,
      schema: {
        tags,
        summary: 'Create an API or management key for a user or an organization',
        body: Type.Object({
          name: Type.String({ minLength: 1 }),
          user_id: Type.Optional(Type.String()),
          organization_id: Type.Optional(Type.String()),
          workspace_id: Type.Optional(Type.String()),
          management: Type.Optional(Type.Boolean()),
        }),
        response: {
          201: Type.Object({
            data: Type.Composite([Type.Omit(ApiKey, []), Type.Object({ is_management_key: Type.Boolean() })]),
            key: Type.String(),
          }),
          ...errors(400, 401, 404),
        },
      },
    },
    async (req, reply) => reply.code(201).send(await admin.createKey(req.body)),
  );

  app.post(
    '/admin/credits',
    {
      config,
      schema: {
        tags,
        summary: 'Record a credit purchase or grant for an organization',
        body: Type.Object({
          organization_id: Type.String(),
          amount_usd: Type.Number({ exclusiveMinimum: 0 }),
          note: Type.Optional(Nullable(Type.String())),
        }),
        response: {
          201: Type.Object({
            data: Type.Object({
              id: Type.String(),
              organization_id: Type.String(),
              kind: Type.String(),
              amount_usd: Type.Number(),
              note: Nullable(Type.String()),
              created_at: Type.String(),
            }),
          }),
          ...errors(400, 401, 404),
        },
      },
    },
    async (req, reply) =>
      reply
        .code(201)
        .send({ data: await admin.addCredits(req.body.organization_id, req.body.amount_usd, req.body.note) }),
  );

  app.get(
    '/admin/credits',
    {
      config,
      schema: {
        tags,
        summary: "An organization's credit totals and its ledger, newest first",
        querystring: OrganizationQuery,
        response: {
          200: Type.Composite([
            CreditTotals,
            Type.Object({ data: Type.Array(LedgerEntry), total_count: Type.Integer() }),
          ]),
          ...errors(400, 401, 404),
        },
      },
    },
    async (req) => admin.creditsOf(req.query.organization_id, toPage(req.query)),
  );
}
