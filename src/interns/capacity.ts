import type { InternsConfig } from '../config.js';
import type { Db } from '../db/connection.js';
import { codedError } from '../lib/errors.js';
import { InternErrorCode } from './model.js';
import type { Provisioner } from './provisioner.js';
import * as store from './store.js';

/**
 * Fair sharing of intern runtimes (each is a process of ~50 MB): before an intern is queued to
 * start, its organization must be under GATEHOUSE_INTERNS_RUNTIMES_PER_ORGANIZATION runtimes
 * running or starting, and this node under GATEHOUSE_INTERNS_RUNTIMES_MAX. Both refusals are 409
 * `runtime_limit_reached`. (The per-member cap, GATEHOUSE_INTERNS_PER_MEMBER, bounds interns at
 * create; the node cap is enforced again by the provisioner when it starts a runtime.)
 */
export async function assertRuntimeRoom(
  deps: { db: Db; config: InternsConfig; provisioner: Pick<Provisioner, 'runtimeCount'> },
  organizationId: string,
  internId?: string,
): Promise<void> {
  const { config } = deps;
  if ((await store.countLive(deps.db, organizationId, internId)) >= config.runtimesPerOrganization) {
    throw codedError(
      409,
      InternErrorCode.runtimeLimitReached,
      `Your organization already has ${config.runtimesPerOrganization} interns running or starting, the most allowed; suspend one first`,
    );
  }
  if (deps.provisioner.runtimeCount() >= config.runtimesMax) {
    throw codedError(
      409,
      InternErrorCode.runtimeLimitReached,
      `This gateway already runs ${config.runtimesMax} intern runtimes, the most it allows; suspend one or try later`,
    );
  }
}
