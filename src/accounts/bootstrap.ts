import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Db } from '../db/connection.js';
import { exclusively } from '../db/lock.js';
import { sha256Hex } from '../lib/crypto.js';
import type { Services } from '../services.js';
import * as keysStore from './keys.store.js';

const SETTING_ORG = 'bootstrap.organization_id';
const SETTING_OWNER = 'bootstrap.owner_user_id';
const settingFor = (kind: 'management' | 'api') => `bootstrap.${kind}_key_hash`;

const getSetting = async (db: Db, name: string) =>
  (await db.selectFrom('settings').select('value').where('name', '=', name).executeTakeFirst())?.value ??
  null;

async function putSetting(db: Db, name: string, value: string) {
  const updated = await db.updateTable('settings').set({ value }).where('name', '=', name).executeTakeFirst();
  if (Number(updated.numUpdatedRows) === 0) await db.insertInto('settings').values({ name, value }).execute();
}

export interface BootstrapResult {
  organizationId: string;
  ownerUserId: string;
  /** Plaintext keys generated on this run (only on the first start without configured keys). */
  generated: { management?: string; api?: string };
  /** Where the generated keys were written (mode 0600), or null when none were generated. */
  keysFile: string | null;
}

/** The file in the data directory that receives generated bootstrap keys. */
export const BOOTSTRAP_KEYS_FILE = 'bootstrap-keys.env';

/**
 * Writes generated keys to `<dataDir>/bootstrap-keys.env`, readable by the operator only (0600),
 * as the GATEHOUSE_BOOTSTRAP_*_KEY settings that keep them (the file can be sourced). Never to
 * standard output, which carries the JSON log. A leftover file is removed first, so the keys are
 * never written into a file with a wider mode.
 */
function saveGeneratedKeys(dataDir: string, generated: BootstrapResult['generated']): string | null {
  if (!generated.management && !generated.api) return null;
  const file = join(dataDir, BOOTSTRAP_KEYS_FILE);
  const lines = [
    `# Keys Gatehouse generated for the default organization on ${new Date().toISOString()}.`,
    '# They are shown nowhere else: store them safely, then delete this file.',
  ];
  if (generated.management) lines.push(`GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY=${generated.management}`);
  if (generated.api) lines.push(`GATEHOUSE_BOOTSTRAP_API_KEY=${generated.api}`);
  mkdirSync(dataDir, { recursive: true });
  rmSync(file, { force: true });
  writeFileSync(file, `${lines.join('\n')}\n`, { mode: 0o600, flag: 'wx' });
  return file;
}

/**
 * Makes sure a default organization, its default workspace, an owner user enrolled in the interns
 * programme and the two bootstrap keys exist. Idempotent: with GATEHOUSE_BOOTSTRAP_*_KEY set, exactly
 * those keys are the bootstrap keys (a changed value replaces the previous one); without them, keys
 * are generated on the first start only, written to `<dataDir>/bootstrap-keys.env` (0600) and
 * returned; the caller tells the operator where the file is, never the keys.
 */
export function ensureBootstrap(services: Services): Promise<BootstrapResult> {
  // Gateways starting at once on an empty database would each create a default organization (or
  // crash on the other's duplicate key): one at a time, and the later ones find it done.
  return exclusively(services.db, services.dialect, 'gatehouse.bootstrap', () => bootstrap(services));
}

async function bootstrap(services: Services): Promise<BootstrapResult> {
  const { db, config, orgs, keys } = services;
  let organizationId = await getSetting(db, SETTING_ORG);
  let ownerUserId = await getSetting(db, SETTING_OWNER);
  const firstStart = organizationId === null;
  if (organizationId === null || ownerUserId === null) {
    const org = await orgs.create('Default Organization');
    const owner = await orgs.addUser({
      email: 'owner@gatehouse.local',
      organization_id: org.id,
      role: 'owner',
      interns_programme: true,
    });
    organizationId = org.id;
    ownerUserId = owner.id;
    await putSetting(db, SETTING_ORG, organizationId);
    await putSetting(db, SETTING_OWNER, ownerUserId);
  }

  const generated: BootstrapResult['generated'] = {};
  for (const kind of ['management', 'api'] as const) {
    const configured = kind === 'management' ? config.bootstrapManagementKey : config.bootstrapApiKey;
    const previous = await getSetting(db, settingFor(kind));
    if (configured) {
      const hash = sha256Hex(configured);
      if (!(await keysStore.findKey(db, hash))) {
        await keys.create(
          organizationId,
          {
            name: kind === 'management' ? 'Bootstrap management key' : 'Bootstrap API key',
            creator_user_id: ownerUserId,
          },
          { management: kind === 'management', secret: configured },
        );
      }
      if (previous && previous !== hash) {
        await keysStore.deleteKey(db, previous);
        keys.invalidate(previous);
      }
      await putSetting(db, settingFor(kind), hash);
    } else if (firstStart || previous === null) {
      const { row, key } = await keys.create(
        organizationId,
        {
          name: kind === 'management' ? 'Bootstrap management key' : 'Bootstrap API key',
          creator_user_id: ownerUserId,
        },
        { management: kind === 'management' },
      );
      await putSetting(db, settingFor(kind), row.hash);
      generated[kind] = key;
    }
  }
  return { organizationId, ownerUserId, generated, keysFile: saveGeneratedKeys(config.dataDir, generated) };
}
