import { randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Caller } from '../accounts/caller.js';
import type { WorkspacesService } from '../accounts/workspaces.service.js';
import type { Db } from '../db/connection.js';
import { decrypt, encrypt } from '../lib/crypto.js';
import { ApiError, badRequest, conflict, notFound } from '../lib/errors.js';
import { isUuid, newId } from '../lib/ids.js';
import { nowIso } from '../lib/time.js';
import {
  checkConfig,
  configView,
  type PlainConfig,
  type SealedConfig,
  type Target,
  target,
} from './configs.js';
import { checkRules, type FilterRules } from './rules.js';
import { DESTINATION_TYPES, type DestinationType } from './schemas.js';
import * as store from './store.js';

/** At most this many destinations of one type per workspace. */
const MAX_PER_TYPE = 5;

export interface DestinationInput {
  type?: string;
  config?: Record<string, unknown>;
  workspace_id?: string;
  name?: string | null;
  enabled?: boolean;
  api_key_hashes?: string[] | null;
  privacy_mode?: boolean;
  sampling_rate?: number;
  regions?: string[];
  filter_rules?: FilterRules | null;
  broadcast_generation_cost?: boolean;
  broadcast_generation_identity?: boolean;
  broadcast_generation_request_context?: boolean;
}

/** A destination as delivery needs it: secrets opened. Never leaves the process. */
export interface LiveDestination extends Target {
  id: string;
  type: DestinationType;
  /** Webhooks only ('' for the others). */
  signingSecret: string;
  apiKeyHashes: string[] | null;
  privacyMode: boolean;
  samplingRate: number;
  filterRules: FilterRules | null;
  cost: boolean;
  identity: boolean;
  requestContext: boolean;
}

const bit = (b: boolean) => (b ? 1 : 0);
const parse = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));

