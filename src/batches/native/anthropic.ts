import { ANTHROPIC_VERSION } from '../../providers/anthropic/wire.js';
import type { ProviderConfig } from '../../providers/types.js';
import {
  call,
  callJson,
  DOWNLOAD_TIMEOUT_MS,
  jsonLines,
  type NativeBatchApi,
  type NativeResult,
  type NativeStatus,
} from './api.js';

/**
 * Anthropic's Message Batches: `requests: [{custom_id, params}]`, polled until its
 * `processing_status` is `ended`; results as JSON Lines at its `results_url` (succeeded, errored,
 * canceled or expired per item).
 */
export class AnthropicBatches implements NativeBatchApi {
  constructor(private readonly config: ProviderConfig) {}

  private url(path: string): string {
    const base = this.config.baseUrl.replace(/\/+$/, '');
    return `${base}${/\/v1$/.test(base) ? '' : '/v1'}/messages/batches${path}`;
  }

  private headers(): Record<string, string> {
    const h: Record<string, string> = {
      'anthropic-version': ANTHROPIC_VERSION,
      ...this.config.headers,
      'content-type': 'application/json',
    };
    if (this.config.apiKey) h['x-api-key'] = this.config.apiKey;
    return h;
  }

  private get secrets() {
    return [this.config.apiKey];
  }

  async submit(lines: { customId: string; body: Record<string, unknown> }[]) {
    const batch = await callJson<{ id: string }>(
      this.url(''),
      {
        method: 'POST',
        headers: this.headers(),
        body: JSON.stringify({ requests: lines.map((l) => ({ custom_id: l.customId, params: l.body })) }),
      },
      this.secrets,
    );
    return batch.id;
  }

  private batch(id: string) {
    return callJson<{ id: string; processing_status: string; results_url?: string | null }>(
      this.url(`/${encodeURIComponent(id)}`),
      { method: 'GET', headers: this.headers() },
      this.secrets,
    );
  }

  async status(id: string): Promise<NativeStatus> {
    const b = await this.batch(id);
    // Per-item outcomes (errored, expired, canceled) are in the results; the batch itself just ends.
    return b.processing_status === 'ended' ? { state: 'ended', outcome: 'completed' } : { state: 'running' };
  }

  async *results(id: string): AsyncGenerator<NativeResult> {
    const b = await this.batch(id);
    if (!b.results_url) return;
    const res = await call(
      b.results_url,
      { method: 'GET', headers: this.headers(), timeoutMs: DOWNLOAD_TIMEOUT_MS },
      this.secrets,
    );
    for await (const raw of jsonLines(res)) {
      const line = raw as {
        custom_id?: string;
        result?: {
          type?: string;
          message?: unknown;
          error?: { error?: { message?: string }; message?: string };
        };
      };
      if (typeof line?.custom_id !== 'string') continue;
      const r = line.result;
      if (r?.type === 'succeeded' && r.message) yield { customId: line.custom_id, body: r.message };
      else
        yield {
          customId: line.custom_id,
          error: r?.error?.error?.message ?? r?.error?.message ?? `result ${r?.type ?? 'missing'}`,
        };
    }
  }

  async cancel(id: string): Promise<void> {
    await call(
      this.url(`/${encodeURIComponent(id)}/cancel`),
      { method: 'POST', headers: this.headers() },
      this.secrets,
    );
  }
}
