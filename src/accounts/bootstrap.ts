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
}

/**
 * Makes sure a default organization, its default workspace, an owner user enrolled in the interns
 * programme and the two bootstrap keys exist. Idempotent: with GATEHOUSE_BOOTSTRAP_*_KEY set, exactly
 * those keys are the bootstrap keys (a changed value replaces the previous one); without them, keys
 * are generated on the first start only and returned so the caller can print them once.
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
  return { organizationId, ownerUserId, generated };
}