/** The wire view: secrets masked, the signing secret never shown (only once, on create). */
export function destinationView(row: store.DestinationRow) {
  const plain = JSON.parse(row.config_json) as PlainConfig;
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    type: row.type,
    name: row.name,
    enabled: row.enabled === 1,
    config: configView(row.type, plain),
    api_key_hashes: parse<string[]>(row.api_key_hashes),
    privacy_mode: row.privacy_mode === 1,
    sampling_rate: row.sampling_rate,
    regions: parse<string[]>(row.regions) ?? ['global'],
    filter_rules: parse<FilterRules>(row.filter_rules),
    broadcast_generation_cost: row.broadcast_cost === 1,
    broadcast_generation_identity: row.broadcast_identity === 1,
    broadcast_generation_request_context: row.broadcast_request_context === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * Export destinations of workspaces: where each generation's record goes after the call. Writes
 * through the management API; reads for delivery cached per workspace (dropped on a write here,
 * `CACHE_TTL_MS` on other nodes).
 */
export class DestinationsService {
  static readonly CACHE_TTL_MS = 10_000;
  private readonly cache = new LRUCache<string, { live: Promise<LiveDestination[]> }>({
    max: 10_000,
    ttl: DestinationsService.CACHE_TTL_MS,
  });

  constructor(
    private readonly db: Db,
    private readonly masterKey: Buffer,
    private readonly workspaces: WorkspacesService,
  ) {}

  async create(caller: Caller, input: DestinationInput) {
    const type = String(input.type) as DestinationType;
    if (!(DESTINATION_TYPES as readonly string[]).includes(type))
      throw badRequest(
        `Destination type ${type} is not supported by this gateway; supported: ${DESTINATION_TYPES.join(', ')}`,
      );
    const workspace = await this.workspace(caller.organizationId, input.workspace_id);
    checkRules(input.filter_rules);
    if ((await store.countDestinations(this.db, caller.organizationId, workspace.id, type)) >= MAX_PER_TYPE)
      throw conflict(`A workspace has at most ${MAX_PER_TYPE} ${type} destinations`);
    const { plain, sealed } = checkConfig(type, input.config ?? {});
    const id = newId();
    const now = nowIso();
    const signingSecret = type === 'webhook' ? `whsec_${randomBytes(24).toString('base64url')}` : null;
    if (signingSecret) sealed.signing_secret = signingSecret;
    const row: store.DestinationRow = {
      id,
      organization_id: caller.organizationId,
      workspace_id: workspace.id,
      type,
      name: input.name ?? null,
      enabled: bit(input.enabled ?? true),
      config_json: JSON.stringify(plain),
      secret_ciphertext: encrypt(this.masterKey, JSON.stringify(sealed), id),
      api_key_hashes: input.api_key_hashes ? JSON.stringify(input.api_key_hashes) : null,
      privacy_mode: bit(input.privacy_mode ?? false),
      sampling_rate: input.sampling_rate ?? 1,
      regions: JSON.stringify(input.regions ?? ['global']),
      filter_rules: input.filter_rules ? JSON.stringify(input.filter_rules) : null,
      broadcast_cost: bit(input.broadcast_generation_cost ?? true),
      broadcast_identity: bit(input.broadcast_generation_identity ?? true),
      broadcast_request_context: bit(input.broadcast_generation_request_context ?? false),
      created_at: now,
      updated_at: now,
      deleted_at: null,
    };
    await store.insertDestination(this.db, row);
    this.cache.delete(`${row.organization_id}:${row.workspace_id}`);
    return { row, signingSecret };
  }

  async get(caller: Pick<Caller, 'organizationId'>, id: string): Promise<store.DestinationRow> {
    const row = isUuid(id)
      ? await store.findDestination(this.db, caller.organizationId, id.toLowerCase())
      : undefined;
    if (!row) throw notFound('Observability destination');
    return row;
  }

  async list(caller: Caller, q: { workspace_id?: string; offset: number; limit: number }) {
    const workspace = await this.workspace(caller.organizationId, q.workspace_id);
    const [rows, total] = await Promise.all([
      store.listDestinations(this.db, caller.organizationId, workspace.id, q.offset, q.limit),
      store.countDestinations(this.db, caller.organizationId, workspace.id),
    ]);
    return { data: rows.map(destinationView), total_count: total };
  }

  async update(caller: Caller, id: string, input: DestinationInput): Promise<store.DestinationRow> {
    const row = await this.get(caller, id);
    checkRules(input.filter_rules);
    const patch: Partial<store.DestinationRow> = { updated_at: nowIso() };
    if (input.config !== undefined) {
      const previous = this.sealed(row);
      const { plain, sealed } = checkConfig(row.type as DestinationType, input.config, previous);
      if (previous.signing_secret) sealed.signing_secret = previous.signing_secret;
      patch.config_json = JSON.stringify(plain);
      patch.secret_ciphertext = encrypt(this.masterKey, JSON.stringify(sealed), row.id);
    }
    if (input.name !== undefined) patch.name = input.name;
    if (input.enabled !== undefined) patch.enabled = bit(input.enabled);
    if (input.api_key_hashes !== undefined)
      patch.api_key_hashes = input.api_key_hashes ? JSON.stringify(input.api_key_hashes) : null;
    if (input.privacy_mode !== undefined) patch.privacy_mode = bit(input.privacy_mode);
    if (input.sampling_rate !== undefined) patch.sampling_rate = input.sampling_rate;
    if (input.regions !== undefined) patch.regions = JSON.stringify(input.regions);
    if (input.filter_rules !== undefined)
      patch.filter_rules = input.filter_rules ? JSON.stringify(input.filter_rules) : null;
    if (input.broadcast_generation_cost !== undefined)
      patch.broadcast_cost = bit(input.broadcast_generation_cost);
    if (input.broadcast_generation_identity !== undefined)
      patch.broadcast_identity = bit(input.broadcast_generation_identity);
    if (input.broadcast_generation_request_context !== undefined)
      patch.broadcast_request_context = bit(input.broadcast_generation_request_context);
    await store.updateDestination(this.db, row.id, patch);
    this.cache.delete(`${row.organization_id}:${row.workspace_id}`);
    return { ...row, ...patch };
  }

  async delete(caller: Caller, id: string): Promise<void> {
    const row = await this.get(caller, id);
    await store.deleteDestination(this.db, row.id, nowIso());
    this.cache.delete(`${row.organization_id}:${row.workspace_id}`);
  }

  /** The enabled destinations of a workspace, secrets opened (for delivery only). */
  forWorkspace(organizationId: string, workspaceId: string): Promise<LiveDestination[]> {
    const key = `${organizationId}:${workspaceId}`;
    const hit = this.cache.get(key);
    if (hit) return hit.live;
    // The pending read is what is cached: the records of a busy workspace that arrive while it
    // runs share it instead of each reading the table.
    const live = this.load(organizationId, workspaceId);
    this.cache.set(key, { live });
    live.catch(() => {
      if (this.cache.get(key)?.live === live) this.cache.delete(key);
    });
    return live;
  }

  private async load(organizationId: string, workspaceId: string): Promise<LiveDestination[]> {
    const rows = await store.enabledDestinations(this.db, organizationId, workspaceId);
    return rows.map((row): LiveDestination => {
      const plain = JSON.parse(row.config_json) as PlainConfig;
      const sealed = this.sealed(row);
      return {
        id: row.id,
        type: row.type as DestinationType,
        ...target(row.type, plain, sealed),
        signingSecret: sealed.signing_secret ?? '',
        apiKeyHashes: parse<string[]>(row.api_key_hashes),
        privacyMode: row.privacy_mode === 1,
        samplingRate: row.sampling_rate,
        filterRules: parse<FilterRules>(row.filter_rules),
        cost: row.broadcast_cost === 1,
        identity: row.broadcast_identity === 1,
        requestContext: row.broadcast_request_context === 1,
      };
    });
  }

  private sealed(row: store.DestinationRow): SealedConfig {
    if (!row.secret_ciphertext) return {};
    return JSON.parse(decrypt(this.masterKey, row.secret_ciphertext, row.id)) as SealedConfig;
  }

  private async workspace(organizationId: string, ref: string | undefined) {
    try {
      return await this.workspaces.resolve({ organizationId }, ref);
    } catch (err) {
      if (err instanceof ApiError && err.status === 400 && ref !== undefined)
        throw badRequest('workspace_id does not name a workspace of this organization');
      throw err;
    }
  }
}
