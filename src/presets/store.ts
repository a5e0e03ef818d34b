import { randomUUID } from 'node:crypto';
import type { Db } from '../db/connection.js';
import type { PresetsTable, PresetVersionsTable } from '../db/schema.js';

/** SQL of presets and their versions; every read and write is within one workspace. */

export type PresetRow = PresetsTable;
export type PresetVersionRow = PresetVersionsTable;

export interface Scope {
  organizationId: string;
  workspaceId: string;
}

/** A preset with its designated version (null when it has none). */
export type PresetWithVersion = PresetRow & { version: PresetVersionRow | null };

export interface NewVersion {
  slug: string;
  configJson: string;
  systemPrompt: string | null;
  /** The user saving it, when the key has one (the preset's creator on its first save). */
  userId: string | null;
  /** The user, else the key's hash. */
  creatorId: string;
  now: string;
}

export async function countPresets(db: Db, scope: Scope): Promise<number> {
  const row = await db
    .selectFrom('presets')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('workspace_id', '=', scope.workspaceId)
    .where('organization_id', '=', scope.organizationId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A page of the workspace's presets, most recently updated first. */
export async function listPresets(db: Db, scope: Scope, offset: number, limit: number): Promise<PresetRow[]> {
  return db
    .selectFrom('presets')
    .selectAll()
    .where('workspace_id', '=', scope.workspaceId)
    .where('organization_id', '=', scope.organizationId)
    .orderBy('updated_at', 'desc')
    .orderBy('id')
    .offset(offset)
    .limit(limit)
    .execute();
}

export async function findPreset(db: Db, scope: Scope, slug: string): Promise<PresetRow | undefined> {
  return db
    .selectFrom('presets')
    .selectAll()
    .where('workspace_id', '=', scope.workspaceId)
    .where('organization_id', '=', scope.organizationId)
    .where('slug', '=', slug)
    .executeTakeFirst();
}

/** The preset named `slug` and its designated version, in one read (the inference path's). */
export async function findWithVersion(
  db: Db,
  scope: Scope,
  slug: string,
): Promise<PresetWithVersion | undefined> {
  const preset = await findPreset(db, scope, slug);
  if (!preset) return undefined;
  const version = preset.designated_version_id
    ? ((await db
        .selectFrom('preset_versions')
        .selectAll()
        .where('id', '=', preset.designated_version_id)
        .executeTakeFirst()) ?? null)
    : null;
  return { ...preset, version };
}

export async function countVersions(db: Db, presetId: string): Promise<number> {
  const row = await db
    .selectFrom('preset_versions')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('preset_id', '=', presetId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A page of a preset's versions, oldest first. */
export async function listVersions(
  db: Db,
  presetId: string,
  offset: number,
  limit: number,
): Promise<PresetVersionRow[]> {
  return db
    .selectFrom('preset_versions')
    .selectAll()
    .where('preset_id', '=', presetId)
    .orderBy('version')
    .offset(offset)
    .limit(limit)
    .execute();
}

export async function findVersion(
  db: Db,
  presetId: string,
  version: number,
): Promise<PresetVersionRow | undefined> {
  return db
    .selectFrom('preset_versions')
    .selectAll()
    .where('preset_id', '=', presetId)
    .where('version', '=', version)
    .executeTakeFirst();
}

/**
 * Saves a new version of the preset `v.slug` (creating the preset on its first save) and
 * designates it, in one transaction; versions beyond the newest `keep` are deleted. Two saves
 * racing on one slug meet on a unique index: the loser throws, and the caller retries.
 */
export async function saveVersion(db: Db, scope: Scope, v: NewVersion, keep: number): Promise<string> {
  return db.transaction().execute(async (tx) => {
    let preset = await tx
      .selectFrom('presets')
      .select(['id'])
      .where('workspace_id', '=', scope.workspaceId)
      .where('organization_id', '=', scope.organizationId)
      .where('slug', '=', v.slug)
      .executeTakeFirst();
    if (!preset) {
      preset = { id: randomUUID() };
      await tx
        .insertInto('presets')
        .values({
          id: preset.id,
          organization_id: scope.organizationId,
          workspace_id: scope.workspaceId,
          slug: v.slug,
          name: v.slug,
          description: null,
          status: 'active',
          designated_version_id: null,
          creator_user_id: v.userId,
          created_at: v.now,
          updated_at: v.now,
          status_updated_at: null,
        })
        .execute();
    }
    const last = await tx
      .selectFrom('preset_versions')
      .select((eb) => eb.fn.max<number | string | null>('version').as('n'))
      .where('preset_id', '=', preset.id)
      .executeTakeFirst();
    const version = Number(last?.n ?? 0) + 1;
    const id = randomUUID();
    await tx
      .insertInto('preset_versions')
      .values({
        id,
        preset_id: preset.id,
        version,
        config_json: v.configJson,
        system_prompt: v.systemPrompt,
        creator_id: v.creatorId,
        created_at: v.now,
      })
      .execute();
    await tx
      .updateTable('presets')
      .set({ designated_version_id: id, updated_at: v.now })
      .where('id', '=', preset.id)
      .execute();
    if (version > keep)
      await tx
        .deleteFrom('preset_versions')
        .where('preset_id', '=', preset.id)
        .where('version', '<=', version - keep)
        .execute();
    return preset.id;
  });
}

/** Deletes the preset named `slug` and its versions; false when there is none. */
export async function deletePreset(db: Db, scope: Scope, slug: string): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const preset = await tx
      .selectFrom('presets')
      .select(['id'])
      .where('workspace_id', '=', scope.workspaceId)
      .where('organization_id', '=', scope.organizationId)
      .where('slug', '=', slug)
      .executeTakeFirst();
    if (!preset) return false;
    // Explicitly, rather than by the cascade: SQLite enforces foreign keys only when asked to.
    await tx.deleteFrom('preset_versions').where('preset_id', '=', preset.id).execute();
    await tx.deleteFrom('presets').where('id', '=', preset.id).execute();
    return true;
  });
}
