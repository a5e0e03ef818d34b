import { randomBytes } from 'node:crypto';
import type { Caller } from '../accounts/caller.js';
import type { InternsConfig } from '../config.js';
import { fromJsonList, isForeignKeyViolation, isUniqueViolation, toJsonList } from '../db/columns.js';
import type { Db, Dialect } from '../db/connection.js';
import type { InternAccess } from '../interns/access.js';
import { decrypt, encrypt } from '../lib/crypto.js';
import { ApiError, badRequest, conflict, notFound } from '../lib/errors.js';
import { derivedId, isUuid, newId } from '../lib/ids.js';
import { nowIso } from '../lib/time.js';
import type { RateLimiter } from '../routing/rate-limit.js';
import { copiedFrom, fingerprintOf, writerOf } from './fingerprint.js';
import { normalizeHosts } from './hosts.js';
import { secretNameProblem } from './names.js';
import * as store from './store.js';
import { normalizePorts, type SecretTransport } from './transport.js';

/** A secret as the egress layer uses it: decrypted, with the hosts (and schemes, ports) it may be sent to. */
export interface UsableSecret extends SecretTransport {
  name: string;
  value: string;
  /** Exact hostnames; null on a legacy row (never released). */
  hosts: string[] | null;
}

/** The additional data binding a sealed value to its vault and name (so rows cannot be swapped). */
export const secretAad = (vaultId: string, name: string) => `vault-secret:${vaultId}:${name}`;
const vaultKeyAad = (vaultId: string) => `vault-key:${vaultId}`;

/** The VaultSecret wire object (digest §7): metadata only, never the value. */
export interface VaultSecretView {
  name: string;
  /** null only on a legacy row stored before host binding. */
  hosts: string[] | null;
  /** Hex HMAC-SHA-256 of name, writer and value under the vault's own key (fingerprint.ts); null only on a legacy row. */
  fingerprint: string | null;
  created_at: string;
  /** Present (true) only when the value may also go over plain HTTP. */
  allow_http?: true;
  /** Present only when the value may go to ports beyond the scheme's default. */
  ports?: number[];
}

export interface VaultPage {
  data: VaultSecretView[];
  has_more: boolean;
}

/** Which vault a call acts on: the caller's workspace's, or one intern's own (never a borrowed one). */
export type VaultScope = { kind: 'workspace' } | { kind: 'intern'; internId: string };

export interface SecretWriteInput {
  value: string;
  hosts: string[];
  /** Also release the value over plain HTTP (default false: HTTPS only). */
  allow_http?: boolean;
  /** Ports beyond 443 (80 for http) the value may be sent to. */
  ports?: number[];
}

/** Bounds of a value, in UTF-16 code units (JavaScript string length, as the schema checks it). */
export const VALUE_MAX = 65_536;
/**
 * Shorter values are refused: a PIN or short password is guessed quickly, and egress could not
 * tell it apart from ordinary text when removing it from responses (see interns/redaction.ts).
 */
export const VALUE_MIN = 8;
/** The 400 message for a value under VALUE_MIN. */
export const VALUE_TOO_SHORT = `value must be at least ${VALUE_MIN} characters long; shorter secrets are refused`;
/** At most this many names per copy. */
export const COPY_MAX = 100;

/** Intern states whose vault is no longer written (the intern is going away). */
const CLOSING = new Set(['destroying', 'destroy_failed']);

/** A strict ISO 8601 datetime with a zone, as the SDK validates VaultSecret.created_at. */
const STRICT_DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})$/;

/** A stored timestamp in the strict form (rows written here already are; older text is read as UTC). */
export function strictDatetime(text: string): string {
  if (STRICT_DATETIME.test(text)) return text;
  const iso = text.trim().replace(' ', 'T');
  const d = new Date(/(?:Z|[+-]\d{2}:?\d{2})$/i.test(iso) ? iso : `${iso}Z`);
  return Number.isNaN(d.getTime()) ? text : d.toISOString();
}

const transportOf = (row: { allow_http: number; ports_json: string | null }): SecretTransport => ({
  allowHttp: row.allow_http === 1,
  ports: fromJsonList<number>(row.ports_json) ?? [],
});

/** The wire object; `allow_http` and `ports` only when they widen the default (HTTPS, port 443). */
function view(row: store.SecretMeta): VaultSecretView {
  const { allowHttp, ports } = transportOf(row);
  return {
    name: row.name,
    hosts: fromJsonList(row.hosts_json),
    fingerprint: row.fingerprint,
    created_at: strictDatetime(row.created_at),
    ...(allowHttp ? { allow_http: true as const } : {}),
    ...(ports.length > 0 ? { ports } : {}),
  };
}

