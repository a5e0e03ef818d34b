/**
 * The S3-compatible object store (GATEHOUSE_MEDIA_STORE=s3): outputs are written with PutObject
 * (content type and a long-lived immutable Cache-Control, keys being unique) and returned as
 * `<public url>/<key>` when a public base URL is configured, else as presigned GET URLs. Works with
 * AWS S3 and S3-protocol servers (MinIO, Ceph, R2, s3rver…) through `endpoint` + path-style URLs.
 * Credentials are never logged: they live only in the SDK client.
 */

import type { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { MediaS3Config } from '../config.js';
import type { ObjectStore } from '../types.js';
import { isValidKey } from './filesystem.js';

/** Outputs never change under their key (a fresh UUID each), so caches may keep them for a year. */
export const CACHE_CONTROL = 'public, max-age=31536000, immutable';

export class S3Store implements ObjectStore {
  readonly client: S3Client;

  constructor(
    private readonly config: MediaS3Config,
    client?: S3Client,
  ) {
    this.client = client ?? new S3Client(s3ClientConfig(config));
  }

  get bucket(): string {
    return this.config.bucket;
  }

  async put(key: string, data: Buffer, contentType: string): Promise<{ url: string; key: string }> {
    if (!isValidKey(key)) throw new Error(`Invalid object key: ${JSON.stringify(key)}`);
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.config.bucket,
        Key: key,
        Body: data,
        ContentLength: data.length,
        ContentType: contentType,
        CacheControl: CACHE_CONTROL,
      }),
    );
    return { url: await this.urlFor(key), key };
  }

  async delete(key: string): Promise<void> {
    if (!isValidKey(key)) return;
    await this.client.send(new DeleteObjectCommand({ Bucket: this.config.bucket, Key: key }));
  }

  /** The object at `key` opened for reading; null when there is none. */
  async open(key: string): Promise<{ stream: Readable; size?: number; contentType: string } | null> {
    if (!isValidKey(key)) return null;
    try {
      const got = await this.client.send(new GetObjectCommand({ Bucket: this.config.bucket, Key: key }));
      if (!got.Body) return null;
      return {
        stream: got.Body as Readable,
        size: got.ContentLength,
        contentType: got.ContentType ?? 'application/octet-stream',
      };
    } catch (err) {
      if ((err as Error).name === 'NoSuchKey') return null;
      throw err;
    }
  }

  /** `<public url>/<key>`, or a GET URL presigned for `urlTtlS` seconds. */
  async urlFor(key: string): Promise<string> {
    if (this.config.publicUrl) return `${this.config.publicUrl}/${key}`;
    return getSignedUrl(this.client, new GetObjectCommand({ Bucket: this.config.bucket, Key: key }), {
      expiresIn: this.config.urlTtlS,
    });
  }

  /** Where outputs go, for the start-up log line (no credentials). */
  describe(): Record<string, string> {
    return {
      store: 's3',
      bucket: this.config.bucket,
      region: this.config.region,
      endpoint: this.config.endpoint ?? 'aws',
      urls: this.config.publicUrl ? 'public' : 'presigned',
    };
  }

  destroy(): void {
    this.client.destroy();
  }
}

export function s3ClientConfig(config: MediaS3Config): S3ClientConfig {
  return {
    region: config.region,
    ...(config.credentials ? { credentials: config.credentials } : {}),
    ...(config.endpoint
      ? {
          endpoint: config.endpoint,
          forcePathStyle: true,
          // Many S3-compatible servers reject or ignore the SDK's default CRC32 checksums.
          requestChecksumCalculation: 'WHEN_REQUIRED',
          responseChecksumValidation: 'WHEN_REQUIRED',
        }
      : {}),
  };
}
