/**
 * A real OpenID provider (the `oidc-provider` package) on a loopback port, with one confidential
 * client and test accounts. Its login is a minimal interaction of our own: GET
 * /interaction/<uid>?account=<id> logs that account in and grants the requested scopes, as a person
 * choosing an account and consenting would (without `account`: a form asking for one, for browsers).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

export interface TestAccount {
  email: string;
  email_verified: boolean;
  given_name?: string;
  family_name?: string;
  groups?: string[];
}

export interface TestProvider {
  issuer: string;
  close(): Promise<void>;
}

/** A free loopback port (for a server whose address others must know before it starts). */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

export async function startOidcProvider(opts: {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  /** Where the provider may send the browser after sign-out (the console). */
  postLogoutRedirectUri?: string;
  accounts: Record<string, TestAccount>;
}): Promise<TestProvider> {
  let provider: Provider | null = null;
  const server: Server = createServer((req, res) => {
    if (!provider) return void res.writeHead(503).end();
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname.startsWith('/interaction/')) {
      const accountId = url.searchParams.get('account');
      if (!accountId) {
        // A browser's login page: which account to sign in as (submitted back here).
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(
          '<!doctype html><html lang="en"><head><title>Test provider login</title></head><body>' +
            '<form method="get"><label>Account <input name="account"></label>' +
            '<button type="submit">Log in</button></form></body></html>',
        );
        return;
      }
      const p = provider;
      void (async () => {
        const details = await p.interactionDetails(req, res);
        const grant = new p.Grant({ accountId, clientId: String(details.params.client_id) });
        grant.addOIDCScope(String(details.params.scope));
        const grantId = await grant.save();
        await p.interactionFinished(
          req,
          res,
          { login: { accountId }, consent: { grantId } },
          { mergeWithLastSubmission: false },
        );
      })().catch((err) => {
        res.writeHead(500).end(String(err));
      });
      return;
    }
    provider.callback()(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  provider = new Provider(issuer, {
    clients: [
      {
        client_id: opts.clientId,
        client_secret: opts.clientSecret,
        redirect_uris: [opts.redirectUri],
        ...(opts.postLogoutRedirectUri ? { post_logout_redirect_uris: [opts.postLogoutRedirectUri] } : {}),
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    scopes: ['openid', 'email', 'profile', 'groups', 'offline_access'],
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['given_name', 'family_name'],
      groups: ['groups'],
    },
    cookies: { keys: ['test-provider-cookie-key'] },
    ttl: {
      AccessToken: 600,
      AuthorizationCode: 60,
      Grant: 600,
      IdToken: 600,
      Interaction: 600,
      Session: 600,
    },
    features: {
      devInteractions: { enabled: false },
      rpInitiatedLogout: {
        enabled: true,
        // The default pages load web fonts: these load nothing (the browser tests count requests).
        async logoutSource(ctx: { body: unknown }, form: string) {
          ctx.body =
            '<!doctype html><html lang="en"><head><title>Test provider sign-out</title></head><body>' +
            `${form}<button type="submit" form="op.logoutForm" name="logout" value="yes">Yes, sign me out</button>` +
            '</body></html>';
        },
        async postLogoutSuccessSource(ctx: { body: unknown }) {
          ctx.body =
            '<!doctype html><html lang="en"><head><title>Signed out</title></head><body>Signed out</body></html>';
        },
      },
    },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    async findAccount(_ctx: unknown, id: string) {
      const account = opts.accounts[id];
      if (!account) return undefined;
      return { accountId: id, claims: async () => ({ sub: id, ...account }) };
    },
  });
  return {
    issuer,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
