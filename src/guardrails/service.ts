import type { Updateable } from 'kysely';
import type { Caller } from '../accounts/caller.js';
import type { WorkspacesService } from '../accounts/workspaces.service.js';
import { fromJsonList, toBit, toJsonList } from '../db/columns.js';
import type { Db } from '../db/connection.js';
import type { GuardrailsTable } from '../db/schema.js';
import { badRequest, notFound } from '../lib/errors.js';
import { defaultGuardrailId, isUuid, newId } from '../lib/ids.js';
import { nowIso, type ResetInterval } from '../lib/time.js';
import {
  type BuiltinFilterInput,
  builtinFilterView,
  type ContentFilter,
  DATA_REGIONS,
  type DataRegion,
  normaliseBuiltinFilters,
  normaliseContentFilters,
  normaliseModels,
  normaliseProviders,
  RESET_INTERVALS,
  type StoredBuiltinFilter,
  unique,
  ZDR_VENDORS,
} from './fields.js';
import * as store from './store.js';

type Org = Pick<Caller, 'organizationId'>;
type ZdrVendorFlag = `enforce_zdr_${(typeof ZDR_VENDORS)[number]}`;

/** The writable policy fields of a guardrail; absent = unchanged, null = cleared. */
export type GuardrailFields = {
  description?: string | null;
  limit_usd?: number | null;
  reset_interval?: ResetInterval | null;
  allowed_data_regions?: DataRegion[] | null;
  allowed_models?: string[] | null;
  allowed_providers?: string[] | null;
  ignored_models?: string[] | null;
  ignored_providers?: string[] | null;
  content_filters?: ContentFilter[] | null;
  content_filter_builtins?: BuiltinFilterInput[] | null;
  include_byok_in_budgets?: boolean;
  rpm_limit?: number | null;
  tpm_limit?: number | null;
  concurrency_limit?: number | null;
  enable_free_model_publication?: boolean | null;
  enable_free_model_training?: boolean | null;
  enable_paid_model_training?: boolean | null;
  /** Deprecated: on write it seeds every per-vendor flag not given in the same request. */
  enforce_zdr?: boolean | null;
} & { [K in ZdrVendorFlag]?: boolean | null };

export type GuardrailInput = GuardrailFields & { name: string; workspace_id?: string };
export type GuardrailPatch = GuardrailFields & { name?: string };

/** The Guardrail wire object, extended form (seed; digest §1.1). */
export type GuardrailView = ReturnType<typeof guardrailView>;

const DEFAULT_GUARDRAIL_NAME = 'Default guardrail';

export function guardrailView(row: store.GuardrailRow) {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    name: row.name,
    description: row.description,
    created_at: row.created_at,
    updated_at: row.updated_at,
    limit_usd: row.limit_usd,
    reset_interval: row.reset_interval,
    allowed_data_regions: fromJsonList<string>(row.allowed_data_regions),
    allowed_models: fromJsonList<string>(row.allowed_models),
    allowed_providers: fromJsonList<string>(row.allowed_providers),
    ignored_models: fromJsonList<string>(row.ignored_models),
    ignored_providers: fromJsonList<string>(row.ignored_providers),
    include_byok_in_budgets: row.include_byok_in_budgets === 1,
    rpm_limit: row.rpm_limit ?? null,
    tpm_limit: row.tpm_limit ?? null,
    concurrency_limit: row.concurrency_limit ?? null,
    content_filters: fromJsonList<ContentFilter>(row.content_filters),
    content_filter_builtins:
      fromJsonList<StoredBuiltinFilter>(row.content_filter_builtins)?.map(builtinFilterView) ?? null,
    // The seed types these eight flags as plain booleans: unset (null) reads as false.
    enable_free_model_publication: row.enable_free_model_publication === 1,
    enable_free_model_training: row.enable_free_model_training === 1,
    enable_paid_model_training: row.enable_paid_model_training === 1,
    enforce_zdr: row.enforce_zdr === null ? null : row.enforce_zdr === 1,
    enforce_zdr_anthropic: row.enforce_zdr_anthropic === 1,
    enforce_zdr_google: row.enforce_zdr_google === 1,
    enforce_zdr_openai: row.enforce_zdr_openai === 1,
    enforce_zdr_other: row.enforce_zdr_other === 1,
    enforce_zdr_xai: row.enforce_zdr_xai === 1,
  };
}

