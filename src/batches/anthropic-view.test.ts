import { describe, expect, it } from 'vitest';
import {
  fromMessageBatchId,
  processingStatus,
  resultLine,
  toMessageBatch,
  toMessageBatchId,
} from './anthropic-view.js';
import { closingErrors, resultError } from './model.js';
import type { BatchRow, ResultRow } from './store.js';

const row = (r: Partial<ResultRow>): ResultRow => ({
  idx: 0,
  custom_id: 'c',
  status_code: null,
  generation_id: null,
  response_body: null,
  error_json: null,
  ...r,
});
const line = (r: Partial<ResultRow>) => JSON.parse(resultLine(row(r)));

describe('Message Batches view', () => {
  it('maps ids both ways, and nothing else', () => {
    expect(toMessageBatchId('batch_0123abcd')).toBe('msgbatch_0123abcd');
    expect(fromMessageBatchId('msgbatch_0123abcd')).toBe('batch_0123abcd');
    for (const id of ['batch_0123', 'msgbatch_', 'msgbatch_../x', 'msgbatch_ZZ'])
      expect(fromMessageBatchId(id)).toBeNull();
  });

  it("maps the batch's states to processing_status", () => {
    expect(['validating', 'in_progress', 'finalizing'].map((s) => processingStatus(s as never))).toEqual([
      'in_progress',
      'in_progress',
      'in_progress',
    ]);
    expect(processingStatus('cancelling')).toBe('canceling');
    for (const s of ['completed', 'failed', 'expired', 'cancelled'] as const)
      expect(processingStatus(s)).toBe('ended');
  });

  it('writes each kind of result line as Anthropic does', () => {
    const message = { id: 'msg_1', type: 'message', content: [{ type: 'text', text: 'hi' }] };
    expect(line({ response_body: JSON.stringify(message) })).toEqual({
      custom_id: 'c',
      result: { type: 'succeeded', message },
    });
    expect(line({ error_json: JSON.stringify(closingErrors.cancelled()) }).result).toEqual({
      type: 'canceled',
    });
    expect(line({ error_json: JSON.stringify(closingErrors.expired()) }).result).toEqual({ type: 'expired' });
    const errored = (status: number) =>
      line({ error_json: JSON.stringify(resultError(status, 'why')) }).result;
    expect(errored(402)).toEqual({
      type: 'errored',
      error: { type: 'error', error: { type: 'billing_error', message: 'why' }, request_id: null },
    });
    expect(errored(403).error.error.type).toBe('permission_error');
    expect(errored(429).error.error.type).toBe('rate_limit_error');
    expect(errored(502).error.error.type).toBe('api_error');
    expect(
      line({ error_json: JSON.stringify(closingErrors.failed('key disabled')) }).result.error.error,
    ).toEqual({
      type: 'api_error',
      message: 'The batch failed before this request ran: key disabled',
    });
  });

  it('counts a batch as Anthropic does, and shows results_url only once ended', () => {
    const base = {
      id: 'batch_00aa',
      request_count: 10,
      completed_count: 4,
      failed_count: 3,
      created_at: 1_800_000_000,
      expires_at: 1_800_086_400,
      cancelling_at: 1_800_000_060,
      finalized_at: null,
    } as BatchRow;
    const url = (id: string) => `https://gw.example.com/api/v1/messages/batches/${id}/results`;
    const running = toMessageBatch({ ...base, status: 'cancelling' }, { canceled: 2, expired: 0 }, url);
    expect(running).toMatchObject({
      id: 'msgbatch_00aa',
      processing_status: 'canceling',
      request_counts: { processing: 3, succeeded: 4, errored: 1, canceled: 2, expired: 0 },
      created_at: '2027-01-15T08:00:00.000Z',
      cancel_initiated_at: '2027-01-15T08:01:00.000Z',
      ended_at: null,
      results_url: null,
    });
    const ended = toMessageBatch(
      { ...base, status: 'cancelled', failed_count: 6, finalized_at: 1_800_000_120 },
      { canceled: 5, expired: 0 },
      url,
    );
    expect(ended).toMatchObject({
      processing_status: 'ended',
      ended_at: '2027-01-15T08:02:00.000Z',
      results_url: url('msgbatch_00aa'),
    });
  });
});
