import { LRUCache } from 'lru-cache';
import type { UsageService } from '../credits/usage.service.js';
import type { UsageCounters } from '../credits/usage.store.js';
import type { Db } from '../db/connection.js';
import { maskSecret, newSecretKey, sha256Hex } from '../lib/crypto.js';
import { badRequest, notFound } from '../lib/errors.js';
import { nowIso, type ResetInterval } from '../lib/time.js';
import type { Caller } from './caller.js';
import * as store from './keys.store.js';
import type { OrganizationsService } from './organizations.service.js';
import { Roles } from './roles.js';
import type { WorkspacesService } from './workspaces.service.js';

export const RESET_INTERVALS = ['daily', 'weekly', 'monthly'] as const;

/** Usage limits of a key (null = none); see limits/usage-limits.ts. */
export interface KeyUsageLimits {
  rpm_limit?: number | null;
  tpm_limit?: number | null;
  concurrency_limit?: number | null;
}
export const USAGE_LIMIT_FIELDS = ['rpm_limit', 'tpm_limit', 'concurrency_limit'] as const;

export interface KeyInput extends KeyUsageLimits {
  name: string;
  limit?: number | null;
  limit_reset?: ResetInterval | null;
  include_byok_in_limit?: boolean;
  expires_at?: string | null;
  creator_user_id?: string | null;
  workspace_id?: string;
  external?: { user: string; api_key?: string };
}

export interface KeyPatch extends KeyUsageLimits {
  name?: string;
  disabled?: boolean;
  limit?: number | null;
  limit_reset?: ResetInterval | null;
  include_byok_in_limit?: boolean;
}

/** The ApiKey wire object (digest §2). */
export type ApiKeyView = ReturnType<typeof keyView>;

function limitRemaining(row: store.KeyRow, u: UsageCounters): number | null {
  if (row.limit_usd === null) return null;
  const interval = row.limit_reset as ResetInterval | null;
  const spent = interval ? u[`usage_${interval}`] : u.usage;
  const byok = interval ? u[`byok_usage_${interval}`] : u.byok_usage;
  return Math.max(0, row.limit_usd - spent - (row.include_byok_in_limit ? byok : 0));
}

export function keyView(row: store.KeyRow, u: UsageCounters) {
  return {
    hash: row.hash,
    name: row.name,
    label: row.label,
    created_at: row.created_at,
    updated_at: row.updated_at,
    creator_user_id: row.creator_user_id,
    external_user: row.external_user,
    workspace_id: row.workspace_id,
    disabled: row.disabled === 1,
    limit: row.limit_usd,
    limit_remaining: limitRemaining(row, u),
    limit_reset: row.limit_reset,
    include_byok_in_limit: row.include_byok_in_limit === 1,
    rpm_limit: row.rpm_limit ?? null,
    tpm_limit: row.tpm_limit ?? null,
    concurrency_limit: row.concurrency_limit ?? null,
    ...u,
    expires_at: row.expires_at,
  };
}

/** The usage-limit fields a create or update sets (omitted ones untouched), refused unless whole and positive. */
function usageLimitsOf(input: KeyUsageLimits): KeyUsageLimits {
  const out: KeyUsageLimits = {};
  for (const field of USAGE_LIMIT_FIELDS) {
    const v = input[field];
    if (v === undefined) continue;
    if (v !== null && (!Number.isInteger(v) || v < 1))
      throw badRequest(`${field} must be a whole number of at least 1, or null for no limit`);
    out[field] = v;
  }
  return out;
}

/** Accepts ISO 8601 date-times with an explicit zone and seconds; returns the canonical UTC form. */
function parseExpiry(value: string): string {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(value)) {
    throw badRequest(
      'expires_at must be an ISO 8601 date-time with seconds and a zone, e.g. 2030-01-01T00:00:00Z',
    );
  }
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw badRequest('expires_at is not a valid date-time');
  if (t <= Date.now()) throw badRequest('expires_at must be in the future');
  return new Date(t).toISOString();
}

const isKeyHash = (s: string) => /^[0-9a-f]{64}$/.test(s);

/**
 * API keys and management keys: creation (secret shown once, stored as SHA-256 hex),
 * management, and authentication of bearer tokens through a short-lived cache.
 */
export class KeysService {
  /**
   * hash → row (or null for an unknown hash). The TTL bounds staleness across nodes when no cluster
   * bus tells this node about other nodes' writes (`forget`). Keyed by the SHA-256 of the token,
   * never the token itself, and bounded in entries: unknown tokens (negative entries) of any length
   * cost 64 characters each, so a flood of bogus bearer tokens cannot grow memory.
   */
  private readonly cache: LRUCache<string, { row: store.KeyRow | null }>;
  /** Bumped by every invalidation: a lookup that started before it is not cached. */
  private generation = 0;
  private readonly listeners: ((hash: string | null) => void)[] = [];
  private readonly roles: Roles;
  /** Usage limits a key gets when its creation names none (configuration). */
  private readonly limitDefaults: KeyUsageLimits;

