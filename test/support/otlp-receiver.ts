import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An OTLP/HTTP trace receiver (POST …/v1/traces, any prefix: Langfuse's is /api/public/otel) on a
 * loopback port: decodes what an exporter sends, in JSON (`application/json`) or protobuf
 * (`application/x-protobuf`), into plain spans. `failFor(n)` answers the next n exports with 503.
 */

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  /** 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, unknown>;
  /** 0 unset, 1 ok, 2 error. */
  status: { code: number; message?: string };
  events: { name: string; attributes: Record<string, unknown> }[];
  /** Nanoseconds since the epoch, as decimal strings. */
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  links: { traceId: string; spanId: string; attributes: Record<string, unknown> }[];
  resource: Record<string, unknown>;
  /** The path of the export request that carried it. */
  path?: string;
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** Content types of the export requests received. */
  contentTypes: string[];
  /** Each export request: its path, headers, how many spans it carried, the status answered. */
  requests: { path: string; headers: Record<string, unknown>; spans: number; status: number }[];
  failFor(n: number): void;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const requests: OtlpReceiver['requests'] = [];
  let failNext = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const type = String(req.headers['content-type'] ?? '');
      contentTypes.push(type);
      if (req.method !== 'POST' || !req.url?.endsWith('/v1/traces')) {
        res.writeHead(404).end();
        return;
      }
      if (failNext > 0) {
        failNext--;
        requests.push({ path: req.url, headers: req.headers, spans: 0, status: 503 });
        res.writeHead(503).end();
        return;
      }
      const got = type.startsWith('application/json')
        ? fromJson(JSON.parse(body.toString('utf8')))
        : fromProtobuf(body);
      for (const span of got) span.path = req.url;
      requests.push({ path: req.url, headers: req.headers, spans: got.length, status: 200 });
      if (type.startsWith('application/json')) {
        spans.push(...got);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } else {
        spans.push(...got);
        // An empty ExportTraceServiceResponse.
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    contentTypes,
    requests,
    failFor: (n) => {
      failNext = n;
    },
    close: () => new Promise((r) => server.close(() => r())),
  };
}

// ---------------------------------------------------------------------------------------------
// OTLP/JSON

type JsonValue = {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  arrayValue?: { values?: JsonValue[] };
};
type JsonKv = { key: string; value: JsonValue };

function jsonValue(v: JsonValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(jsonValue);
  return null;
}
const jsonAttrs = (kvs: JsonKv[] = []) => Object.fromEntries(kvs.map((kv) => [kv.key, jsonValue(kv.value)]));

function fromJson(body: any): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of body.resourceSpans ?? []) {
    const resource = jsonAttrs(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? [])
      for (const s of ss.spans ?? [])
        out.push({
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? '',
          name: s.name,
          kind: s.kind,
          attributes: jsonAttrs(s.attributes),
          status: { code: s.status?.code ?? 0, message: s.status?.message },
          events: (s.events ?? []).map((e: any) => ({ name: e.name, attributes: jsonAttrs(e.attributes) })),
          startTimeUnixNano: String(s.startTimeUnixNano),
          endTimeUnixNano: String(s.endTimeUnixNano),
          links: (s.links ?? []).map((l: any) => ({
            traceId: l.traceId,
            spanId: l.spanId,
            attributes: jsonAttrs(l.attributes),
          })),
          resource,
        });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// OTLP/protobuf: the few messages of an ExportTraceServiceRequest, read field by field.

type Field = { no: number; wire: number; varint?: bigint; bytes?: Buffer; fixed?: Buffer };

function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let pos = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[pos++] as number;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (pos < buf.length) {
    const tag = Number(varint());
    const no = tag >>> 3;
    const wire = tag & 7;
    if (wire === 0) out.push({ no, wire, varint: varint() });
    else if (wire === 1) {
      out.push({ no, wire, fixed: buf.subarray(pos, pos + 8) });
      pos += 8;
    } else if (wire === 2) {
      const len = Number(varint());
      out.push({ no, wire, bytes: buf.subarray(pos, pos + len) });
      pos += len;
    } else if (wire === 5) {
      out.push({ no, wire, fixed: buf.subarray(pos, pos + 4) });
      pos += 4;
    } else throw new Error(`unexpected wire type ${wire}`);
  }
  return out;
}

const sub = (fs: Field[], no: number) => fs.filter((f) => f.no === no).map((f) => fields(f.bytes as Buffer));
const str = (fs: Field[], no: number) => fs.find((f) => f.no === no)?.bytes?.toString('utf8') ?? '';
const hex = (fs: Field[], no: number) => fs.find((f) => f.no === no)?.bytes?.toString('hex') ?? '';
const fixed64 = (fs: Field[], no: number) =>
  String(fs.find((f) => f.no === no)?.fixed?.readBigUInt64LE(0) ?? 0n);
const int = (fs: Field[], no: number) => Number(fs.find((f) => f.no === no)?.varint ?? 0n);

function anyValue(fs: Field[]): unknown {
  for (const f of fs) {
    if (f.no === 1) return (f.bytes as Buffer).toString('utf8');
    if (f.no === 2) return f.varint === 1n;
    if (f.no === 3) return Number(BigInt.asIntN(64, f.varint as bigint));
    if (f.no === 4) return (f.fixed as Buffer).readDoubleLE(0);
    if (f.no === 5) return sub(fields(f.bytes as Buffer), 1).map(anyValue);
  }
  return null;
}
const pbAttrs = (kvs: Field[][]) =>
  Object.fromEntries(kvs.map((kv) => [str(kv, 1), anyValue(sub(kv, 2)[0] ?? [])]));

function fromProtobuf(body: Buffer): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of sub(fields(body), 1)) {
    const resource = pbAttrs(sub(sub(rs, 1)[0] ?? [], 1));
    for (const ss of sub(rs, 2))
      for (const s of sub(ss, 2)) {
        const status = sub(s, 15)[0] ?? [];
        out.push({
          traceId: hex(s, 1),
          spanId: hex(s, 2),
          parentSpanId: hex(s, 4),
          name: str(s, 5),
          kind: int(s, 6),
          attributes: pbAttrs(sub(s, 9)),
          status: { code: int(status, 3), message: str(status, 2) },
          events: sub(s, 11).map((e) => ({ name: str(e, 2), attributes: pbAttrs(sub(e, 3)) })),
          startTimeUnixNano: fixed64(s, 7),
          endTimeUnixNano: fixed64(s, 8),
          links: sub(s, 13).map((l) => ({
            traceId: hex(l, 1),
            spanId: hex(l, 2),
            attributes: pbAttrs(sub(l, 4)),
          })),
          resource,
        });
      }
  }
  return out;
}
