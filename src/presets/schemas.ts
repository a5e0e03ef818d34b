import { Type } from '@sinclair/typebox';
import { Nullable, StringEnum } from '../server/schemas.js';

/** Presets on the wire, as OpenRouter's API and its SDK shape them. */

const Str = Type.String();
const NStr = Nullable(Type.String());

export const Preset = Type.Object(
  {
    id: Str,
    slug: Str,
    name: Str,
    description: NStr,
    status: StringEnum(['active', 'disabled', 'archived']),
    designated_version_id: NStr,
    creator_user_id: NStr,
    workspace_id: NStr,
    created_at: Str,
    updated_at: Str,
    status_updated_at: NStr,
  },
  { title: 'Preset' },
);

export const PresetVersion = Type.Object(
  {
    id: Str,
    preset_id: Str,
    version: Type.Integer({ minimum: 1 }),
    config: Type.Object(
      {},
      {
        additionalProperties: true,
        description:
          'The request fields the preset sets (model, models, provider, sampling, `max_tokens` for the output limit, `stop`)',
      },
    ),
    system_prompt: NStr,
    creator_id: Type.String({ description: 'The user who saved it, else the hash of the key that did' }),
    created_at: Str,
    updated_at: Str,
  },
  { title: 'PresetVersion' },
);

export const PresetWithVersion = Type.Object(
  { ...Preset.properties, designated_version: Type.Union([PresetVersion, Type.Null()]) },
  { title: 'PresetWithDesignatedVersion' },
);

export const PresetList = Type.Object({ data: Type.Array(Preset), total_count: Type.Integer() });
export const PresetVersionList = Type.Object({
  data: Type.Array(PresetVersion),
  total_count: Type.Integer(),
});

export const SlugParams = Type.Object({ slug: Type.String({ minLength: 1, maxLength: 256 }) });
export const VersionParams = Type.Object({
  slug: Type.String({ minLength: 1, maxLength: 256 }),
  version: Type.String({ minLength: 1, maxLength: 32 }),
});
