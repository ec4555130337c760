import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
// @ts-expect-error -- oidc-provider ships no type declarations; the few members used are typed below.
import OidcProviderModule from 'oidc-provider';

/** A user of the test identity provider; its claims are read at every sign-in, so tests may change them. */
export interface IdpAccount {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
  groups?: string[];
}

interface Interaction {
  prompt: { name: string; details: { missingOIDCScope?: string[] } };
  params: { client_id: string; scope: string };
  session?: { accountId: string };
  grantId?: string;
}

interface Grant {
  addOIDCScope(scope: string): void;
  save(): Promise<string>;
}

interface OidcProvider {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>;
  interactionFinished(
    req: IncomingMessage,
    res: ServerResponse,
    result: Record<string, unknown>,
    options?: { mergeWithLastSubmission: boolean },
  ): Promise<void>;
  Grant: {
    new (init: { accountId: string; clientId: string }): Grant;
    find(id: string): Promise<Grant | undefined>;
  };
}

const Provider = OidcProviderModule as new (
  issuer: string,
  configuration: Record<string, unknown>,
) => OidcProvider;

export interface TestOidcIdp {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The users that can sign in, by `sub`; edit an account's claims between sign-ins. */
  accounts: Map<string, IdpAccount>;
  /**
   * Plays the browser at the identity provider: follows the authorization request through the
   * provider's redirects, signs in as `sub` and consents, and returns the URL the provider sends
   * the browser back to (the service's redirect_uri with code and state), without requesting it.
   */
  signIn(authorizationUrl: string, sub: string): Promise<URL>;
  stop(): Promise<void>;
}

/**
 * Starts oidc-provider on a random loopback port with one confidential client (PKCE required,
 * client_secret_basic), signing ID tokens with a throw-away RSA key. Interactions (login and
 * consent) are completed programmatically through `interactionFinished`, as the account `signIn`
 * names.
 */
export async function startOidcIdp(redirectUris: string[]): Promise<TestOidcIdp> {
  const accounts = new Map<string, IdpAccount>();
  const clientId = 'replicator';
  const clientSecret = randomBytes(24).toString('base64url');
  // The account the interaction in progress signs in as; set by signIn, one sign-in at a time.
  let signingInAs: string | undefined;
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
  const server = createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const signingKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [{ ...signingKey, kid: 'test-key', alg: 'RS256', use: 'sig' }] },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
    pkce: { required: () => true },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    async findAccount(_ctx: unknown, sub: string) {
      if (!accounts.has(sub)) return undefined;
      return { accountId: sub, claims: async () => ({ ...accounts.get(sub) }) };
    },
  });
  const providerCallback = provider.callback();

  async function interact(req: IncomingMessage, res: ServerResponse) {
    const details = await provider.interactionDetails(req, res);
    if (details.prompt.name === 'login') {
      if (!signingInAs) throw new Error('no sign-in in progress');
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId: signingInAs } },
        {
          mergeWithLastSubmission: false,
        },
      );
      return;
    }
    if (details.prompt.name === 'consent') {
      const accountId = details.session?.accountId as string;
      const grant = details.grantId
        ? ((await provider.Grant.find(details.grantId)) as Grant)
        : new provider.Grant({ accountId, clientId: details.params.client_id });
      grant.addOIDCScope((details.prompt.details.missingOIDCScope ?? []).join(' ') || details.params.scope);
      await provider.interactionFinished(
        req,
        res,
        { consent: { grantId: await grant.save() } },
        {
          mergeWithLastSubmission: true,
        },
      );
      return;
    }
    throw new Error(`unexpected prompt ${details.prompt.name}`);
  }

  handler = (req, res) => {
    if (req.url?.startsWith('/interaction/')) {
      interact(req, res).catch((error: Error) => {
        res.statusCode = 500;
        res.end(error.message);
      });
      return;
    }
    providerCallback(req, res);
  };

  return {
    issuer,
    clientId,
    clientSecret,
    accounts,
    async signIn(authorizationUrl, sub) {
      signingInAs = sub;
      // A fresh browser at the provider for each sign-in: no provider session carries over.
      const cookies = new Map<string, string>();
      let url = new URL(authorizationUrl);
      try {
        for (let hop = 0; hop < 20; hop++) {
          if (url.origin !== issuer) return url;
          const res = await fetch(url, {
            redirect: 'manual',
            headers: { cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; ') },
          });
          for (const line of res.headers.getSetCookie()) {
            const [pair] = line.split(';');
            const separator = (pair as string).indexOf('=');
            cookies.set((pair as string).slice(0, separator), (pair as string).slice(separator + 1));
          }
          const location = res.headers.get('location');
          if (!location) throw new Error(`the identity provider answered ${res.status}: ${await res.text()}`);
          await res.body?.cancel();
          url = new URL(location, url);
        }
        throw new Error('too many redirects at the identity provider');
      } finally {
        signingInAs = undefined;
      }
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
