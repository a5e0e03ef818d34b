import type { IdGenerator } from '@opentelemetry/sdk-trace-node';
import { randomHex } from '../lib/random-pool.js';

const ZERO_SPAN = '0'.repeat(16);
const ZERO_TRACE = '0'.repeat(32);

/**
 * Trace and span ids from the process's pooled CSPRNG bytes (random-pool.ts): one slice of a
 * buffer filled 4 KiB at a time, where the SDK's RandomIdGenerator draws Math.random per 4 bytes.
 * An all-zero id is invalid in W3C Trace Context: drawn again (once in 2^64).
 */
export class PooledIdGenerator implements IdGenerator {
  generateTraceId(): string {
    let id = randomHex(16);
    while (id === ZERO_TRACE) id = randomHex(16);
    return id;
  }

  generateSpanId(): string {
    let id = randomHex(8);
    while (id === ZERO_SPAN) id = randomHex(8);
    return id;
  }
}
