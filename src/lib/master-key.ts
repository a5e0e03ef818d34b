import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

type Env = Record<string, string | undefined>;

/**
 * The master key comes from GATEHOUSE_MASTER_KEY (64 hex chars or base64 of 32 bytes); when unset
 * it is generated once into `<dataDir>/master.key` (mode 0600) and read from there afterwards.
 */
export function loadMasterKey(env: Env, dataDir: string): Buffer {
  const existing = readMasterKey(env, dataDir);
  if (existing) return existing;
  const file = join(dataDir, 'master.key');
  mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32);
  writeFileSync(file, `${key.toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return key;
}

function parseMasterKey(raw: string): Buffer {
  const key = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (key.length !== 32)
    throw new Error('GATEHOUSE_MASTER_KEY must be 32 bytes (64 hex characters or base64)');
  return key;
}

/**
 * The master key as the gateway has it, never made here: for a process beside the gateway (the media
 * service alone) that reads what the gateway sealed. Null when there is none to read.
 */
export function readMasterKey(env: Env, dataDir: string): Buffer | null {
  const raw = env.GATEHOUSE_MASTER_KEY?.trim();
  if (raw) return parseMasterKey(raw);
  const file = join(dataDir, 'master.key');
  return existsSync(file) ? parseMasterKey(readFileSync(file, 'utf8').trim()) : null;
}
