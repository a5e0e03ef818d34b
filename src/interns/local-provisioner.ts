import type { InternsConfig } from '../config.js';
import type { Provisioner, ProvisionTarget, RuntimeEndpoint } from './provisioner.js';

/** One child process per intern on this machine, each with its own working directory. */
export class LocalProvisioner implements Provisioner {
  readonly steps = ['Preparing working directory', 'Starting runtime', 'Checking health'] as const;

  constructor(readonly config: InternsConfig) {}

  async runStep(_target: ProvisionTarget, _index: number, _signal: AbortSignal): Promise<void> {
    throw new Error('LocalProvisioner.runStep: not implemented yet');
  }
  async stop(_internId: string): Promise<void> {}
  async destroy(_internId: string, _opts: { discard: boolean }): Promise<void> {}
  endpoint(_internId: string): RuntimeEndpoint | null {
    return null;
  }
  internOfToken(_token: string): string | null {
    return null;
  }
  internOfHostname(_hostname: string): string | null {
    return null;
  }
  onExit(_listener: (internId: string, message: string) => void): void {}
  setGatewayUrl(_url: string): void {}
  async close(): Promise<void> {}
}
