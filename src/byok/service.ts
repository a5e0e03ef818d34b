import { LRUCache } from 'lru-cache';
import type { Caller } from '../accounts/caller.js';
import type { KeysService } from '../accounts/keys.service.js';
import type { OrganizationsService } from '../accounts/organizations.service.js';
import type { WorkspacesService } from '../accounts/workspaces.service.js';
import { fromJsonList, toBit, toJsonList } from '../db/columns.js';
import type { Db } from '../db/connection.js';
import { decrypt, encrypt, maskSecret } from '../lib/crypto.js';
import { ApiError, badRequest, notFound } from '../lib/errors.js';
import { isUuid, newId } from '../lib/ids.js';
import { isProviderSlug } from '../lib/provider-slugs.js';
import { nowIso } from '../lib/time.js';
import * as store from './store.js';

/** Fields settable on create and update (wire names). `null` clears a nullable field. */
interface CommonInput {
  name?: string | null;
  disabled?: boolean;
  is_fallback?: boolean;
  is_byok_only?: boolean;
  is_required?: boolean;
  declared_zdr?: boolean | null;
  sort_order?: number;
  weight?: number;
  allowed_api_key_hashes?: string[] | null;
  allowed_models?: string[] | null;
  allowed_user_ids?: string[] | null;
}

export interface ByokInput extends CommonInput {
  provider: string;
  key: string;
  workspace_id?: string;
}

export interface ByokPatch extends CommonInput {
  key?: string;
}

export interface ByokListQuery {
  offset: number;
  limit: number;
  workspace_id?: string;
  provider?: string;
}

/** The BYOKKey wire object (digest §3). */
export type ByokView = ReturnType<typeof byokView>;

const bool = (b: boolean | undefined, fallback: boolean): number => ((b ?? fallback) ? 1 : 0);

