/**
 * `keys` mode for the media service running alone. Its own module so that `gatehouse media` loads
 * the database drivers and the accounts code only in that mode.
 */

import { KeysService } from '../accounts/keys.service.js';
import { OrganizationsService } from '../accounts/organizations.service.js';
import { WorkspaceWebhooks } from '../accounts/workspace-webhooks.js';
import { WorkspacesService } from '../accounts/workspaces.service.js';
import { type DbHandle, openDatabase } from '../db/connection.js';
import type { KeyAuthenticator } from './auth.js';
import { VideoJobStore } from './jobs/store.js';

/**
 * The gateway's keys from its database, for the media service running alone (`gatehouse media`
 * with GATEHOUSE_MEDIA_AUTH=keys): the same DATABASE_URL / data dir as the gateway. The database
 * must already be migrated (the gateway does that); this reads keys and keeps video jobs.
 */
export async function openKeyAuthenticator(
  databaseUrl: string,
  /** The gateway's, to sign video job events with the workspaces' secrets; null: they cannot be read. */
  masterKey: Buffer | null,
): Promise<{
  keys: KeyAuthenticator;
  videoJobs: VideoJobStore;
  videoWebhooks: WorkspaceWebhooks;
  close(): Promise<void>;
}> {
  let handle: DbHandle;
  try {
    handle = openDatabase(databaseUrl);
  } catch (err) {
    throw new Error(
      `GATEHOUSE_MEDIA_AUTH=keys: cannot open the gateway's database: ${(err as Error).message}`,
    );
  }
  const { db } = handle;
  try {
    await db.selectFrom('api_keys').select('hash').limit(1).execute();
  } catch (err) {
    await handle.close();
    throw new Error(
      `GATEHOUSE_MEDIA_AUTH=keys: the gateway's database has no keys (run the gateway or \`gatehouse migrate\` first): ${(err as Error).message}`,
    );
  }
  // authenticate() reads only the keys table; the usage service (credits/, which media may not
  // import) is needed for key views, never here.
  const noUsage = new Proxy(
    {},
    {
      get() {
        throw new Error('media: key usage is not available');
      },
    },
  ) as ConstructorParameters<typeof KeysService>[3];
  const workspaces = new WorkspacesService(db);
  const keys = new KeysService(db, workspaces, new OrganizationsService(db), noUsage);
  // The video API's jobs live beside the keys, so every media process reads the same ones.
  return {
    keys,
    videoJobs: new VideoJobStore(db),
    videoWebhooks: new WorkspaceWebhooks(db, masterKey, workspaces),
    close: () => handle.close(),
  };
}
