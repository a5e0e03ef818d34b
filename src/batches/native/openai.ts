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
 * OpenAI's Batch API: the requests as a JSONL file uploaded through the Files API
 * (`purpose=batch`), a batch over it (`completion_window: 24h`), polled until it ends; answers
 * in its output file, failures in its error file.
 */
export class OpenAiBatches implements NativeBatchApi {
  constructor(private readonly config: ProviderConfig) {}

  private url(path: string): string {
    return `${this.config.baseUrl.replace(/\/+$/, '')}${path}`;
  }

  private headers(json = true): Record<string, string> {
    const h: Record<string, string> = { ...this.config.headers };
    if (json) h['content-type'] = 'application/json';
    if (this.config.apiKey) h.authorization = `Bearer ${this.config.apiKey}`;
    return h;
  }

  private get secrets() {
    return [this.config.apiKey];
  }

  async submit(
    lines: { customId: string; body: Record<string, unknown> }[],
    meta: { endpoint: string; gatehouseId: string },
  ) {
    const jsonl = lines
      .map((l) => JSON.stringify({ custom_id: l.customId, method: 'POST', url: meta.endpoint, body: l.body }))
      .join('\n');
    const form = new FormData();
    form.append('purpose', 'batch');
    form.append('file', new Blob([`${jsonl}\n`], { type: 'application/jsonl' }), `${meta.gatehouseId}.jsonl`);
    const file = await callJson<{ id: string }>(
      this.url('/files'),
      { method: 'POST', headers: this.headers(false), body: form },
      this.secrets,
    );
    const batch = await callJson<{ id: string }>(
      this.url('/batches'),
      {
        method: 'POST',
        headers: this.headers(),
        body: JSON.stringify({
          input_file_id: file.id,
          endpoint: meta.endpoint,
          completion_window: '24h',
          metadata: { gatehouse_batch_id: meta.gatehouseId },
        }),
      },
      this.secrets,
    );
    return batch.id;
  }

  async status(id: string): Promise<NativeStatus> {
    const b = await this.batch(id);
    switch (b.status) {
      case 'completed':
      case 'failed':
      case 'expired':
      case 'cancelled': {
        const message = b.errors?.data?.[0]?.message;
        return { state: 'ended', outcome: b.status, ...(message ? { message } : {}) };
      }
      default:
        return { state: 'running' };
    }
  }

  private batch(id: string) {
    return callJson<OpenAiBatch>(
      this.url(`/batches/${encodeURIComponent(id)}`),
      { method: 'GET', headers: this.headers() },
      this.secrets,
    );
  }

  async *results(id: string): AsyncGenerator<NativeResult> {
    const b = await this.batch(id);
    for (const fileId of [b.output_file_id, b.error_file_id]) {
      if (!fileId) continue;
      const res = await call(
        this.url(`/files/${encodeURIComponent(fileId)}/content`),
        { method: 'GET', headers: this.headers(false), timeoutMs: DOWNLOAD_TIMEOUT_MS },
        this.secrets,
      );
      for await (const raw of jsonLines(res)) {
        const line = raw as OpenAiResultLine;
        if (typeof line?.custom_id !== 'string') continue;
        const status = line.response?.status_code;
        if (status === 200 && line.response?.body)
          yield { customId: line.custom_id, body: line.response.body };
        else
          yield {
            customId: line.custom_id,
            error:
              line.error?.message ??
              (line.response?.body as { error?: { message?: string } } | undefined)?.error?.message ??
              `status ${status ?? 'none'}`,
          };
      }
    }
  }

  async find(gatehouseId: string): Promise<string | null> {
    // The newest batches first: one created by a submission that died moments ago is among them.
    const page = await callJson<{ data?: OpenAiBatch[] }>(
      this.url('/batches?limit=100'),
      { method: 'GET', headers: this.headers() },
      this.secrets,
    );
    const live = (page.data ?? []).find(
      (b) =>
        b.metadata?.gatehouse_batch_id === gatehouseId &&
        !['failed', 'expired', 'cancelling', 'cancelled'].includes(b.status),
    );
    return live?.id ?? null;
  }

  async cancel(id: string): Promise<void> {
    await call(
      this.url(`/batches/${encodeURIComponent(id)}/cancel`),
      { method: 'POST', headers: this.headers() },
      this.secrets,
    );
  }
}

interface OpenAiBatch {
  id: string;
  status: string;
  output_file_id?: string | null;
  error_file_id?: string | null;
  errors?: { data?: { message?: string }[] } | null;
  metadata?: Record<string, string> | null;
}

interface OpenAiResultLine {
  custom_id?: string;
  response?: { status_code?: number; body?: unknown } | null;
  error?: { code?: string; message?: string } | null;
}