export function byokView(row: store.ByokRow) {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    name: row.name,
    provider: row.provider,
    label: row.label,
    disabled: row.disabled === 1,
    is_fallback: row.is_fallback === 1,
    is_byok_only: row.is_byok_only === 1,
    is_required: row.is_required === 1,
    declared_zdr: row.declared_zdr === null ? null : row.declared_zdr === 1,
    sort_order: Number(row.sort_order),
    weight: Number(row.weight ?? 1),
    allowed_api_key_hashes: fromJsonList(row.allowed_api_key_hashes),
    allowed_models: fromJsonList(row.allowed_models),
    allowed_user_ids: fromJsonList(row.allowed_user_ids),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * A secret, trimmed. Error messages here and below never quote request values: a caller who swaps
 * fields (the secret in `provider`, say) must not see the secret echoed back, or logged.
 */
function cleanSecret(key: string): string {
  const secret = key.trim();
  if (secret.length === 0) throw badRequest('key must not be empty');
  return secret;
}

function cleanName(name: string | null): string | null {
  if (name === null) return null;
  const trimmed = name.trim();
  if (trimmed.length === 0) throw badRequest('name must not be empty (send null to clear it)');
  return trimmed;
}

const unique = (list: string[]) => [...new Set(list)];

/**
 * Bring-your-own-key provider credentials: metadata management over HTTP, and decryption of the
 * secret for the inference engine only. Secrets are sealed with AES-256-GCM under the master key,
 * bound to the credential id (AAD), and wiped on delete.
 */
export class ByokService {
  /**
   * organization → its live credentials, for routing; short TTL (the bound across nodes without a
   * cluster bus), cleared on every write here and on other nodes' writes (`forget`).
   */
  private readonly routable = new LRUCache<string, { rows: store.ByokRow[] }>({ max: 10_000, ttl: 5_000 });
  /** Bumped by every invalidation: a load that started before it is not cached. */
  private generation = 0;
  private readonly listeners: ((organizationId: string) => void)[] = [];

  constructor(
    private readonly db: Db,
    private readonly masterKey: Buffer,
    private readonly workspaces: WorkspacesService,
    private readonly keys: KeysService,
    private readonly orgs: OrganizationsService,
    /** Whether the operator's configuration lets BYOK credentials apply to a provider (undefined: not configured). */
    private readonly byokAllowed: (provider: string) => boolean | undefined = () => undefined,
  ) {}

  /** After a write on this node: drops the organization's cached credentials and tells the listeners. */
  private invalidate(organizationId: string): void {
    this.forget(organizationId);
    for (const l of this.listeners) l(organizationId);
  }

  /** Drops cached credentials (of one organization, or all), telling no one (another node wrote). */
  forget(organizationId?: string): void {
    this.generation++;
    if (organizationId) this.routable.delete(organizationId);
    else this.routable.clear();
  }

  /** Called after every write to credentials on this node (the cluster bus). */
  onInvalidate(listener: (organizationId: string) => void): void {
    this.listeners.push(listener);
  }

  async create(caller: Caller, input: ByokInput): Promise<store.ByokRow> {
    const organizationId = caller.organizationId;
    if (!isProviderSlug(input.provider)) throw badRequest('provider is not a known provider slug');
    // A provider the operator serves without BYOK would never use it (its calls go out with the
    // operator's credential): refused rather than stored as if it did something.
    if (this.byokAllowed(input.provider) === false) {
      throw badRequest('This gateway does not accept BYOK credentials for that provider');
    }
    const secret = cleanSecret(input.key);
    const workspace = await this.workspace(organizationId, input.workspace_id);
    const fields = await this.checkedFields(organizationId, input);
    const isFallback = input.is_fallback ?? false;
    const isByokOnly = input.is_byok_only ?? false;
    if (isFallback && isByokOnly) throw badRequest('is_byok_only cannot be combined with is_fallback');

    const id = newId();
    const now = nowIso();
    const created = await this.db.transaction().execute(async (tx) => {
      const row: store.ByokRow = {
        id,
        organization_id: organizationId,
        workspace_id: workspace.id,
        provider: input.provider,
        name: fields.name ?? null,
        label: maskSecret(secret),
        secret_ciphertext: encrypt(this.masterKey, secret, id),
        disabled: bool(input.disabled, false),
        is_fallback: isFallback ? 1 : 0,
        is_byok_only: isByokOnly ? 1 : 0,
        is_required: bool(input.is_required, false),
        declared_zdr: toBit(input.declared_zdr ?? null),
        sort_order:
          input.sort_order ?? (await store.nextSortOrder(tx, organizationId, workspace.id, input.provider)),
        weight: input.weight ?? 1,
        allowed_api_key_hashes: fields.allowed_api_key_hashes ?? null,
        allowed_models: fields.allowed_models ?? null,
        allowed_user_ids: fields.allowed_user_ids ?? null,
        created_at: now,
        updated_at: now,
        deleted_at: null,
      };
      await store.insertCredential(tx, row);
      return row;
    });
    // Once committed: dropped inside the transaction, a concurrent load could cache the old list.
    this.invalidate(organizationId);
    return created;
  }

  /** A live credential of the caller's organization; anything else (foreign, deleted) is a 404. */
  async get(caller: Pick<Caller, 'organizationId'>, id: string): Promise<store.ByokRow> {
    const row = isUuid(id)
      ? await store.findCredential(this.db, caller.organizationId, id.toLowerCase())
      : undefined;
    if (!row) throw notFound('BYOK credential');
    return row;
  }

  async list(caller: Caller, q: ByokListQuery): Promise<{ data: ByokView[]; total_count: number }> {
    if (q.provider !== undefined && !isProviderSlug(q.provider)) {
      throw badRequest('provider is not a known provider slug');
    }
    const workspace = await this.workspace(caller.organizationId, q.workspace_id);
    const where = { organizationId: caller.organizationId, workspaceId: workspace.id, provider: q.provider };
    const [rows, total] = await Promise.all([
      store.listCredentials(this.db, { ...where, offset: q.offset, limit: q.limit }),
      store.countCredentials(this.db, where),
    ]);
    return { data: rows.map(byokView), total_count: total };
  }

  async update(caller: Caller, id: string, patch: ByokPatch): Promise<store.ByokRow> {
    const row = await this.get(caller, id);
    const secret = patch.key === undefined ? undefined : cleanSecret(patch.key);
    const fields = await this.checkedFields(caller.organizationId, patch);
    const isFallback = patch.is_fallback ?? row.is_fallback === 1;
    const isByokOnly = patch.is_byok_only ?? row.is_byok_only === 1;
    if (isFallback && isByokOnly) throw badRequest('is_byok_only cannot be combined with is_fallback');

    const next = {
      ...fields,
      ...(secret !== undefined
        ? { label: maskSecret(secret), secret_ciphertext: encrypt(this.masterKey, secret, row.id) }
        : {}),
      ...(patch.disabled !== undefined ? { disabled: bool(patch.disabled, false) } : {}),
      ...(patch.is_fallback !== undefined ? { is_fallback: bool(patch.is_fallback, false) } : {}),
      ...(patch.is_byok_only !== undefined ? { is_byok_only: bool(patch.is_byok_only, false) } : {}),
      ...(patch.is_required !== undefined ? { is_required: bool(patch.is_required, false) } : {}),
      ...(patch.declared_zdr !== undefined ? { declared_zdr: toBit(patch.declared_zdr) } : {}),
      ...(patch.sort_order !== undefined ? { sort_order: patch.sort_order } : {}),
      ...(patch.weight !== undefined ? { weight: patch.weight } : {}),
      updated_at: nowIso(),
    };
    await store.updateCredential(this.db, row.id, next);
    this.invalidate(caller.organizationId);
    return { ...row, ...next };
  }

  /** Soft delete; the sealed secret is wiped, and the credential is a 404 from then on. */
  async delete(caller: Caller, id: string): Promise<void> {
    const row = await this.get(caller, id);
    await store.deleteCredential(this.db, row.id, nowIso());
    this.invalidate(caller.organizationId);
  }

  /**
   * The decrypted secret of a live credential, for the inference engine (never over HTTP).
   * Throws 404 for an unknown, foreign or deleted credential, and a plain Error (a 500, without
   * details) when the ciphertext does not open under the master key and this credential's id.
   */
  async secretFor(organizationId: string, id: string): Promise<string> {
    const row = await this.get({ organizationId }, id);
    if (row.secret_ciphertext === null) throw notFound('BYOK credential');
    try {
      return decrypt(this.masterKey, row.secret_ciphertext, row.id);
    } catch {
      throw new Error('BYOK credential secret cannot be decrypted (wrong master key or tampered row)');
    }
  }

  /**
   * The credentials that apply to a call: same provider, usable in the caller's workspace, not
   * disabled, and allowing the model, the calling key and its user. In try order (sort_order);
   * `fallback` ones are tried only after the operator's key, and `byokOnly` forbids that key.
   */
  async forCall(caller: Caller, provider: string, modelId: string) {
    let hit = this.routable.get(caller.organizationId);
    if (!hit) {
      const generation = this.generation;
      hit = { rows: await store.liveCredentials(this.db, caller.organizationId) };
      if (generation === this.generation) this.routable.set(caller.organizationId, hit);
    }
    const allows = (list: string | null, value: string | null) =>
      list === null || (value !== null && (fromJsonList(list) ?? []).includes(value));
    const matching = hit.rows.filter(
      (r) =>
        r.provider === provider &&
        r.disabled === 0 &&
        (r.workspace_id === null || r.workspace_id === caller.workspaceId) &&
        allows(r.allowed_models, modelId) &&
        allows(r.allowed_api_key_hashes, caller.keyHash) &&
        allows(r.allowed_user_ids, caller.userId),
    );
    // Named by id; its breaker starts afresh after any update (a new key, a re-enabled credential).
    const credential = (r: store.ByokRow) => ({
      apiKey: decrypt(this.masterKey, r.secret_ciphertext as string, r.id),
      isByok: true as const,
      byokId: r.id,
      name: r.id,
      weight: Number(r.weight ?? 1),
      health: { key: r.id, version: r.updated_at ?? r.created_at },
    });
    return {
      primary: matching.filter((r) => r.is_fallback === 0).map(credential),
      fallback: matching.filter((r) => r.is_fallback === 1).map(credential),
      byokOnly: matching.some((r) => r.is_byok_only === 1),
    };
  }

  /** Validates and encodes the nullable/list fields present in `input` (absent ones stay absent). */
  private async checkedFields(organizationId: string, input: CommonInput) {
    const out: {
      name?: string | null;
      allowed_api_key_hashes?: string | null;
      allowed_models?: string | null;
      allowed_user_ids?: string | null;
    } = {};
    if (input.name !== undefined) out.name = cleanName(input.name);

    const hashes = input.allowed_api_key_hashes;
    if (hashes !== undefined) {
      if (hashes !== null) {
        if (hashes.length === 0)
          throw badRequest('allowed_api_key_hashes must not be empty (send null to allow any key)');
        const list = unique(hashes);
        const known = new Set(
          (await this.keys.among(organizationId, list))
            .filter((k) => k.is_management === 0)
            .map((k) => k.hash),
        );
        const bad = list.filter((h) => !known.has(h)).length;
        if (bad > 0) {
          throw badRequest(
            `allowed_api_key_hashes: ${bad} of ${list.length} entries are not API keys of this organization`,
          );
        }
        out.allowed_api_key_hashes = toJsonList(list);
      } else out.allowed_api_key_hashes = null;
    }

    const models = input.allowed_models;
    if (models !== undefined) {
      if (models?.some((m) => m.trim().length === 0)) {
        throw badRequest('allowed_models must not contain empty entries');
      }
      out.allowed_models = toJsonList(models === null ? null : unique(models.map((m) => m.trim())));
    }

    const users = input.allowed_user_ids;
    if (users !== undefined) {
      if (users !== null) {
        const list = unique(users);
        const members = await this.orgs.membersAmong(organizationId, list);
        const bad = list.filter((u) => !members.has(u)).length;
        if (bad > 0) {
          throw badRequest(
            `allowed_user_ids: ${bad} of ${list.length} entries are not members of this organization`,
          );
        }
        out.allowed_user_ids = toJsonList(list);
      } else out.allowed_user_ids = null;
    }
    return out;
  }

  /**
   * The workspace named by `ref`, or the default one. The workspace service's message quotes the
   * reference; here it is replaced so that no request value is ever echoed (see cleanSecret).
   */
  private async workspace(organizationId: string, ref: string | undefined) {
    try {
      return await this.workspaces.resolve({ organizationId }, ref);
    } catch (err) {
      if (err instanceof ApiError && err.status === 400 && ref !== undefined) {
        throw badRequest('workspace_id does not name a workspace of this organization');
      }
      throw err;
    }
  }
}
