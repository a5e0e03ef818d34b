import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { invokeBody, isAnthropicModel } from '../../providers/bedrock/invoke.js';
import { BedrockSigner } from '../../providers/bedrock/signer.js';
import { redact } from '../../providers/redact.js';
import type { BedrockBatchSettings, ProviderConfig } from '../../providers/types.js';
import {
  call,
  jsonLines,
  NativeApiError,
  type NativeBatchApi,
  type NativeLine,
  type NativeResult,
  type NativeStatus,
} from './api.js';

/**
 * AWS Bedrock batch inference: the requests as JSON Lines (`{recordId, modelInput}`, the
 * InvokeModel body) written to the entry's S3 location, a model invocation job over them
 * (CreateModelInvocationJob on the control plane, SigV4-signed as the runtime calls are), polled
 * until it ends; answers in the job's output object (`{recordId, modelInput, modelOutput}` or
 * `{…, error: {errorCode, errorMessage}}` per line).
 *
 * Only Anthropic models (the InvokeModel body Gatehouse builds) go this way; a job takes at least
 * BEDROCK_MIN_RECORDS records (AWS's default quota): a smaller batch is refused here, and runs on
 * the worker.
 */
export const BEDROCK_MIN_RECORDS = 100;
/** AWS's default quota of records per job. */
export const BEDROCK_MAX_RECORDS = 50_000;

/** The Bedrock model id of an upstream model (the entry's `model_ids`, else the id itself). */
export function bedrockModelId(config: ProviderConfig, upstreamModel: string): string {
  return config.bedrock?.modelIds[upstreamModel] ?? upstreamModel;
}

/** Whether the entry's batches for this upstream model can be a batch inference job. */
export function bedrockBatchable(config: ProviderConfig, upstreamModel: string): boolean {
  return !!config.bedrock?.batch && isAnthropicModel(bedrockModelId(config, upstreamModel));
}

/** `s3://bucket/key…` → bucket and key (no leading slash). */
function s3Location(uri: string): { bucket: string; key: string } {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(uri);
  if (!m) throw new NativeApiError(502, `not an S3 location: ${uri.slice(0, 200)}`);
  return { bucket: m[1] as string, key: m[2] as string };
}

const join = (...parts: string[]) =>
  parts
    .map((p) => p.replace(/^\/+|\/+$/g, ''))
    .filter(Boolean)
    .join('/');

/**
 * Job names and client request tokens take letters, digits and hyphens: a Gatehouse batch id
 * (`batch_…`) with its underscore as a hyphen.
 */
const awsName = (gatehouseId: string) => `gatehouse-${gatehouseId.replace(/[^a-zA-Z0-9]+/g, '-')}`;

const INPUT_FILE = 'input.jsonl';

interface Job {
  jobArn: string;
  jobName?: string;
  status?: string;
  message?: string;
  inputDataConfig?: { s3InputDataConfig?: { s3Uri?: string } };
  outputDataConfig?: { s3OutputDataConfig?: { s3Uri?: string } };
}

export class BedrockBatches implements NativeBatchApi {
  private readonly batch: BedrockBatchSettings;
  private readonly signer: BedrockSigner;
  private readonly s3: S3Client;

  constructor(private readonly config: ProviderConfig) {
    const bedrock = config.bedrock;
    if (!bedrock?.batch) throw new Error(`provider ${config.slug}: no batch inference settings`);
    this.batch = bedrock.batch;
    this.signer = new BedrockSigner(bedrock);
    this.s3 = new S3Client({
      region: bedrock.region,
      credentials: this.signer.credentialProvider(),
      ...(this.batch.s3Endpoint ? { endpoint: this.batch.s3Endpoint, forcePathStyle: true } : {}),
    });
  }

  private get secrets() {
    return this.signer.secrets();
  }

  /** One signed control-plane call. */
  private async send(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Response> {
    const url = `${this.batch.endpoint}${path}`;
    const text = body === undefined ? '' : JSON.stringify(body);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let signed: Record<string, string>;
    try {
      signed = await this.signer.sign({ method, url, body: text, headers }, new AbortController().signal);
    } catch (err) {
      throw new NativeApiError(0, (err as Error).message);
    }
    // `host` is set by fetch itself (and must not be sent twice).
    const { host: _host, ...send } = signed;
    return call(url, { method, headers: send, ...(body === undefined ? {} : { body: text }) }, this.secrets);
  }

  private async control<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const res = await this.send(method, path, body);
    try {
      return (await res.json()) as T;
    } catch {
      throw new NativeApiError(502, 'Bedrock sent invalid JSON');
    }
  }

  private s3Error(err: unknown, what: string): NativeApiError {
    const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode ?? 0;
    return new NativeApiError(status, redact(`S3 ${what} failed: ${(err as Error).message}`, this.secrets));
  }

