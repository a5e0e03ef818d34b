import { Type } from '@sinclair/typebox';
import type { Router } from '../server/router.js';
import { Deleted, errors, IdParams, toPage } from '../server/schemas.js';
import type { Services } from '../services.js';
import { CreateGuardrailBody, Guardrail, ListGuardrailsQuery, UpdateGuardrailBody } from './schemas.js';
import { guardrailView } from './service.js';

const tags = ['Guardrails'];
const config = { auth: 'management' as const };
/** Writes: organization owners and admins only (members read). */
const adminConfig = { auth: 'management' as const, role: 'admin' as const };

export async function guardrailsRoutes(app: Router, { guardrails }: Pick<Services, 'guardrails'>) {
  app.addSchema(Guardrail);
  const GuardrailRef = Type.Ref(Guardrail);
  const One = Type.Object({ data: GuardrailRef });

  app.post(
    '/guardrails',
    {
      config: adminConfig,
      schema: {
        tags,
        summary: 'Create a guardrail (enforces nothing until keys or members are assigned)',
        body: CreateGuardrailBody,
        response: { 201: One, ...errors(400, 401, 403, 500) },
      },
    },
    async (req, reply) =>
      reply.code(201).send({ data: guardrailView(await guardrails.create(req.caller, req.body)) }),
  );

  app.get(
    '/guardrails',
    {
      config,
      schema: {
        tags,
        summary: 'List the guardrails of a workspace, oldest first',
        querystring: ListGuardrailsQuery,
        response: {
          200: Type.Object({ data: Type.Array(GuardrailRef), total_count: Type.Integer() }),
          ...errors(400, 401, 403, 500),
        },
      },
    },
    async (req) =>
      guardrails.list(req.caller, { ...toPage(req.query), workspace_id: req.query.workspace_id }),
  );

  app.get(
    '/guardrails/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Get a guardrail',
        params: IdParams,
        response: { 200: One, ...errors(401, 403, 404, 500) },
      },
    },
    async (req) => ({ data: guardrailView(await guardrails.get(req.caller, req.params.id)) }),
  );

  app.patch(
    '/guardrails/:id',
    {
      config: adminConfig,
      schema: {
        tags,
        summary: 'Update a guardrail',
        description:
          'Fields left out are unchanged; lists are replaced wholesale; null clears. On the id of a ' +
          "workspace's default guardrail that does not exist yet, creates it first.",
        params: IdParams,
        body: UpdateGuardrailBody,
        response: { 200: One, ...errors(400, 401, 403, 404, 500) },
      },
    },
    async (req) => ({
      data: guardrailView(await guardrails.update(req.caller, req.params.id, req.body)),
    }),
  );

  app.delete(
    '/guardrails/:id',
    {
      config: adminConfig,
      schema: {
        tags,
        summary: 'Delete a guardrail and its assignments',
        params: IdParams,
        response: { 200: Deleted, ...errors(401, 403, 404, 500) },
      },
    },
    async (req) => {
      await guardrails.delete(req.caller, req.params.id);
      return { deleted: true as const };
    },
  );
}
