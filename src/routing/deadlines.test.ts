import { describe, expect, it } from 'vitest';
import { upstreamDeadlines } from './deadlines.js';

describe('upstream deadlines', () => {
  it('default to 10 minutes an attempt (the official clients’ wait) and 5 minutes of stream silence', () => {
    expect(upstreamDeadlines({})).toEqual({ upstreamTimeoutMs: 600_000, streamIdleTimeoutMs: 300_000 });
    expect(
      upstreamDeadlines({ GATEHOUSE_UPSTREAM_TIMEOUT_MS: '', GATEHOUSE_STREAM_IDLE_TIMEOUT_MS: '' }),
    ).toEqual({ upstreamTimeoutMs: 600_000, streamIdleTimeoutMs: 300_000 });
  });

  it('keep the default idle timeout within a shorter attempt deadline', () => {
    expect(upstreamDeadlines({ GATEHOUSE_UPSTREAM_TIMEOUT_MS: '2000' })).toEqual({
      upstreamTimeoutMs: 2_000,
      streamIdleTimeoutMs: 2_000,
    });
    // A longer deadline leaves the idle default as it is.
    expect(upstreamDeadlines({ GATEHOUSE_UPSTREAM_TIMEOUT_MS: '900000' })).toEqual({
      upstreamTimeoutMs: 900_000,
      streamIdleTimeoutMs: 300_000,
    });
  });

  it('take an idle timeout that is set as it is, shorter or longer than the deadline', () => {
    expect(
      upstreamDeadlines({ GATEHOUSE_UPSTREAM_TIMEOUT_MS: '2000', GATEHOUSE_STREAM_IDLE_TIMEOUT_MS: '500' }),
    ).toEqual({ upstreamTimeoutMs: 2_000, streamIdleTimeoutMs: 500 });
    expect(
      upstreamDeadlines({
        GATEHOUSE_UPSTREAM_TIMEOUT_MS: '30000',
        GATEHOUSE_STREAM_IDLE_TIMEOUT_MS: '120000',
      }),
    ).toEqual({ upstreamTimeoutMs: 30_000, streamIdleTimeoutMs: 120_000 });
  });

  it('refuse what is not a whole number of milliseconds, 0 included', () => {
    for (const bad of ['0', '-1', '1.5', 'ten']) {
      expect(() => upstreamDeadlines({ GATEHOUSE_UPSTREAM_TIMEOUT_MS: bad })).toThrow(
        /GATEHOUSE_UPSTREAM_TIMEOUT_MS/,
      );
      expect(() => upstreamDeadlines({ GATEHOUSE_STREAM_IDLE_TIMEOUT_MS: bad })).toThrow(
        /GATEHOUSE_STREAM_IDLE_TIMEOUT_MS/,
      );
    }
  });
});