function checkName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0) throw badRequest('name must not be empty');
  return trimmed;
}

/** Validates the fields present in `f` and turns them into column values (absent fields stay absent). */
function columnsOf(f: GuardrailFields): Updateable<GuardrailsTable> {
  const c: Updateable<GuardrailsTable> = {};
  if (f.description !== undefined) c.description = f.description;
  if (f.limit_usd !== undefined) {
    if (f.limit_usd !== null && !(Number.isFinite(f.limit_usd) && f.limit_usd >= 0)) {
      throw badRequest('limit_usd must be a number, zero or more');
    }
    c.limit_usd = f.limit_usd;
  }
  if (f.reset_interval !== undefined) {
    if (f.reset_interval !== null && !RESET_INTERVALS.includes(f.reset_interval)) {
      throw badRequest(`reset_interval must be one of ${RESET_INTERVALS.join(', ')}`);
    }
    c.reset_interval = f.reset_interval;
  }
  if (f.allowed_data_regions !== undefined) {
    const bad = (f.allowed_data_regions ?? []).filter((r) => !DATA_REGIONS.includes(r));
    if (bad.length > 0) throw badRequest(`allowed_data_regions has unknown regions: ${bad.join(', ')}`);
    c.allowed_data_regions = toJsonList(f.allowed_data_regions && unique(f.allowed_data_regions));
  }
  for (const field of ['allowed_models', 'ignored_models'] as const) {
    const v = f[field];
    if (v !== undefined) c[field] = toJsonList(v && normaliseModels(field, v));
  }
  for (const field of ['allowed_providers', 'ignored_providers'] as const) {
    const v = f[field];
    if (v !== undefined) c[field] = toJsonList(v && normaliseProviders(field, v));
  }
  if (f.content_filters !== undefined) {
    c.content_filters = toJsonList(f.content_filters && normaliseContentFilters(f.content_filters));
  }
  if (f.content_filter_builtins !== undefined) {
    c.content_filter_builtins = toJsonList(
      f.content_filter_builtins && normaliseBuiltinFilters(f.content_filter_builtins),
    );
  }
  if (f.include_byok_in_budgets !== undefined) c.include_byok_in_budgets = f.include_byok_in_budgets ? 1 : 0;
  for (const field of ['rpm_limit', 'tpm_limit', 'concurrency_limit'] as const) {
    const v = f[field];
    if (v === undefined) continue;
    if (v !== null && !(Number.isInteger(v) && v >= 1))
      throw badRequest(`${field} must be a whole number of at least 1, or null for no limit`);
    c[field] = v;
  }
  for (const flag of [
    'enable_free_model_publication',
    'enable_free_model_training',
    'enable_paid_model_training',
    'enforce_zdr',
  ] as const) {
    const v = f[flag];
    if (v !== undefined) c[flag] = toBit(v);
  }
  // enforce_zdr is copied into every per-vendor flag the same request leaves out.
  for (const vendor of ZDR_VENDORS) {
    const flag: ZdrVendorFlag = `enforce_zdr_${vendor}`;
    const v = f[flag] !== undefined ? f[flag] : f.enforce_zdr;
    if (v !== undefined) c[flag] = toBit(v);
  }
  return c;
}

/** A budget is a limit and a reset interval together (or neither). */
function checkBudget(row: Pick<store.GuardrailRow, 'limit_usd' | 'reset_interval'>): void {
  if ((row.limit_usd === null) !== (row.reset_interval === null)) {
    throw badRequest('limit_usd and reset_interval must be set together (or both null)');
  }
}