function checkName(name: string, what = 'name'): void {
  const problem = secretNameProblem(name);
  if (problem) throw badRequest(`${what} ${problem}`);
}

function checkValue(value: string): void {
  if (typeof value === 'string' && value.length < VALUE_MIN) throw badRequest(VALUE_TOO_SHORT);
  if (typeof value !== 'string' || value.length > VALUE_MAX) {
    throw badRequest(`value must be a string of ${VALUE_MIN} to ${VALUE_MAX} characters`);
  }
}

/** A write that met a foreign-key violation raced the vault's deletion (its intern destroyed). */
const vaultGone = (err: unknown) =>
  isForeignKeyViolation(err) ? conflict('The vault was deleted while the secret was being written') : err;

/**
 * Vaults: a workspace's secrets and each intern's private vault (digest §7). Values are sealed
 * under the master key and never returned; `fingerprint` is an HMAC under the vault's own key.
 */
export class VaultService {
  constructor(
    readonly deps: {
      db: Db;
      dialect: Dialect;
      masterKey: Buffer;
      config: InternsConfig;
      /** Vault writes per member (GATEHOUSE_VAULT_WRITE_LIMIT); none → unlimited. */
      limiter?: RateLimiter;
      /** Who may read and write an intern's vault (its owner and the workspace's administrators). */
      access: InternAccess;
    },
  ) {}

  /** Creates the intern's private vault (idempotent: returns the existing one's id). */
  async createInternVault(workspaceId: string, internId: string): Promise<string> {
    const existing = await store.vaultOfIntern(this.deps.db, internId);
    if (existing) return existing.id;
    const id = newId();
    try {
      await store.insertVault(this.deps.db, this.newVault(id, workspaceId, internId));
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
    }
    return (await store.vaultOfIntern(this.deps.db, internId))?.id ?? id;
  }

  /** The intern owning vault `vaultId` in this workspace (for `vault_id` borrowing), or null. */
  async ownerOfVault(workspaceId: string, vaultId: string): Promise<string | null> {
    const row = await store.findVault(this.deps.db, workspaceId, vaultId);
    return row?.owner_intern_id ?? null;
  }

  /** Deletes the intern's private vault and its secrets (intern destroyed). */
  async deleteInternVault(internId: string): Promise<void> {
    await store.deleteVaultOfIntern(this.deps.db, internId);
  }

  /**
   * The secrets an intern's runtime may use: its own vault's and its attached (borrowed) vault's,
   * its own winning on a name both hold.
   */
  async secretsForIntern(internId: string): Promise<UsableSecret[]> {
    const intern = await this.deps.db
      .selectFrom('interns')
      .select(['vault_id', 'attached_vault_id'])
      .where('id', '=', internId)
      .executeTakeFirst();
    if (!intern) return [];
    const order = [intern.vault_id, intern.attached_vault_id].filter((v): v is string => v !== null);
    const rows = await store.secretRowsOf(this.deps.db, order);
    const byName = new Map<string, UsableSecret>();
    for (const vaultId of order) {
      for (const r of rows) {
        if (r.vault_id !== vaultId || byName.has(r.name)) continue;
        byName.set(r.name, {
          name: r.name,
          value: decrypt(this.deps.masterKey, r.value_sealed, secretAad(vaultId, r.name)),
          hosts: fromJsonList(r.hosts_json),
          ...transportOf(r),
        });
      }
    }
    return [...byName.values()];
  }

  /** 503 while vault writes are switched off (GATEHOUSE_VAULT_WRITES=off). */
  assertWritable(): void {
    if (!this.deps.config.vaultWrites) {
      throw new ApiError(503, 'Vault writes are disabled on this gateway; try again later');
    }
  }

  /**
   * Counts one write attempt (PUT, DELETE or copy, valid or not) of the member behind the key, or
   * of the key when it acts as the organization; 429 with Retry-After beyond the limit. Limited
   * per member rather than per key so that minting keys does not buy more guesses.
   */
  async consumeWrite(caller: Pick<Caller, 'userId' | 'keyHash'>): Promise<void> {
    const rate = await this.deps.limiter?.consume(writerOf(caller));
    if (!rate || rate.ok) return;
    const { vaultWriteLimit, vaultWriteWindowSeconds } = this.deps.config;
    throw new ApiError(
      429,
      `Too many vault writes (at most ${vaultWriteLimit} per ${vaultWriteWindowSeconds} s for each member); retry in ${Math.max(1, Math.ceil(rate.retryAfterMs / 1000))} s`,
      { retry_after_ms: rate.retryAfterMs },
    );
  }

