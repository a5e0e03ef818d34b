/**
 * The provisioner: what starts, stops and destroys interns' runtimes. The lifecycle service drives
 * statuses and progress; a provisioner only does the work of each step. The default is
 * LocalProvisioner (local-provisioner.ts): one child process per intern on this machine.
 */

/** What a provisioner needs to know to boot an intern. */
export interface ProvisionTarget {
  id: string;
  name: string;
  workspaceId: string;
  hostname: string;
  /** The resolved model slug the runtime runs (intern.model ?? workspace default ?? configured default). */
  model: string;
  instructions: string | null;
}

/** How the gateway reaches a running runtime: loopback URL and the token the runtime requires. */
export interface RuntimeEndpoint {
  url: string;
  token: string;
}

/** A step failure whose message is safe to show as `last_failure_message`. */
export class ProvisionError extends Error {
  override name = 'ProvisionError';
}

export interface Provisioner {
  /** Labels of the provisioning steps, in order (`progress.total_steps` is their count). */
  readonly steps: readonly string[];
  /**
   * Runs step `index` (0-based) for the target. Idempotent: a provisioning interrupted by a crash
   * re-runs from its first step. Throws ProvisionError (message shown to the user) on failure.
   */
  runStep(target: ProvisionTarget, index: number, signal: AbortSignal): Promise<void>;
  /** Stops the intern's runtime if it runs (suspend); its working directory is kept. */
  stop(internId: string): Promise<void>;
  /**
   * Stops the runtime and removes its working directory: archived first (under
   * `<runtimeDir>/archive/`) unless `discard`; throws ProvisionError when archiving fails.
   */
  destroy(internId: string, opts: { discard: boolean }): Promise<void>;
  /** Runtimes this node runs or is starting (GATEHOUSE_INTERNS_RUNTIMES_MAX caps them). */
  runtimeCount(): number;
  /** Where the intern's runtime listens, or null when it is not running on this node. */
  endpoint(internId: string): RuntimeEndpoint | null;
  /** The runtime (intern id) a callback token belongs to, or null. */
  internOfToken(token: string): string | null;
  /** The intern whose runtime serves this hostname on this node, or null (host-based proxying). */
  internOfHostname(hostname: string): string | null;
  /** Subscribes to runtimes exiting unasked (crash): the service marks the intern `failed`. */
  onExit(listener: (internId: string, message: string) => void): void;
  /** The gateway's own loopback URL, known once it listens (runtimes call back through it). */
  setGatewayUrl(url: string): void;
  /** Stops every runtime (gateway shutdown); statuses are left as they are for the next boot. */
  close(): Promise<void>;
}
