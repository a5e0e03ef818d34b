import { describe, expect, it } from 'vitest';
import { derivedExpiresAt, parseOutputExpiry } from './openai-batch.js';

describe('output_expires_after', () => {
  it('takes {anchor: created_at, seconds} from an hour to 30 days and returns the seconds', () => {
    expect(parseOutputExpiry({ anchor: 'created_at', seconds: 3600 })).toBe(3600);
    expect(parseOutputExpiry({ anchor: 'created_at', seconds: 2_592_000 })).toBe(2_592_000);
    for (const bad of [
      null,
      'x',
      { anchor: 'created_at' },
      { anchor: 'finalized_at', seconds: 3600 },
      { anchor: 'created_at', seconds: 3599 },
      { anchor: 'created_at', seconds: 2_592_001 },
      { anchor: 'created_at', seconds: 3600.5 },
      { anchor: 'created_at', seconds: '3600' },
    ])
      expect(() => parseOutputExpiry(bad)).toThrow(/output_expires_after must be/);
  });

  it('dates the output files from their creation (the batch end); none without the setting', () => {
    expect(derivedExpiresAt({ finalized_at: 1000, output_expires_after_s: 3600 })).toBe(4600);
    expect(derivedExpiresAt({ finalized_at: 1000, output_expires_after_s: null })).toBeNull();
    expect(derivedExpiresAt({ finalized_at: null, output_expires_after_s: 3600 })).toBeNull();
  });
});
