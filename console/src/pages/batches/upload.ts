/**
 * Submitting a JSONL file as a batch. POST /batches takes one JSON body ({endpoint, requests, …});
 * the file's lines become its `requests` as they are (the gateway validates each), sent with
 * XMLHttpRequest because fetch reports no upload progress.
 */
import { ApiError, dropApiKey, type JsonOk } from '../../api/client';
import { getSession } from '../../session';

export type Batch = JsonOk<'/batches/{id}', 'get'>;

export const ENDPOINTS = ['/v1/chat/completions', '/v1/responses', '/v1/messages', '/v1/embeddings'] as const;
export type Endpoint = (typeof ENDPOINTS)[number];

/** The request lines of a JSONL file, each checked to be a JSON object (the line number on failure). */
export function requestLines(text: string): { lines: string[]; endpoint: Endpoint | null } {
  const lines: string[] = [];
  let endpoint: Endpoint | null = null;
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (!line) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      throw new Error(`Line ${i + 1} of the file is not valid JSON.`);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      throw new Error(`Line ${i + 1} of the file is not a JSON object ({"custom_id": …, "body": {…}}).`);
    const url = (parsed as { url?: unknown }).url;
    if (!endpoint && typeof url === 'string' && (ENDPOINTS as readonly string[]).includes(url))
      endpoint = url as Endpoint;
    lines.push(line);
  });
  if (lines.length === 0) throw new Error('The file holds no requests (one JSON object per line).');
  return { lines, endpoint };
}

/** Uploads the batch body, reporting the fraction sent; resolves with the created batch. */
export function submitBatch(
  endpoint: Endpoint,
  lines: string[],
  onProgress: (fraction: number) => void,
  signal: AbortSignal,
): Promise<Batch> {
  const head = JSON.stringify({ endpoint, completion_window: '24h' }).slice(0, -1);
  const parts: string[] = [head, ',"requests":['];
  for (const [i, l] of lines.entries()) parts.push(i ? `,${l}` : l);
  parts.push(']}');
  const body = new Blob(parts, { type: 'application/json' });
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/api/v1/batches');
    const key = getSession()?.apiKey?.key;
    if (key) xhr.setRequestHeader('Authorization', `Bearer ${key}`);
    xhr.setRequestHeader('Content-Type', 'application/json');
    xhr.responseType = 'json';
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable && e.total > 0) onProgress(e.loaded / e.total);
    };
    xhr.onload = () => {
      const res = xhr.response as { error?: { message?: string } } | null;
      if (xhr.status === 202) {
        onProgress(1);
        resolve(res as Batch);
      } else {
        // As the typed client does: a refused API key is dropped, and the page asks for another.
        if (xhr.status === 401 && key) dropApiKey();
        reject(new ApiError(xhr.status, res?.error?.message ?? `The gateway answered ${xhr.status}`));
      }
    };
    xhr.onerror = () =>
      reject(new ApiError(0, 'The gateway could not be reached. Check that it is running and try again.'));
    xhr.onabort = () => reject(new ApiError(0, 'The upload was cancelled.'));
    signal.addEventListener('abort', () => xhr.abort());
    xhr.send(body);
  });
}
