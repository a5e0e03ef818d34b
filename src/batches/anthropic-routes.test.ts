import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';
import { resultsUrl } from './anthropic-routes.js';

const request = (headers: Record<string, string>) =>
  ({
    headers,
    protocol: 'http',
    routeOptions: { url: '/api/v1/messages/batches/:id' },
  }) as unknown as FastifyRequest;

describe('a Message Batch results_url', () => {
  it("is under the operator's public URL when set, path prefix included, whatever the request says", () => {
    const req = request({ host: '10.0.0.5:8080', 'x-forwarded-host': 'forged.example' });
    expect(resultsUrl(req, 'https://gw.example.com/llm')('msgbatch_1')).toBe(
      'https://gw.example.com/llm/api/v1/messages/batches/msgbatch_1/results',
    );
  });

  it("is built from a proxy's headers, else from the request's Host", () => {
    const proxied = request({
      host: '10.0.0.5:8080',
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'gw.example.com',
    });
    expect(resultsUrl(proxied, null)('msgbatch_1')).toBe(
      'https://gw.example.com/api/v1/messages/batches/msgbatch_1/results',
    );
    expect(resultsUrl(request({ host: 'localhost:8080' }), null)('msgbatch_2')).toBe(
      'http://localhost:8080/api/v1/messages/batches/msgbatch_2/results',
    );
  });

  it('GATEHOUSE_PUBLIC_URL must be an http(s) URL; its trailing slashes are dropped', () => {
    expect(loadConfig({ GATEHOUSE_PUBLIC_URL: 'https://gw.example.com/' }).publicUrl).toBe(
      'https://gw.example.com',
    );
    expect(loadConfig({}).publicUrl).toBeNull();
    expect(() => loadConfig({ GATEHOUSE_PUBLIC_URL: 'gw.example.com' })).toThrow(
      'GATEHOUSE_PUBLIC_URL must be an http(s) URL',
    );
  });
});