function blankRow(
  organizationId: string,
  workspaceId: string,
  name: string,
  now: string,
): store.GuardrailRow {
  return {
    id: newId(),
    organization_id: organizationId,
    workspace_id: workspaceId,
    name,
    description: null,
    limit_usd: null,
    reset_interval: null,
    allowed_data_regions: null,
    allowed_models: null,
    allowed_providers: null,
    ignored_models: null,
    ignored_providers: null,
    content_filters: null,
    content_filter_builtins: null,
    include_byok_in_budgets: 0,
    rpm_limit: null,
    tpm_limit: null,
    concurrency_limit: null,
    enable_free_model_publication: null,
    enable_free_model_training: null,
    enable_paid_model_training: null,
    enforce_zdr: null,
    enforce_zdr_anthropic: null,
    enforce_zdr_google: null,
    enforce_zdr_openai: null,
    enforce_zdr_other: null,
    enforce_zdr_xai: null,
    created_at: now,
    updated_at: now,
  };
}

/** Canonical form of a guardrail id as looked up (UUIDs are stored lower-case). */
const canonicalId = (id: string) => (isUuid(id) ? id.toLowerCase() : id);

/**
 * Guardrails: policy and budget objects of an organization, each in one workspace. A workspace's
 * default guardrail has a derived id before its row exists; PATCH on that id materialises it.
 */
export class GuardrailsService {
  constructor(
    private readonly db: Db,
    private readonly workspaces: WorkspacesService,
    /** Told after every write, so cached effective policies are dropped (PolicyService). */
    private readonly policy?: { invalidate(): void },
  ) {}

  async create(caller: Org, input: GuardrailInput): Promise<store.GuardrailRow> {
    const name = checkName(input.name);
    const columns = columnsOf(input);
    const workspace = await this.workspaces.resolve(caller, input.workspace_id);
    const row: store.GuardrailRow = {
      ...blankRow(caller.organizationId, workspace.id, name, nowIso()),
      ...columns,
    };
    checkBudget(row);
    await store.insertGuardrail(this.db, row);
    this.policy?.invalidate();
    return row;
  }

  async list(caller: Org, q: { workspace_id?: string; offset: number; limit: number }) {
    const workspace = await this.workspaces.resolve(caller, q.workspace_id);
    const where = { organizationId: caller.organizationId, workspaceId: workspace.id };
    const [rows, total] = await Promise.all([
      store.listGuardrails(this.db, { ...where, offset: q.offset, limit: q.limit }),
      store.countGuardrails(this.db, where.organizationId, where.workspaceId),
    ]);
    return { data: rows.map(guardrailView), total_count: total };
  }

  /** A guardrail of the caller's organization (404 otherwise, including unmaterialised defaults). */
  async get(caller: Org, id: string): Promise<store.GuardrailRow> {
    const row = await store.findGuardrail(this.db, caller.organizationId, canonicalId(id));
    if (!row) throw notFound('Guardrail');
    return row;
  }

  async update(caller: Org, rawId: string, patch: GuardrailPatch): Promise<store.GuardrailRow> {
    const id = canonicalId(rawId);
    const now = nowIso();
    const columns: Updateable<GuardrailsTable> = {
      ...(patch.name !== undefined ? { name: checkName(patch.name) } : {}),
      ...columnsOf(patch),
      updated_at: now,
    };
    let materialise: store.GuardrailRow | null = null;
    if (!(await store.findGuardrail(this.db, caller.organizationId, id))) {
      const workspaceIds = await store.workspaceIdsOf(this.db, caller.organizationId);
      const workspaceId = workspaceIds.find((w) => defaultGuardrailId(w) === id);
      if (!workspaceId) throw notFound('Guardrail');
      materialise = { ...blankRow(caller.organizationId, workspaceId, DEFAULT_GUARDRAIL_NAME, now), id };
    }
    const updated = await this.db.transaction().execute(async (tx) => {
      if (materialise) await store.insertGuardrailIfAbsent(tx, materialise);
      await store.updateGuardrail(tx, id, columns);
      const row = await store.findGuardrail(tx, caller.organizationId, id);
      if (!row) throw notFound('Guardrail');
      // Checked on the merged row, so a patch may change one half of a budget; a violation rolls back.
      checkBudget(row);
      return row;
    });
    this.policy?.invalidate();
    return updated;
  }

  /** Deletes the guardrail with its key and member assignments. */
  async delete(caller: Org, id: string): Promise<void> {
    const row = await this.get(caller, id);
    await this.db.transaction().execute((tx) => store.deleteGuardrail(tx, row.id));
    this.policy?.invalidate();
  }
}
