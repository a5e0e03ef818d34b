import type { Static } from '@sinclair/typebox';
import type { Caller } from '../accounts/caller.js';
import { isUniqueViolation } from '../db/columns.js';
import type { Db } from '../db/connection.js';
import { ApiError, badRequest, conflict, notFound } from '../lib/errors.js';
import type { Page } from '../server/schemas.js';
import {
  applied,
  type PresetConfig,
  presetRefOf,
  type Saved,
  type Skin,
  SLUG,
  savedFrom,
  withoutRef,
} from './config.js';
import type { Preset, PresetVersion } from './schemas.js';
import * as store from './store.js';

/** Presets a workspace may hold, and versions kept of each (older ones are deleted on save). */
export const MAX_PRESETS = 500;
export const KEPT_VERSIONS = 100;
/** A saved configuration and system prompt are request settings, not documents. */
const MAX_CONFIG_BYTES = 64 * 1024;
const MAX_SYSTEM_PROMPT_CHARS = 200_000;

type Body = Record<string, unknown>;

/** A preset and a version as the API shows them (OpenRouter's `Preset` and `PresetDesignatedVersion`). */
type PresetView = Static<typeof Preset>;
type VersionView = Static<typeof PresetVersion>;

const presetView = (p: store.PresetRow): PresetView => ({
  id: p.id,
  slug: p.slug,
  name: p.name,
  description: p.description,
  status: p.status,
  designated_version_id: p.designated_version_id,
  creator_user_id: p.creator_user_id,
  workspace_id: p.workspace_id,
  created_at: p.created_at,
  updated_at: p.updated_at,
  status_updated_at: p.status_updated_at,
});

// A version is never edited: its update time is its creation.
const versionView = (v: store.PresetVersionRow): VersionView => ({
  id: v.id,
  preset_id: v.preset_id,
  version: Number(v.version),
  config: JSON.parse(v.config_json) as PresetConfig,
  system_prompt: v.system_prompt,
  creator_id: v.creator_id,
  created_at: v.created_at,
  updated_at: v.created_at,
});

const scopeOf = (caller: Caller): store.Scope => ({
  organizationId: caller.organizationId,
  workspaceId: caller.workspaceId,
});

const savedOf = (v: store.PresetVersionRow): Saved => ({
  config: JSON.parse(v.config_json) as PresetConfig,
  systemPrompt: v.system_prompt,
});

function checkSlug(slug: string): void {
  if (!SLUG.test(slug))
    throw badRequest(
      "A preset slug has letters, digits, '-', '_' and '.', starts with a letter or digit, at most 64",
    );
}

/**
 * Presets: a workspace's named request configurations, saved from an inference body (each save a
 * new version, the newest designated) and applied to the bodies that name them.
 */
export class PresetsService {
  constructor(private readonly db: Db) {}

  async list(caller: Caller, page: Page) {
    const scope = scopeOf(caller);
    const [rows, total] = await Promise.all([
      store.listPresets(this.db, scope, page.offset, page.limit),
      store.countPresets(this.db, scope),
    ]);
    return { data: rows.map(presetView), total_count: total };
  }

  async get(caller: Caller, slug: string) {
    const found = await store.findWithVersion(this.db, scopeOf(caller), slug);
    if (!found) throw notFound('Preset');
    const { version, ...preset } = found;
    return { data: { ...presetView(preset), designated_version: version ? versionView(version) : null } };
  }

  async versions(caller: Caller, slug: string, page: Page) {
    const preset = await store.findPreset(this.db, scopeOf(caller), slug);
    if (!preset) throw notFound('Preset');
    const [rows, total] = await Promise.all([
      store.listVersions(this.db, preset.id, page.offset, page.limit),
      store.countVersions(this.db, preset.id),
    ]);
    return { data: rows.map(versionView), total_count: total };
  }

  async version(caller: Caller, slug: string, version: string) {
    if (!/^[1-9]\d{0,8}$/.test(version)) throw badRequest('`version` must be a positive integer');
    const preset = await store.findPreset(this.db, scopeOf(caller), slug);
    const row = preset && (await store.findVersion(this.db, preset.id, Number(version)));
    if (!row) throw notFound('Preset version');
    return { data: versionView(row) };
  }

  /** Saves what `body` (in `skin`'s format) holds of a preset as the preset's new version. */
  async save(caller: Caller, slug: string, skin: Skin, body: Body) {
    checkSlug(slug);
    const saved = savedFrom(skin, body);
    // A call completes from one preset: a preset naming another would be a model id no catalog has.
    if (presetRefOf(saved.config))
      throw badRequest('A preset cannot name another preset: give it a model id (`model`, `models`)');
    const configJson = JSON.stringify(saved.config);
    if (Buffer.byteLength(configJson) > MAX_CONFIG_BYTES)
      throw badRequest(`A preset's configuration is at most ${MAX_CONFIG_BYTES / 1024} KiB of JSON`);
    if ((saved.systemPrompt?.length ?? 0) > MAX_SYSTEM_PROMPT_CHARS)
      throw badRequest(`A preset's system prompt is at most ${MAX_SYSTEM_PROMPT_CHARS} characters`);
    const scope = scopeOf(caller);
    if (
      !(await store.findPreset(this.db, scope, slug)) &&
      (await store.countPresets(this.db, scope)) >= MAX_PRESETS
    )
      throw conflict(`A workspace holds at most ${MAX_PRESETS} presets; delete one first`);
    const version = {
      slug,
      configJson,
      systemPrompt: saved.systemPrompt,
      userId: caller.userId,
      creatorId: caller.userId ?? caller.keyHash,
      now: new Date().toISOString(),
    };
    // Two first saves of one slug at once: the second meets the first's row on the unique index
    // and, run again, saves the next version of it.
    for (let attempt = 1; ; attempt++) {
      try {
        await store.saveVersion(this.db, scope, version, KEPT_VERSIONS);
        break;
      } catch (err) {
        if (!isUniqueViolation(err) || attempt === 3) throw err;
      }
    }
    return this.get(caller, slug);
  }

  async delete(caller: Caller, slug: string) {
    if (!(await store.deletePreset(this.db, scopeOf(caller), slug))) throw notFound('Preset');
    return { deleted: true as const };
  }

  /**
   * The body a call runs with when it names a preset (`@preset/<slug>`, `<model>@preset/<slug>` or
   * `preset`): completed from the preset's designated version, the reference taken out. Null when
   * the body names no preset (the common case: no database read). An unknown preset is a 404.
   * `routingOnly`: the preset's model, provider preferences and system prompt only (config.ts).
   */
  async resolve(
    caller: Caller,
    skin: Skin,
    body: Body,
    routingOnly = false,
  ): Promise<{ body: Body; presetId: string } | null> {
    const ref = presetRefOf(body);
    if (!ref) return null;
    const found = await store.findWithVersion(this.db, scopeOf(caller), ref.slug);
    if (!found?.version || found.status !== 'active')
      throw new ApiError(404, `Preset ${ref.slug} not found in this workspace`);
    const out = applied(skin, withoutRef(body, ref), savedOf(found.version), routingOnly);
    if (out.model === undefined && out.models === undefined)
      throw badRequest(
        `Preset ${ref.slug} names no model: name one in the request (\`model@preset/${ref.slug}\`)`,
      );
    return { body: out, presetId: found.id };
  }
}