  /** One page of a vault's secrets, by name (an absent vault is an empty one). */
  async list(caller: Caller, scope: VaultScope, page: { offset: number; limit: number }): Promise<VaultPage> {
    const vault = await this.readable(caller, scope);
    if (!vault) return { data: [], has_more: false };
    const rows = await store.listSecrets(this.deps.db, this.deps.dialect, vault.id, page);
    return { data: rows.slice(0, page.limit).map(view), has_more: rows.length > page.limit };
  }

  /** Creates or replaces a secret (a replaced one keeps its created_at). */
  async put(
    caller: Caller,
    scope: VaultScope,
    name: string,
    input: SecretWriteInput,
  ): Promise<VaultSecretView> {
    this.assertWritable();
    this.deps.access.requireUser(caller, 'standard');
    checkName(name);
    checkValue(input.value);
    const hosts = normalizeHosts(input.hosts);
    const transport = { allowHttp: input.allow_http === true, ports: normalizePorts(input.ports) };
    const vault = await this.writable(caller, scope);
    try {
      return view(
        await store.upsertSecret(
          this.deps.db,
          this.sealer(vault)(name, input.value, hosts, transport, writerOf(caller)),
        ),
      );
    } catch (err) {
      throw vaultGone(err);
    }
  }

  /** Deletes a secret; 404 when the vault holds none of that name. */
  async remove(caller: Caller, scope: VaultScope, name: string): Promise<void> {
    this.assertWritable();
    this.deps.access.requireUser(caller, 'standard');
    checkName(name);
    const vault =
      scope.kind === 'workspace'
        ? await store.workspaceVault(this.deps.db, caller.workspaceId)
        : await this.ownVault(await this.intern(caller, scope.internId, true));
    if (!vault || !(await store.deleteSecret(this.deps.db, vault.id, name))) throw notFound(`Secret ${name}`);
  }

  /**
   * Copies workspace secrets (value, hosts, allow_http and ports) into an intern's own vault, replacing same names.
   * All or nothing: a missing name is a 404, a legacy source without hosts a 409, and then nothing
   * is written. Values are sealed again for the intern's vault; fingerprints use its key and the
   * source's fingerprint.
   */
  async copyToIntern(caller: Caller, internId: string, names: string[]): Promise<VaultSecretView[]> {
    this.assertWritable();
    this.deps.access.requireUser(caller, 'standard');
    if (names.length < 1 || names.length > COPY_MAX) {
      throw badRequest(`names must list 1 to ${COPY_MAX} secret names`);
    }
    for (const [i, n] of names.entries()) checkName(n, `names[${i}]`);
    const repeated = names.find((n, i) => names.indexOf(n) !== i);
    if (repeated !== undefined) throw badRequest(`names lists ${repeated} more than once`);

    const target = await this.writable(caller, { kind: 'intern', internId });
    const source = await store.workspaceVault(this.deps.db, caller.workspaceId);
    const seal = this.sealer(target);
    const { masterKey } = this.deps;
    try {
      return await this.deps.db.transaction().execute(async (tx) => {
        const rows = source ? await store.secretsNamed(tx, source.id, names) : [];
        const byName = new Map(rows.map((r) => [r.name, r]));
        const missing = names.filter((n) => !byName.has(n));
        if (missing.length > 0) {
          throw new ApiError(
            404,
            `Workspace secret${missing.length > 1 ? 's' : ''} not found: ${missing.join(', ')}`,
          );
        }
        const legacy = rows.filter((r) => r.hosts_json === null).map((r) => r.name);
        if (legacy.length > 0) {
          throw conflict(
            `Workspace secret${legacy.length > 1 ? 's' : ''} ${legacy.join(', ')} ${legacy.length > 1 ? 'have' : 'has'} no hosts (stored before host binding); write ${legacy.length > 1 ? 'them' : 'it'} again with hosts before copying`,
          );
        }
        const copied: VaultSecretView[] = [];
        for (const name of names) {
          const row = byName.get(name) as (typeof rows)[number];
          const value = decrypt(masterKey, row.value_sealed, secretAad(row.vault_id, name));
          const hosts = fromJsonList(row.hosts_json) ?? [];
          // Keyed to the source's fingerprint (and so to whoever wrote the source), not to the
          // copier: else a copier could copy a secret, write guesses over it and compare.
          const origin = copiedFrom(row.fingerprint ?? '');
          copied.push(view(await store.upsertSecret(tx, seal(name, value, hosts, transportOf(row), origin))));
        }
        return copied;
      });
    } catch (err) {
      throw vaultGone(err);
    }
  }

