import { Type } from '@sinclair/typebox';
import type { Router } from '../server/router.js';
import { Deleted, errors, PageQuery, toPage } from '../server/schemas.js';
import type { Services } from '../services.js';
import {
  CreateWorkspaceBody,
  UpdateWorkspaceBody,
  UserIdsBody,
  Workspace,
  WorkspaceMember,
} from './workspaces.schemas.js';

const tags = ['Workspaces'];
const config = { auth: 'management' as const };
/** Writes: organization owners and admins only (members read). */
const adminConfig = { auth: 'management' as const, role: 'admin' as const };
const Params = Type.Object({ id: Type.String({ minLength: 1, description: 'Workspace UUID or slug' }) });

export async function workspacesRoutes(
  app: Router,
  { workspaces, workspaceWebhooks }: Pick<Services, 'workspaces' | 'workspaceWebhooks'>,
) {
  app.addSchema(Workspace);
  app.addSchema(WorkspaceMember);
  const WorkspaceRef = Type.Ref(Workspace);
  const MemberRef = Type.Ref(WorkspaceMember);

  app.get(
    '/workspaces',
    {
      config,
      schema: {
        tags,
        summary: 'List the workspaces of the organization, oldest first',
        querystring: PageQuery,
        response: {
          200: Type.Object({ data: Type.Array(WorkspaceRef), total_count: Type.Integer() }),
          ...errors(400, 401, 403, 500),
        },
      },
    },
    async (req) => workspaces.list(req.caller, toPage(req.query)),
  );

  app.post(
    '/workspaces',
    {
      config: adminConfig,
      schema: {
        tags,
        summary: 'Create a workspace (the calling user becomes its first member)',
        body: CreateWorkspaceBody,
        response: { 201: Type.Object({ data: WorkspaceRef }), ...errors(400, 401, 403, 409, 500) },
      },
    },
    async (req, reply) =>
      reply.code(201).send({ data: workspaces.view(await workspaces.create(req.caller, req.body)) }),
  );

  app.get(
    '/workspaces/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Get a workspace by UUID or slug',
        params: Params,
        response: { 200: Type.Object({ data: WorkspaceRef }), ...errors(401, 403, 404, 500) },
      },
    },
    async (req) => ({ data: workspaces.view(await workspaces.get(req.caller, req.params.id)) }),
  );

  app.patch(
    '/workspaces/:id',
    {
      config: adminConfig,
      schema: {
        tags,
        summary: 'Update a workspace',
        params: Params,
        body: UpdateWorkspaceBody,
        response: { 200: Type.Object({ data: WorkspaceRef }), ...errors(400, 401, 403, 404, 409, 500) },
      },
    },
    async (req) => ({
      data: workspaces.view(await workspaces.update(req.caller, req.params.id, req.body)),
    }),
  );

  app.delete(
    '/workspaces/:id',
    {
      config: adminConfig,
      schema: {
        tags,
        summary: 'Delete a workspace with its members, budgets and guardrails',
        description:
          'A workspace with active (non-disabled) API keys cannot be deleted. The default workspace needs confirm_default_workspace_deletion=true.',
        params: Params,
        querystring: Type.Object({
          confirm_default_workspace_deletion: Type.Optional(
            Type.Boolean({ description: 'Required (true) to delete the default workspace' }),
          ),
        }),
        response: { 200: Deleted, ...errors(400, 401, 403, 404, 500) },
      },
    },
    async (req) => {
      await workspaces.delete(
        req.caller,
        req.params.id,
        req.query.confirm_default_workspace_deletion === true,
      );
      return { deleted: true as const };
    },
  );

  app.get(
    '/workspaces/:id/members',
    {
      config,
      schema: {
        tags,
        summary: 'List the members of a workspace (the default workspace: every organization member)',
        params: Params,
        querystring: PageQuery,
        response: {
          200: Type.Object({ data: Type.Array(MemberRef), total_count: Type.Integer() }),
          ...errors(400, 401, 403, 404, 500),
        },
      },
    },
    async (req) => workspaces.listMembers(req.caller, req.params.id, toPage(req.query)),
  );

  app.post(
    '/workspaces/:id/members/add',
    {
      config: adminConfig,
      schema: {
        tags,
        summary: 'Add organization members to a workspace (role copied from their organization role)',
        params: Params,
        body: UserIdsBody,
        response: {
          200: Type.Object({ added_count: Type.Integer(), data: Type.Array(MemberRef) }),
          ...errors(400, 401, 403, 404, 500),
        },
      },
    },
    async (req) => workspaces.addMembers(req.caller, req.params.id, req.body.user_ids),
  );

  app.post(
    '/workspaces/:id/members/remove',
    {
      config: adminConfig,
      schema: {
        tags,
        summary: 'Remove members from a workspace (not members who still have active keys there)',
        params: Params,
        body: UserIdsBody,
        response: {
          200: Type.Object({ removed_count: Type.Integer() }),
          ...errors(400, 401, 403, 404, 500),
        },
      },
    },
    async (req) => workspaces.removeMembers(req.caller, req.params.id, req.body.user_ids),
  );

  app.post(
    '/workspaces/:id/webhook-secret',
    {
      config: adminConfig,
      schema: {
        tags,
        summary: "Make the workspace's webhook signing secret (replacing any); it is returned this once",
        description:
          'Video job events (callback_url) of the workspace are then signed: `X-OpenRouter-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>,<raw body>">`.',
        params: Params,
        response: {
          201: Type.Object({
            data: Type.Object({
              workspace_id: Type.String(),
              signing_secret: Type.String({ description: 'Shown only here' }),
            }),
          }),
          ...errors(401, 403, 404, 500),
        },
      },
    },
    async (req, reply) =>
      reply.code(201).send({ data: await workspaceWebhooks.rotate(req.caller, req.params.id) }),
  );

  app.delete(
    '/workspaces/:id/webhook-secret',
    {
      config: adminConfig,
      schema: {
        tags,
        summary: "Remove the workspace's webhook signing secret (its video job events go unsigned)",
        params: Params,
        response: { 200: Deleted, ...errors(401, 403, 404, 500) },
      },
    },
    async (req) => {
      await workspaceWebhooks.remove(req.caller, req.params.id);
      return { deleted: true as const };
    },
  );
}
