import { Type } from '@sinclair/typebox';
import type { Router } from '../server/router.js';
import { Deleted, errors, Nullable, StringEnum } from '../server/schemas.js';
import type { Services } from '../services.js';
import { BUDGET_INTERVALS } from './budgets.service.js';

export const WorkspaceBudget = Type.Object(
  {
    id: Type.String(),
    workspace_id: Type.String(),
    created_at: Type.String(),
    updated_at: Type.String(),
    limit_usd: Type.Number({ description: 'USD' }),
    reset_interval: Nullable(
      StringEnum(['daily', 'weekly', 'monthly'] as const, { description: 'null = lifetime budget' }),
    ),
    spent_usd: Type.Number({
      description:
        "USD the workspace's keys spent in the current window (UTC; lifetime: ever), BYOK included when include_byok_in_budgets",
    }),
  },
  { $id: 'WorkspaceBudget', title: 'WorkspaceBudget' },
);

const tags = ['Workspace budgets'];
const config = { auth: 'management' as const };
/** Writes: organization owners and admins only (members read). */
const adminConfig = { auth: 'management' as const, role: 'admin' as const };
const WorkspaceParams = Type.Object({
  workspace_ref: Type.String({ minLength: 1, description: 'Workspace UUID or slug' }),
});
const BudgetParams = Type.Object({
  workspace_ref: Type.String({ minLength: 1, description: 'Workspace UUID or slug' }),
  interval: StringEnum(BUDGET_INTERVALS),
});
const IncludeByok = Type.Boolean({
  description: 'Workspace-wide: whether BYOK spend counts against budgets',
});

export async function budgetsRoutes(app: Router, { budgets }: Pick<Services, 'budgets'>) {
  app.addSchema(WorkspaceBudget);
  const BudgetRef = Type.Ref(WorkspaceBudget);
  const One = Type.Object({ data: BudgetRef, include_byok_in_budgets: IncludeByok });

  app.get(
    '/workspaces/:workspace_ref/budgets',
    {
      config,
      schema: {
        tags,
        summary: 'List the budgets of a workspace',
        params: WorkspaceParams,
        response: {
          200: Type.Object({ data: Type.Array(BudgetRef), include_byok_in_budgets: IncludeByok }),
          ...errors(401, 403, 404, 500),
        },
      },
    },
    async (req) => budgets.list(req.caller, req.params.workspace_ref),
  );

  app.get(
    '/workspaces/:workspace_ref/budgets/:interval',
    {
      config,
      schema: {
        tags,
        summary: 'Get the budget of a workspace for one interval',
        params: BudgetParams,
        response: { 200: One, ...errors(400, 401, 403, 404, 500) },
      },
    },
    async (req) => budgets.get(req.caller, req.params.workspace_ref, req.params.interval),
  );

  app.put(
    '/workspaces/:workspace_ref/budgets/:interval',
    {
      config: adminConfig,
      schema: {
        tags,
        summary: 'Create or replace the budget of a workspace for one interval',
        description:
          'Limits must strictly decrease lifetime > monthly > weekly > daily among the budgets set. include_byok_in_budgets (optional) sets the workspace-wide flag.',
        params: BudgetParams,
        body: Type.Object({
          limit_usd: Type.Number({ exclusiveMinimum: 0, description: 'USD, greater than 0' }),
          include_byok_in_budgets: Type.Optional(IncludeByok),
        }),
        response: { 200: One, ...errors(400, 401, 403, 404, 500) },
      },
    },
    async (req) => budgets.put(req.caller, req.params.workspace_ref, req.params.interval, req.body),
  );

  app.delete(
    '/workspaces/:workspace_ref/budgets/:interval',
    {
      config: adminConfig,
      schema: {
        tags,
        summary: 'Delete the budget of a workspace for one interval',
        params: BudgetParams,
        response: { 200: Deleted, ...errors(400, 401, 403, 404, 500) },
      },
    },
    async (req) => {
      await budgets.delete(req.caller, req.params.workspace_ref, req.params.interval);
      return { deleted: true as const };
    },
  );
}