  constructor(
    private readonly db: Db,
    private readonly workspaces: WorkspacesService,
    private readonly orgs: OrganizationsService,
    private readonly usage: UsageService,
    opts: { cacheMax?: number; limitDefaults?: KeyUsageLimits } = {},
  ) {
    this.limitDefaults = opts.limitDefaults ?? {};
    this.cache = new LRUCache({ max: opts.cacheMax ?? 50_000, ttl: 5_000 });
    this.roles = new Roles(db);
  }

  /** Resolves a bearer token to its caller, or null when unknown, disabled or expired. */
  async authenticate(token: string): Promise<Caller | null> {
    // Hashed on every call (about a microsecond): a token → hash cache would hold raw tokens.
    return this.callerOf(sha256Hex(token));
  }

  /** The key hashes the authentication cache holds now (tests and diagnostics: never tokens). */
  cachedHashes(): string[] {
    return [...this.cache.keys()];
  }

  /** The caller a key hash stands for, or null when unknown, disabled or expired (batches run as their key). */
  async callerOf(hash: string): Promise<Caller | null> {
    const row = await this.row(hash);
    if (!row || row.disabled === 1) return null;
    if (row.expires_at !== null && Date.parse(row.expires_at) <= Date.now()) return null;
    return {
      keyHash: row.hash,
      organizationId: row.organization_id,
      workspaceId: row.workspace_id,
      userId: row.creator_user_id,
      isManagement: row.is_management === 1,
    };
  }

  /** The key's row through the short-lived cache (null for an unknown hash). */
  async row(hash: string): Promise<store.KeyRow | null> {
    let hit = this.cache.get(hash);
    if (!hit) {
      const generation = this.generation;
      hit = { row: (await store.findKey(this.db, hash)) ?? null };
      // A row read before a write committed must not outlive the invalidation that followed it.
      if (generation === this.generation) this.cache.set(hash, hit);
    }
    return hit.row;
  }

  /** After a write to keys on this node: drops cached lookups and tells the listeners (other nodes). */
  invalidate(hash?: string): void {
    this.forget(hash);
    for (const l of this.listeners) l(hash ?? null);
  }

  /** Drops cached lookups, telling no one (another node wrote). */
  forget(hash?: string): void {
    this.generation++;
    if (hash) this.cache.delete(hash);
    else this.cache.clear();
  }

  /** Called after every `invalidate` (the cluster bus). */
  onInvalidate(listener: (hash: string | null) => void): void {
    this.listeners.push(listener);
  }

  /**
   * Creates a key in the caller's organization. Returns the stored row and the plaintext secret,
   * which is never stored or shown again. `secret` lets the operator bootstrap a known key.
   */
  async create(
    organizationId: string,
    input: KeyInput,
    opts: { management?: boolean; secret?: string } = {},
  ): Promise<{ row: store.KeyRow; key: string }> {
    const name = input.name.trim();
    if (name.length === 0) throw badRequest('name must not be empty');
    if (input.limit !== undefined && input.limit !== null && input.limit < 0) {
      throw badRequest('limit must be zero or more');
    }
    const workspace = await this.workspaces.resolve({ organizationId }, input.workspace_id);
    const creator = input.creator_user_id ?? null;
    if (creator !== null && !(await this.orgs.isMember(organizationId, creator))) {
      throw badRequest('creator_user_id is not a member of this organization');
    }
    if (input.external?.api_key !== undefined && input.external.api_key.length < 32) {
      throw badRequest('external.api_key must be at least 32 characters');
    }
    const limits = usageLimitsOf(input);
    const key = opts.secret ?? newSecretKey();
    const now = nowIso();
    const row: store.KeyRow = {
      hash: sha256Hex(key),
      organization_id: organizationId,
      workspace_id: workspace.id,
      creator_user_id: creator,
      name,
      label: maskSecret(key),
      is_management: opts.management ? 1 : 0,
      disabled: 0,
      limit_usd: input.limit ?? null,
      limit_reset: input.limit_reset ?? null,
      include_byok_in_limit: input.include_byok_in_limit ? 1 : 0,
      expires_at: input.expires_at ? parseExpiry(input.expires_at) : null,
      external_user: input.external?.user ?? null,
      external_api_key_hash: input.external?.api_key ? sha256Hex(input.external.api_key) : null,
      created_at: now,
      updated_at: now,
      // Named (null included) or the configured default; management keys make no inference calls.
      rpm_limit: null,
      tpm_limit: null,
      concurrency_limit: null,
    };
    for (const field of USAGE_LIMIT_FIELDS)
      row[field] = opts.management
        ? null
        : ((limits[field] !== undefined ? limits[field] : this.limitDefaults[field]) ?? null);
    await store.insertKey(this.db, row);
    this.invalidate(row.hash);
    return { row, key };
  }

