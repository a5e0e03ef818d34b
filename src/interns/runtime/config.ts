import { readFileSync } from 'node:fs';

/**
 * What an intern's runtime is started with. The provisioner passes these (and nothing else of the
 * gateway's environment) as environment variables; the intern's name, model, instructions and
 * hostname are in a non-secret config file in the working directory.
 */
export const RUNTIME_ENV = {
  token: 'GATEHOUSE_RUNTIME_TOKEN',
  gatewayUrl: 'GATEHOUSE_RUNTIME_GATEWAY_URL',
  internId: 'GATEHOUSE_RUNTIME_INTERN_ID',
  model: 'GATEHOUSE_RUNTIME_MODEL',
  configFile: 'GATEHOUSE_RUNTIME_CONFIG',
  shell: 'GATEHOUSE_RUNTIME_SHELL',
  interactionTimeoutMs: 'GATEHOUSE_RUNTIME_INTERACTION_TIMEOUT_MS',
  maxSteps: 'GATEHOUSE_RUNTIME_MAX_STEPS',
} as const;

/** The config file's name inside the working directory (hidden from the intern's file tools). */
export const RUNTIME_CONFIG_FILE = '.runtime.json';
/** Sessions live in `<workdir>/.sessions/` (hidden from the intern's file tools). */
export const SESSIONS_DIR = '.sessions';

/** The non-secret file the provisioner writes for the runtime. */
export interface RuntimeFile {
  intern_id: string;
  name: string;
  model: string;
  instructions: string | null;
  hostname: string;
}

export interface RuntimeConfig {
  token: string;
  gatewayUrl: string;
  internId: string;
  name: string;
  model: string;
  instructions: string | null;
  hostname: string;
  /** The working directory (the process's cwd). */
  workdir: string;
  shell: boolean;
  interactionTimeoutMs: number;
  maxSteps: number;
}

const positiveInt = (v: string | undefined, fallback: number) => {
  const n = Number.parseInt(v ?? '', 10);
  return Number.isFinite(n) && n > 0 ? n : fallback;
};

/** Reads the runtime's config from its environment and config file; throws naming what is missing. */
export function runtimeConfigFromEnv(env: NodeJS.ProcessEnv, workdir: string): RuntimeConfig {
  const need = (name: string) => {
    const v = env[name];
    if (!v) throw new Error(`${name} is not set`);
    return v;
  };
  const file = JSON.parse(readFileSync(need(RUNTIME_ENV.configFile), 'utf8')) as RuntimeFile;
  return {
    token: need(RUNTIME_ENV.token),
    gatewayUrl: need(RUNTIME_ENV.gatewayUrl).replace(/\/+$/, ''),
    internId: need(RUNTIME_ENV.internId),
    name: file.name,
    model: env[RUNTIME_ENV.model] || file.model,
    instructions: file.instructions ?? null,
    hostname: file.hostname,
    workdir,
    shell: env[RUNTIME_ENV.shell] === 'on',
    interactionTimeoutMs: positiveInt(env[RUNTIME_ENV.interactionTimeoutMs], 300_000),
    maxSteps: positiveInt(env[RUNTIME_ENV.maxSteps], 20),
  };
}
