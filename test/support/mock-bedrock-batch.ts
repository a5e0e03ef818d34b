/**
 * A mock AWS Bedrock control plane for batch inference (127.0.0.1, random port), over an
 * S3-compatible server the test runs (s3rver):
 *
 * - `POST /model-invocation-job` (CreateModelInvocationJob): reads the job's JSONL input from S3
 *   when it is created; the same `clientRequestToken` again answers the same job (idempotency);
 * - `GET /model-invocation-job/{jobIdentifier}` (GetModelInvocationJob), by ARN or job id;
 * - `GET /model-invocation-jobs?nameContains=` (ListModelInvocationJobs);
 * - `POST /model-invocation-job/{jobIdentifier}/stop` (StopModelInvocationJob → Stopping).
 *
 * Every request's SigV4 signature is checked as mock-bedrock.ts checks the runtime's (service
 * `bedrock`). Nothing moves on its own: the test steps a job (`advance`, `finish`, `end`), and
 * `finish` writes the output object `{output uri}/{job id}/{input name}.out` — a record whose
 * text has `ERRORED` gets `error: {errorCode, errorMessage}`, others an Anthropic Message
 * `done <text>` with ITEM_USAGE tokens.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { ITEM_USAGE } from './mock-batches.js';
import { type AwsTestKeys, BEDROCK_TEST_KEYS, verify } from './mock-bedrock.js';

export const MOCK_ACCOUNT = '123456789012';

export interface MockJobRecord {
  recordId: string;
  modelInput: Record<string, any>;
}

export interface MockJob {
  jobArn: string;
  jobId: string;
  jobName: string;
  modelId: string;
  roleArn: string;
  clientRequestToken: string | null;
  timeoutDurationInHours: number | null;
  /** CreateModelInvocationJob calls that named this job's token (1: no resubmission). */
  creates: number;
  status: string;
  message?: string;
  inputUri: string;
  outputUri: string;
  /** The records read from the input object when the job was created. */
  records: MockJobRecord[];
  stopRequested: boolean;
}

export interface MockBedrockBatch {
  url: string;
  jobs: MockJob[];
  /** Every control-plane request: method, path, whether its signature checked out, its scope. */
  requests: { method: string; path: string; signatureValid: boolean; service: string | null }[];
  /** The next CreateModelInvocationJob is refused with this status and message. */
  refuseNext: { status: number; type: string; message: string } | null;
  /** ListModelInvocationJobs answers no job (as it may, shortly after a job was created). */
  listsNothing: boolean;
  /** Sets a job's status (Validating, Scheduled, InProgress …). */
  advance(jobId: string, status: string): MockJob;
  /** Writes the job's output to S3 and ends it `Completed` (or `PartiallyCompleted`, `Stopped`). */
  finish(jobId: string, status?: 'Completed' | 'PartiallyCompleted' | 'Stopped'): Promise<MockJob>;
  /** Ends a job with no output (`Failed`, `Expired`). */
  end(jobId: string, status: 'Failed' | 'Expired', message?: string): MockJob;
  close(): Promise<void>;
}

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });

const s3Parts = (uri: string) => {
  const m = /^s3:\/\/([^/]+)\/(.*)$/.exec(uri);
  if (!m) throw new Error(`not an s3 uri: ${uri}`);
  return { Bucket: m[1] as string, Key: m[2] as string };
};

const textOf = (input: any): string => {
  const c = input?.messages?.[0]?.content;
  return typeof c === 'string' ? c : JSON.stringify(c ?? '');
};

