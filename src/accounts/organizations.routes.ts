import { Type } from '@sinclair/typebox';
import type { Router } from '../server/router.js';
import { errors, Nullable, PageQuery, StringEnum, toPage } from '../server/schemas.js';
import type { Services } from '../services.js';
import { ORG_MEMBER_ROLES } from './organizations.service.js';

const OrganizationMember = Type.Object(
  {
    id: Type.String({ description: 'User id' }),
    email: Type.String(),
    first_name: Nullable(Type.String()),
    last_name: Nullable(Type.String()),
    role: StringEnum(ORG_MEMBER_ROLES, { description: 'Owners are reported as org:admin' }),
  },
  { $id: 'OrganizationMember', title: 'OrganizationMember' },
);

export async function organizationsRoutes(app: Router, { orgs }: Pick<Services, 'orgs'>) {
  app.addSchema(OrganizationMember);

  app.get(
    '/organization/members',
    {
      config: { auth: 'management' },
      schema: {
        tags: ['Organization'],
        summary: 'List the members of the organization',
        querystring: PageQuery,
        response: {
          200: Type.Object({ data: Type.Array(Type.Ref(OrganizationMember)), total_count: Type.Integer() }),
          ...errors(400, 401, 403, 500),
        },
      },
    },
    async (req) => orgs.listMembers(req.caller.organizationId, toPage(req.query)),
  );
}
