/**
 * Each destination type's configuration: how the management API's `config` is checked, what is
 * stored in clear and what sealed (header values, the Langfuse secret key, the webhook's signing
 * secret), what the API shows (secrets masked), and where delivery goes.
 */
import { badRequest } from '../lib/errors.js';
import type { DestinationType } from './schemas.js';

export const MASK = '********';
/** Header names Gatehouse sets itself on a delivery. */
const RESERVED_HEADERS = /^(host|content-type|content-length|connection|transfer-encoding|x-gatehouse-.*)$/i;
const LANGFUSE_CLOUD = 'https://cloud.langfuse.com';

/** What is stored in clear (`config_json`). */
export interface PlainConfig {
  url?: string;
  method?: 'POST' | 'PUT';
  encoding?: 'protobuf' | 'json';
  header_names?: string[];
  base_url?: string;
  public_key?: string;
}
/** What is stored encrypted (`secret_ciphertext`). */
export interface SealedConfig {
  headers?: Record<string, string>;
  signing_secret?: string;
  secret_key?: string;
}

/** Where and how a delivery goes, secrets opened. */
export interface Target {
  url: string;
  method: 'POST' | 'PUT';
  headers: Record<string, string>;
  encoding: 'protobuf' | 'json';
}

const SETTINGS: Record<DestinationType, string[]> = {
  webhook: ['url', 'method', 'headers'],
  otlp: ['url', 'encoding', 'headers'],
  'otel-collector': ['endpoint', 'headers'],
  langfuse: ['base_url', 'public_key', 'secret_key'],
};

function httpUrl(value: unknown, field: string): URL {
  let url: URL;
  try {
    url = new URL(String(value ?? ''));
  } catch {
    throw badRequest(`config.${field} must be an absolute http(s) URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw badRequest(`config.${field} must be an http(s) URL`);
  if (url.username || url.password)
    throw badRequest(`config.${field} must not carry credentials; use config.headers`);
  return url;
}

/** Extra headers; a value sent back masked keeps the stored one. */
function headersOf(raw: unknown, previous: Record<string, string> | undefined): Record<string, string> {
  if (raw === undefined) return {};
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw badRequest('config.headers must be an object');
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name))
      throw badRequest(`config.headers: ${name} is not a header name`);
    if (RESERVED_HEADERS.test(name)) throw badRequest(`config.headers: ${name} is set by Gatehouse`);
    if (typeof value !== 'string' || /[\r\n]/.test(value) || value.length > 4096)
      throw badRequest(`config.headers.${name} must be a single-line string`);
    const kept = value === MASK ? previous?.[name] : value;
    if (kept === undefined) throw badRequest(`config.headers.${name} is masked; send its value`);
    headers[name] = kept;
  }
  return headers;
}

function key(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 500 || /[\s:]/.test(value))
    throw badRequest(`config.${field} is required: the key from the Langfuse project settings`);
  return value;
}

/**
 * Checks a type's configuration; `previous` (on update) keeps the secrets the caller sent back
 * masked. The webhook's signing secret is the service's (made once, kept across updates).
 */
export function checkConfig(
  type: DestinationType,
  config: Record<string, unknown>,
  previous?: SealedConfig,
): { plain: PlainConfig; sealed: SealedConfig } {
  const unknown = Object.keys(config).filter((k) => !SETTINGS[type].includes(k));
  if (unknown.length > 0)
    throw badRequest(`config.${unknown[0]} is not a ${type} setting (${SETTINGS[type].join(', ')})`);
  if (type === 'langfuse') {
    const base = httpUrl(config.base_url ?? LANGFUSE_CLOUD, 'base_url');
    const secret = config.secret_key === MASK ? previous?.secret_key : config.secret_key;
    if (config.secret_key === MASK && secret === undefined)
      throw badRequest('config.secret_key is masked; send its value');
    return {
      plain: {
        base_url: base.toString().replace(/\/+$/, ''),
        public_key: key(config.public_key, 'public_key'),
      },
      sealed: { secret_key: key(secret, 'secret_key') },
    };
  }
  // The SDK's otel-collector names its traces URL `endpoint`; stored as an otlp `url`.
  const urlField = type === 'otel-collector' ? 'endpoint' : 'url';
  const url = httpUrl(config[urlField], urlField);
  const headers = headersOf(config.headers, previous?.headers);
  const plain: PlainConfig = { url: url.toString(), header_names: Object.keys(headers) };
  if (type === 'webhook') {
    const method = config.method ?? 'POST';
    if (method !== 'POST' && method !== 'PUT') throw badRequest('config.method must be POST or PUT');
    plain.method = method;
  } else {
    const encoding = config.encoding ?? 'protobuf';
    if (encoding !== 'protobuf' && encoding !== 'json')
      throw badRequest('config.encoding must be protobuf or json');
    plain.encoding = encoding;
  }
  return { plain, sealed: { headers } };
}

/** The API's view of a configuration: header values and keys' secrets masked. */
export function configView(type: string, plain: PlainConfig) {
  const headers = Object.fromEntries((plain.header_names ?? []).map((h) => [h, MASK]));
  if (type === 'langfuse')
    return { base_url: plain.base_url, public_key: plain.public_key, secret_key: MASK };
  if (type === 'otel-collector') return { endpoint: plain.url, headers };
  return {
    url: plain.url,
    ...(type === 'webhook' ? { method: plain.method ?? 'POST' } : { encoding: plain.encoding ?? 'protobuf' }),
    headers,
  };
}

/** Where a delivery goes: Langfuse takes OTLP at /api/public/otel/v1/traces with Basic auth. */
export function target(type: string, plain: PlainConfig, sealed: SealedConfig): Target {
  if (type === 'langfuse')
    return {
      url: `${plain.base_url}/api/public/otel/v1/traces`,
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${plain.public_key}:${sealed.secret_key}`).toString('base64')}`,
      },
      encoding: 'protobuf',
    };
  return {
    url: plain.url as string,
    method: plain.method ?? 'POST',
    headers: sealed.headers ?? {},
    encoding: plain.encoding ?? 'protobuf',
  };
}
