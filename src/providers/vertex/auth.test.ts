import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type MockVertex, startMockVertex } from '../../../test/support/mock-vertex.js';
import { UpstreamError } from '../types.js';
import { VertexTokenSource } from './auth.js';

describe('Vertex AI tokens', () => {
  let mock: MockVertex;
  const signal = new AbortController().signal;

  beforeAll(async () => {
    mock = await startMockVertex();
  });
  beforeEach(() => {
    mock.tokenFailure = null;
    mock.expiresIn = 3600;
  });
  afterAll(() => mock.close());

  it("signs the JWT grant with the key and posts it to the key file's token_uri, once for many calls", async () => {
    const before = mock.tokenRequests;
    const source = new VertexTokenSource({ serviceAccount: mock.serviceAccount });
    const tokens = await Promise.all([source.get(signal), source.get(signal), source.get(signal)]);
    expect(await source.get(signal)).toBe(tokens[0]);
    expect(new Set(tokens).size).toBe(1);
    expect(mock.issued).toContain(tokens[0]);
    expect(mock.tokenRequests - before).toBe(1);
  });

  it('token_url wins over the key file', async () => {
    const source = new VertexTokenSource({
      serviceAccount: { ...mock.serviceAccount, token_uri: 'http://127.0.0.1:9/nowhere' },
      tokenUrl: mock.tokenUrl,
    });
    expect(mock.issued).toContain(await source.get(signal));
  });

  it('a refused grant is a 401 naming Google OAuth, never the key; a failing token service is retryable', async () => {
    mock.tokenFailure = {
      status: 400,
      body: { error: 'invalid_grant', error_description: 'Invalid grant: account not found' },
    };
    const source = new VertexTokenSource({ serviceAccount: mock.serviceAccount });
    const refused = await source.get(signal).catch((e) => e);
    expect(refused).toBeInstanceOf(UpstreamError);
    expect(refused).toMatchObject({ status: 401, retryable: false });
    expect(refused.message).toContain('Google OAuth token request failed');
    expect(refused.message).toContain('account not found');
    expect(refused.message).not.toContain('PRIVATE KEY');

    mock.tokenFailure = { status: 503, body: { error: 'backend_error' } };
    const failing = await source.get(signal).catch((e) => e);
    expect(failing).toMatchObject({ status: 502, retryable: true });

    // The same source recovers once the token service does.
    mock.tokenFailure = null;
    expect(mock.issued).toContain(await source.get(signal));
  });

  it('a caller who leaves stops waiting; the token request goes on for the others', async () => {
    const source = new VertexTokenSource({ serviceAccount: mock.serviceAccount });
    const leaving = new AbortController();
    const first = source.get(leaving.signal);
    const second = source.get(signal);
    leaving.abort();
    await expect(first).rejects.toMatchObject({ name: 'AbortError' });
    expect(mock.issued).toContain(await second);
  });
});
