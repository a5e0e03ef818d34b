import { describe, expect, it } from 'vitest';
import { capContent } from './content-cap.js';

const bytes = (v: unknown) => Buffer.byteLength(String(v), 'utf8');

describe('capContent', () => {
  const small = { input: { messages: [{ role: 'user', content: 'hi' }] }, output: { completion: 'hello' } };

  it('leaves content within the cap as it is', () => {
    expect(capContent(small, 1024)).toBe(small);
    const big = { input: { prompt: 'x'.repeat(5000) }, output: { completion: 'y'.repeat(5000) } };
    expect(capContent(big, 0)).toBe(big); // 0: no cap
  });

  it('cuts a larger field to the cap, on a character boundary, with a marker giving its size', () => {
    // Three-byte characters: a cut at an arbitrary byte would split one.
    const text = '€'.repeat(3000);
    const json = JSON.stringify({ prompt: text });
    const capped = capContent({ input: { prompt: text }, output: small.output }, 1024);
    expect(capped.truncated).toEqual(['input']);
    expect(capped.output).toEqual(small.output);
    const input = capped.input as string;
    expect(typeof input).toBe('string');
    expect(bytes(input)).toBeLessThanOrEqual(1024);
    expect(bytes(input)).toBeGreaterThanOrEqual(1024 - 2); // at most a split character short
    expect(input).not.toContain('\ufffd');
    expect(input.endsWith(`…[truncated by Gatehouse: ${Buffer.byteLength(json)} bytes]`)).toBe(true);
    expect(json.startsWith(input.slice(0, input.indexOf('…[truncated')))).toBe(true);
  });

  it('caps each field on its own', () => {
    const capped = capContent(
      { input: { prompt: 'a'.repeat(2000) }, output: { completion: 'b'.repeat(2000) } },
      1024,
    );
    expect(capped.truncated).toEqual(['input', 'output']);
    expect(bytes(capped.input)).toBeLessThanOrEqual(1024);
    expect(bytes(capped.output)).toBeLessThanOrEqual(1024);
  });

  it('is 64 KiB unless GATEHOUSE_EXPORT_CONTENT_MAX_BYTES says otherwise (0: none; below 1 KiB refused)', async () => {
    const { loadConfig } = await import('../config.js');
    const env = (v?: string) => ({
      GATEHOUSE_MASTER_KEY: 'a'.repeat(64),
      ...(v === undefined ? {} : { GATEHOUSE_EXPORT_CONTENT_MAX_BYTES: v }),
    });
    expect(loadConfig(env()).exportContentMaxBytes).toBe(65_536);
    expect(loadConfig(env('0')).exportContentMaxBytes).toBe(0);
    expect(loadConfig(env('2048')).exportContentMaxBytes).toBe(2048);
    expect(() => loadConfig(env('100'))).toThrow(/at least 1024/);
  });
});
