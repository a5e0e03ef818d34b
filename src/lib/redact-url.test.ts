import { describe, expect, it } from 'vitest';
import { redactUrl } from './redact-url.js';

describe('redactUrl', () => {
  it('redacts credential-looking query parameters, case-insensitively, keeping the rest as sent', () => {
    expect(redactUrl('/api/v1/models?api_key=sk-1&limit=5')).toBe(
      '/api/v1/models?api_key=[REDACTED]&limit=5',
    );
    expect(
      redactUrl(
        '/x?KEY=a&Token=b&access_token=c&client_secret=d&password=e&X-Amz-Signature=f&X-Amz-Credential=g',
      ),
    ).toBe(
      '/x?KEY=[REDACTED]&Token=[REDACTED]&access_token=[REDACTED]&client_secret=[REDACTED]&password=[REDACTED]&X-Amz-Signature=[REDACTED]&X-Amz-Credential=[REDACTED]',
    );
    expect(redactUrl('/x?api%5Fkey=s&sig=t&apiKey=u')).toBe(
      '/x?api%5Fkey=[REDACTED]&sig=[REDACTED]&apiKey=[REDACTED]',
    );
    expect(redactUrl('/x?token')).toBe('/x?token=[REDACTED]');
  });

  it('leaves URLs without credentials unchanged', () => {
    for (const u of ['/health', '/api/v1/generation?id=gen-1', '/x?monkey=1&q=a%20b&&', '/x?keyword=k', '/?'])
      expect(redactUrl(u)).toBe(u);
  });
});