export async function startMockBedrockBatch(opts: {
  s3Endpoint: string;
  region?: string;
  credentials?: AwsTestKeys[];
}): Promise<MockBedrockBatch> {
  const region = opts.region ?? 'us-east-1';
  const credentials = opts.credentials ?? [BEDROCK_TEST_KEYS];
  const s3 = new S3Client({
    endpoint: opts.s3Endpoint,
    region,
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
  const jobs: MockJob[] = [];
  const requests: MockBedrockBatch['requests'] = [];
  const mock: MockBedrockBatch = {
    url: '',
    jobs,
    requests,
    refuseNext: null,
    listsNothing: false,
    advance(jobId, status) {
      const job = byId(jobId);
      job.status = status;
      return job;
    },
    async finish(jobId, status = 'Completed') {
      const job = byId(jobId);
      const lines = job.records.map((r) => {
        const text = textOf(r.modelInput);
        if (text.includes('ERRORED'))
          return { ...r, error: { errorCode: 400, errorMessage: `mock: record ${r.recordId} rejected` } };
        return {
          ...r,
          modelOutput: {
            id: `msg_${randomBytes(6).toString('hex')}`,
            type: 'message',
            role: 'assistant',
            model: job.modelId,
            content: [{ type: 'text', text: `done ${text}` }],
            stop_reason: 'end_turn',
            stop_sequence: null,
            usage: { input_tokens: ITEM_USAGE.prompt, output_tokens: ITEM_USAGE.completion },
          },
        };
      });
      // A stopped job answered only what it reached: the first half.
      const written = status === 'Stopped' ? lines.slice(0, Math.floor(lines.length / 2)) : lines;
      const out = s3Parts(job.outputUri);
      const inputName = job.inputUri.split('/').pop();
      await s3.send(
        new PutObjectCommand({
          Bucket: out.Bucket,
          Key: `${out.Key.replace(/\/+$/, '')}/${job.jobId}/${inputName}.out`,
          Body: written.map((l) => JSON.stringify(l)).join('\n'),
        }),
      );
      job.status = status;
      return job;
    },
    end(jobId, status, message) {
      const job = byId(jobId);
      job.status = status;
      if (message) job.message = message;
      return job;
    },
    close: () => new Promise<void>(() => {}),
  };

  function byId(idOrArn: string): MockJob {
    const job = jobs.find((j) => j.jobId === idOrArn || j.jobArn === idOrArn);
    if (!job) throw new Error(`mock: no job ${idOrArn}`);
    return job;
  }

  function json(res: ServerResponse, status: number, body: unknown, type?: string) {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json',
      'x-amzn-requestid': randomBytes(8).toString('hex'),
      ...(type ? { 'x-amzn-errortype': type } : {}),
    });
    res.end(text);
  }

  const describe = (j: MockJob) => ({
    jobArn: j.jobArn,
    jobName: j.jobName,
    modelId: j.modelId,
    roleArn: j.roleArn,
    clientRequestToken: j.clientRequestToken,
    status: j.status,
    ...(j.message ? { message: j.message } : {}),
    submitTime: new Date().toISOString(),
    inputDataConfig: { s3InputDataConfig: { s3Uri: j.inputUri, s3InputFormat: 'JSONL' } },
    outputDataConfig: { s3OutputDataConfig: { s3Uri: j.outputUri } },
  });

  async function create(res: ServerResponse, body: any) {
    if (mock.refuseNext) {
      const r = mock.refuseNext;
      mock.refuseNext = null;
      return json(res, r.status, { message: r.message }, r.type);
    }
    const inputUri = body?.inputDataConfig?.s3InputDataConfig?.s3Uri;
    const outputUri = body?.outputDataConfig?.s3OutputDataConfig?.s3Uri;
    for (const [field, v] of Object.entries({
      jobName: body?.jobName,
      roleArn: body?.roleArn,
      modelId: body?.modelId,
      inputUri,
      outputUri,
    }))
      if (typeof v !== 'string' || !v)
        return json(res, 400, { message: `mock: ${field} is required` }, 'ValidationException');
    if (body.inputDataConfig.s3InputDataConfig.s3InputFormat !== 'JSONL')
      return json(res, 400, { message: 'mock: s3InputFormat must be JSONL' }, 'ValidationException');
    const token = typeof body.clientRequestToken === 'string' ? body.clientRequestToken : null;
    const same = token ? jobs.find((j) => j.clientRequestToken === token) : undefined;
    if (same) {
      same.creates++;
      return json(res, 200, { jobArn: same.jobArn });
    }
    let text: string;
    try {
      const obj = await s3.send(new GetObjectCommand(s3Parts(inputUri)));
      text = await (obj.Body as { transformToString(): Promise<string> }).transformToString();
    } catch (err) {
      return json(
        res,
        400,
        { message: `mock: input unreadable: ${(err as Error).message}` },
        'ValidationException',
      );
    }
    const records = text
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l) as MockJobRecord);
    const jobId = randomBytes(6).toString('hex');
    const job: MockJob = {
      jobArn: `arn:aws:bedrock:${region}:${MOCK_ACCOUNT}:model-invocation-job/${jobId}`,
      jobId,
      jobName: body.jobName,
      modelId: body.modelId,
      roleArn: body.roleArn,
      clientRequestToken: token,
      timeoutDurationInHours:
        typeof body.timeoutDurationInHours === 'number' ? body.timeoutDurationInHours : null,
      creates: 1,
      status: 'Submitted',
      inputUri,
      outputUri,
      records,
      stopRequested: false,
    };
    jobs.push(job);
    json(res, 200, { jobArn: job.jobArn });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const rawPath = req.url ?? '/';
    const u = new URL(rawPath, 'http://mock');
    const verdict = await verify(req, rawPath, raw, credentials);
    requests.push({
      method: req.method ?? '',
      path: u.pathname,
      signatureValid: verdict.ok,
      service: verdict.ok ? verdict.service : null,
    });
    if (!verdict.ok) return json(res, 403, { message: verdict.message }, verdict.type);
    if (verdict.service !== 'bedrock' || verdict.region !== region)
      return json(
        res,
        403,
        { message: 'mock: signed for another service or region' },
        'InvalidSignatureException',
      );
    let body: any = null;
    try {
      body = raw ? JSON.parse(raw) : null;
    } catch {}
    if (req.method === 'POST' && u.pathname === '/model-invocation-job') return create(res, body);
    if (req.method === 'GET' && u.pathname === '/model-invocation-jobs') {
      const contains = u.searchParams.get('nameContains') ?? '';
      return json(res, 200, {
        invocationJobSummaries: mock.listsNothing
          ? []
          : jobs.filter((j) => j.jobName.includes(contains)).map(describe),
      });
    }
    const m = /^\/model-invocation-job\/([^/]+)(\/stop)?$/.exec(u.pathname);
    const job = m
      ? jobs.find((j) => [j.jobArn, j.jobId].includes(decodeURIComponent(m[1] as string)))
      : undefined;
    if (!m || !job)
      return json(
        res,
        404,
        { message: `mock: no route or job for ${req.method} ${u.pathname}` },
        'ResourceNotFoundException',
      );
    if (req.method === 'GET' && !m[2]) return json(res, 200, describe(job));
    if (req.method === 'POST' && m[2]) {
      if (!['Submitted', 'Validating', 'Scheduled', 'InProgress'].includes(job.status))
        return json(res, 400, { message: `mock: job is ${job.status}` }, 'ValidationException');
      job.stopRequested = true;
      job.status = 'Stopping';
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end('{}');
    }
    return json(res, 404, { message: 'mock: no route' }, 'UnknownOperationException');
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: `mock crashed: ${String(err)}` }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  mock.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  mock.close = () => {
    s3.destroy();
    server.closeAllConnections();
    return new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
  };
  return mock;
}
