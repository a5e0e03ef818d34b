import { isValidSpanId, isValidTraceId } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { PooledIdGenerator } from './id-generator.js';

describe('PooledIdGenerator (trace and span ids from the pooled CSPRNG)', () => {
  it('makes valid, distinct W3C ids across refills of the pool', () => {
    const ids = new PooledIdGenerator();
    const traces = new Set<string>();
    const spans = new Set<string>();
    // 4 KiB a refill: 2,000 of each draws 48 KB, a dozen refills.
    for (let i = 0; i < 2000; i++) {
      const t = ids.generateTraceId();
      const s = ids.generateSpanId();
      expect(isValidTraceId(t) && isValidSpanId(s)).toBe(true);
      traces.add(t);
      spans.add(s);
    }
    expect(traces.size).toBe(2000);
    expect(spans.size).toBe(2000);
  });
});
