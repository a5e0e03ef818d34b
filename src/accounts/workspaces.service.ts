import type { Db } from '../db/connection.js';
import { badRequest } from '../lib/errors.js';
import type { Caller } from './caller.js';
import * as store from './workspaces.store.js';

/** Workspaces of an organization. */
export class WorkspacesService {
  constructor(private readonly db: Db) {}

  /**
   * The workspace named by `ref` (UUID or slug) in the caller's organization, or the default
   * workspace when `ref` is omitted. An unknown or foreign workspace is a 400 (it is a parameter).
   */
  async resolve(caller: Pick<Caller, 'organizationId'>, ref?: string | null): Promise<store.WorkspaceRow> {
    if (ref === undefined || ref === null) {
      const ws = await store.findDefaultWorkspace(this.db, caller.organizationId);
      if (!ws) throw badRequest('The organization has no default workspace; pass workspace_id');
      return ws;
    }
    const ws = await store.findWorkspace(this.db, caller.organizationId, ref);
    if (!ws)
      throw badRequest(`workspace_id ${JSON.stringify(ref)} does not name a workspace of this organization`);
    return ws;
  }
}