  /**
   * POST /keys: a key created by a management key, attributed as its role allows (a member's key is
   * theirs; nobody attributes a key to another user).
   */
  async createAs(caller: Caller, input: KeyInput): Promise<{ row: store.KeyRow; key: string }> {
    const workspace = await this.workspaces.resolve(caller, input.workspace_id);
    const creator = await this.roles.creatorFor(caller, input.creator_user_id, workspace);
    return this.create(caller.organizationId, {
      ...input,
      workspace_id: workspace.id,
      creator_user_id: creator,
    });
  }

  async view(row: store.KeyRow): Promise<ApiKeyView> {
    const usage = await this.usage.forKeys([row.hash]);
    return keyView(row, usage.get(row.hash) ?? this.usage.zero());
  }

  async views(rows: store.KeyRow[]): Promise<ApiKeyView[]> {
    const usage = await this.usage.forKeys(rows.map((r) => r.hash));
    return rows.map((r) => keyView(r, usage.get(r.hash) ?? this.usage.zero()));
  }

  /** An inference API key of the caller's organization (management keys are not managed here). */
  async get(caller: Caller, hash: string): Promise<store.KeyRow> {
    const row = isKeyHash(hash) ? await store.findKey(this.db, hash) : undefined;
    if (!row || row.organization_id !== caller.organizationId || row.is_management === 1)
      throw notFound('Key');
    return row;
  }

  async list(caller: Caller, q: { workspace_id?: string; include_disabled?: boolean; offset: number }) {
    const ws = await this.workspaces.resolve(caller, q.workspace_id);
    const rows = await store.listKeys(this.db, {
      workspaceId: ws.id,
      includeDisabled: q.include_disabled ?? false,
      management: false,
      offset: q.offset,
      limit: 100,
    });
    return this.views(rows);
  }

  async update(caller: Caller, hash: string, patch: KeyPatch): Promise<store.KeyRow> {
    const row = await this.get(caller, hash);
    await this.roles.requireKeyControl(caller, row);
    if (patch.name !== undefined && patch.name.trim().length === 0)
      throw badRequest('name must not be empty');
    if (patch.limit !== undefined && patch.limit !== null && patch.limit < 0) {
      throw badRequest('limit must be zero or more');
    }
    const next = {
      ...(patch.name !== undefined ? { name: patch.name.trim() } : {}),
      ...(patch.disabled !== undefined ? { disabled: patch.disabled ? 1 : 0 } : {}),
      ...(patch.limit !== undefined ? { limit_usd: patch.limit } : {}),
      ...(patch.limit_reset !== undefined ? { limit_reset: patch.limit_reset } : {}),
      ...(patch.include_byok_in_limit !== undefined
        ? { include_byok_in_limit: patch.include_byok_in_limit ? 1 : 0 }
        : {}),
      ...usageLimitsOf(patch),
      updated_at: nowIso(),
    };
    await store.updateKey(this.db, row.hash, next);
    this.invalidate(row.hash);
    return { ...row, ...next };
  }

  async delete(caller: Caller, hash: string): Promise<void> {
    const row = await this.get(caller, hash);
    await this.roles.requireKeyControl(caller, row);
    await store.deleteKey(this.db, row.hash);
    this.invalidate(row.hash);
  }

  /** The calling key itself (GET /key), any kind of key. */
  async current(caller: Caller) {
    const row = await store.findKey(this.db, caller.keyHash);
    if (!row) throw notFound('Key');
    const { hash, name, disabled, created_at, updated_at, external_user, ...rest } = await this.view(row);
    return {
      ...rest,
      organization_id: row.organization_id,
      is_free_tier: false,
      is_management_key: row.is_management === 1,
      is_provisioning_key: row.is_management === 1,
      allowed_data_regions: [] as string[],
      free_model_daily_requests: { limit: -1, remaining: -1, used: 0 },
      rate_limit: { interval: '10s', note: 'Deprecated; rate limits are not reported per key', requests: -1 },
    };
  }

  /** Keys of the organization among the given hashes (unknown ones are left out). */
  among = (organizationId: string, hashes: string[]) => store.keysAmong(this.db, organizationId, hashes);
}