  async submit(lines: NativeLine[], meta: { gatehouseId: string }): Promise<string> {
    if (lines.length < BEDROCK_MIN_RECORDS)
      throw new NativeApiError(400, `a batch inference job takes at least ${BEDROCK_MIN_RECORDS} records`);
    // A job runs one model: every line names the same (the batch's model, one provider).
    const models = new Set(lines.map((l) => String(l.body.model ?? '')));
    if (models.size !== 1) throw new NativeApiError(400, 'a batch inference job runs one model');
    const modelId = bedrockModelId(this.config, [...models][0] as string);
    if (!isAnthropicModel(modelId))
      throw new NativeApiError(400, `not a model whose InvokeModel body Gatehouse builds: ${modelId}`);
    const jsonl = lines
      .map((l) => JSON.stringify({ recordId: l.customId, modelInput: invokeBody(l.body, {}) }))
      .join('\n');
    const base = s3Location(this.batch.s3Uri);
    const prefix = join(base.key, meta.gatehouseId);
    const inputKey = join(prefix, INPUT_FILE);
    try {
      await this.s3.send(
        new PutObjectCommand({
          Bucket: base.bucket,
          Key: inputKey,
          Body: `${jsonl}\n`,
          ContentType: 'application/jsonl',
        }),
      );
    } catch (err) {
      throw this.s3Error(err, 'upload of the batch input');
    }
    const name = awsName(meta.gatehouseId);
    const job = await this.control<{ jobArn: string }>('POST', '/model-invocation-job', {
      jobName: name,
      roleArn: this.batch.roleArn,
      modelId,
      // The Gatehouse batch's own token: a submission started over after a crash gets the job
      // the first one created instead of a second job (Bedrock's idempotency).
      clientRequestToken: name,
      // As OpenAI's and Anthropic's: done (or expired, its rest run by the worker) within a day.
      timeoutDurationInHours: 24,
      inputDataConfig: {
        s3InputDataConfig: { s3Uri: `s3://${base.bucket}/${inputKey}`, s3InputFormat: 'JSONL' },
      },
      outputDataConfig: { s3OutputDataConfig: { s3Uri: `s3://${base.bucket}/${join(prefix, 'output')}/` } },
    });
    if (typeof job?.jobArn !== 'string') throw new NativeApiError(502, 'Bedrock answered without a jobArn');
    return job.jobArn;
  }

  private job(id: string): Promise<Job> {
    return this.control<Job>('GET', `/model-invocation-job/${encodeURIComponent(id)}`);
  }

  async status(id: string): Promise<NativeStatus> {
    const job = await this.job(id);
    const message = job.message ? { message: job.message } : {};
    switch (job.status) {
      // Per-record errors are in the output: the job itself completed.
      case 'Completed':
      case 'PartiallyCompleted':
        return { state: 'ended', outcome: 'completed', ...message };
      case 'Failed':
        return { state: 'ended', outcome: 'failed', ...message };
      case 'Expired':
        return { state: 'ended', outcome: 'expired', ...message };
      case 'Stopped':
        return { state: 'ended', outcome: 'cancelled', ...message };
      default:
        // Submitted, Validating, Scheduled, InProgress, Stopping.
        return { state: 'running' };
    }
  }

  async *results(id: string): AsyncGenerator<NativeResult> {
    const job = await this.job(id);
    const out = job.outputDataConfig?.s3OutputDataConfig?.s3Uri;
    const input = job.inputDataConfig?.s3InputDataConfig?.s3Uri;
    if (!out || !input) return;
    // `{output uri}/{job id}/{input file name}.out`; the job id is the ARN's last segment.
    const jobId = String(job.jobArn ?? id)
      .split('/')
      .pop() as string;
    const loc = s3Location(out);
    const key = join(loc.key, jobId, `${input.split('/').pop()}.out`);
    let body: { transformToWebStream(): ReadableStream } | undefined;
    try {
      const obj = await this.s3.send(new GetObjectCommand({ Bucket: loc.bucket, Key: key }));
      body = obj.Body as typeof body;
    } catch (err) {
      // A job that failed or stopped early may have written nothing: its records go to the worker.
      if ((err as { name?: string }).name === 'NoSuchKey') return;
      throw this.s3Error(err, 'download of the batch output');
    }
    if (!body) return;
    for await (const raw of jsonLines(new Response(body.transformToWebStream()))) {
      const line = raw as {
        recordId?: string;
        modelOutput?: unknown;
        error?: { errorCode?: number | string; errorMessage?: string } | string;
      };
      if (typeof line?.recordId !== 'string') continue;
      if (line.modelOutput && !line.error) yield { customId: line.recordId, body: line.modelOutput };
      else
        yield {
          customId: line.recordId,
          error:
            typeof line.error === 'string'
              ? line.error
              : (line.error?.errorMessage ?? `error ${line.error?.errorCode ?? 'without output'}`),
        };
    }
  }

  async cancel(id: string): Promise<void> {
    // Its answer has no body worth reading.
    const res = await this.send('POST', `/model-invocation-job/${encodeURIComponent(id)}/stop`);
    await res.arrayBuffer().catch(() => {});
  }

  /** The live job an earlier submission of this batch created, found by its name. */
  async find(gatehouseId: string): Promise<string | null> {
    const name = awsName(gatehouseId);
    const page = await this.control<{ invocationJobSummaries?: Job[] }>(
      'GET',
      `/model-invocation-jobs?nameContains=${encodeURIComponent(name)}&maxResults=100`,
    );
    const live = (page.invocationJobSummaries ?? []).find(
      (j) => j.jobName === name && !['Failed', 'Stopping', 'Stopped', 'Expired'].includes(j.status ?? ''),
    );
    return live?.jobArn ?? null;
  }
}