  /** A new vault row with its own HMAC key, sealed under the master key. */
  private newVault(id: string, workspaceId: string, ownerInternId: string | null): store.VaultRow {
    return {
      id,
      workspace_id: workspaceId,
      owner_intern_id: ownerInternId,
      hmac_key_sealed: encrypt(this.deps.masterKey, randomBytes(32).toString('base64'), vaultKeyAad(id)),
      created_at: nowIso(),
    };
  }

  /**
   * The workspace's vault, created on first write. Its id derives from the workspace id, so two
   * first writes at once (on any node) meet on the primary key instead of making two vaults.
   */
  private async ensureWorkspaceVault(workspaceId: string): Promise<store.VaultRow> {
    const existing = await store.workspaceVault(this.deps.db, workspaceId);
    if (existing) return existing;
    try {
      await store.insertVault(
        this.deps.db,
        this.newVault(derivedId('workspace-vault', workspaceId), workspaceId, null),
      );
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
    }
    const created = await store.workspaceVault(this.deps.db, workspaceId);
    if (!created) throw new Error('the workspace vault could not be created');
    return created;
  }

  /**
   * An intern of the caller's workspace that the caller may read (or, `act`, write the vault of):
   * 400 for a malformed id, 404 for any other intern, another member's included.
   */
  private async intern(caller: Caller, internId: string, act: boolean) {
    if (!isUuid(internId)) throw badRequest('internId must be a UUID');
    const row = await store.findIntern(this.deps.db, internId.toLowerCase());
    if (!row || row.workspace_id !== caller.workspaceId) throw notFound('Intern');
    const { access } = this.deps;
    if (!(await (act ? access.mayAct(caller, row) : access.mayRead(caller, row)))) throw notFound('Intern');
    return row;
  }

  /** The intern's own private vault (never the one it borrows), if it has one. */
  private async ownVault(intern: { id: string; workspace_id: string; vault_id: string | null }) {
    if (intern.vault_id === null) return undefined;
    const vault = await store.findVault(this.deps.db, intern.workspace_id, intern.vault_id);
    return vault?.owner_intern_id === intern.id ? vault : undefined;
  }

  /** The vault a read (or delete) acts on; undefined when it does not exist yet. */
  private async readable(caller: Caller, scope: VaultScope) {
    if (scope.kind === 'workspace') return store.workspaceVault(this.deps.db, caller.workspaceId);
    return this.ownVault(await this.intern(caller, scope.internId, false));
  }

  /** The vault a write acts on: the workspace's (made if needed), or a live intern's own (409 otherwise). */
  private async writable(caller: Caller, scope: VaultScope): Promise<store.VaultRow> {
    if (scope.kind === 'workspace') return this.ensureWorkspaceVault(caller.workspaceId);
    const intern = await this.intern(caller, scope.internId, true);
    if (CLOSING.has(intern.status)) {
      throw conflict(`The intern is ${intern.status}: its vault can no longer be written`);
    }
    const vault = await this.ownVault(intern);
    if (!vault) throw conflict('The intern has no private vault yet; retry once its creation has finished');
    return vault;
  }

  /** Seals values written into `vault`: AES-GCM bound to vault and name, fingerprint under the vault's key. */
  private sealer(vault: store.VaultRow) {
    const key = Buffer.from(
      decrypt(this.deps.masterKey, vault.hmac_key_sealed, vaultKeyAad(vault.id)),
      'base64',
    );
    return (
      name: string,
      value: string,
      hosts: string[],
      t: SecretTransport,
      writer: string,
    ): store.SecretWrite => ({
      vault_id: vault.id,
      name,
      value_sealed: encrypt(this.deps.masterKey, value, secretAad(vault.id, name)),
      hosts_json: toJsonList(hosts) as string,
      allow_http: t.allowHttp ? 1 : 0,
      ports_json: t.ports.length > 0 ? toJsonList(t.ports) : null,
      fingerprint: fingerprintOf(key, name, writer, value),
      at: nowIso(),
    });
  }
}
