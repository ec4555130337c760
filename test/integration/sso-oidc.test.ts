import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Config } from '../../src/config/options.js';
import { freePort } from '../../src/net/free-port.js';
import { ADMIN, ApiCaller, enableAuth } from '../support/auth-client.js';
import { startOidcIdp, type TestOidcIdp } from '../support/oidc-idp.js';
import { createDatabase } from '../support/pg-cluster.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';
import { queryStore } from '../support/store-query.js';

const cluster = inject('pgClusters')[0] as { adminUrl: string };

/** A browser at the service: keeps every cookie the service sets, follows no redirect by itself. */
class Browser {
  readonly cookies = new Map<string, string>();

  constructor(readonly base: string) {}

  async get(url: string) {
    const res = await fetch(new URL(url, this.base), {
      redirect: 'manual',
      headers: { cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ') },
    });
    for (const line of res.headers.getSetCookie()) {
      const pair = line.split(';')[0] as string;
      const name = pair.slice(0, pair.indexOf('='));
      const value = pair.slice(pair.indexOf('=') + 1);
      if (value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const text = await res.text();
    return { status: res.status, location: res.headers.get('location'), headers: res.headers, text };
  }

  /** The session as an API caller, to call the API with the cookie this browser got. */
  caller(): ApiCaller {
    const caller = new ApiCaller(this.base);
    caller.cookie = `service_session=${this.cookies.get('service_session')}`;
    return caller;
  }
}

describe('single sign-on with OpenID Connect', () => {
  let service: TestService;
  let idp: TestOidcIdp;
  let storeUrl: string;
  let admin: ApiCaller;
  let publicUrl: string;
  let analyticsId: string;

  const query = <T = any>(text: string, values: unknown[] = []) => queryStore<T>(storeUrl, text, values);

  /** Starts a sign-in in `browser`, signs in at the provider as `sub`; returns the callback URL. */
  async function throughProvider(browser: Browser, sub: string, path = '/v1/auth/sso/corp/login') {
    const start = await browser.get(path);
    expect(start.status, start.text).toBe(302);
    return idp.signIn(start.location as string, sub);
  }

  /** A complete sign-in; returns the browser, signed in. */
  async function signIn(sub: string): Promise<Browser> {
    const browser = new Browser(service.url);
    const callback = await throughProvider(browser, sub);
    const done = await browser.get(callback.toString());
    expect(done.status, done.text).toBe(302);
    return browser;
  }

  const ssoEvents = () =>
    query<{ outcome: string; actor_type: string; actor_name: string; details: any }>(
      "SELECT outcome, actor_type, actor_name, details FROM audit_events WHERE action = 'auth.sso_login' ORDER BY id",
    );

  beforeAll(async () => {
    storeUrl = await createDatabase(cluster.adminUrl, 'sso_oidc');
    // The public URL must be known before the service starts: the redirect URI derives from it.
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    idp = await startOidcIdp([`${publicUrl}/v1/auth/sso/corp/callback`]);
    idp.accounts.set('alice-sub', {
      sub: 'alice-sub',
      email: 'alice@example.com',
      email_verified: true,
      name: 'Alice Engineer',
      groups: ['data-eng', 'everyone'],
    });
    const config = enableAuth(testConfig(storeUrl));
    service = await startTestService({
      ...config,
      listen: { host: '127.0.0.1', port },
      auth: { ...config.auth, publicUrl, ssoAllowInsecureIssuers: true } as Config['auth'],
    });
    admin = new ApiCaller(service.url);
    expect((await admin.call('POST', '/v1/admin/bootstrap', ADMIN)).status).toBe(201);
    expect((await admin.login(ADMIN.email, ADMIN.password)).status).toBe(200);
    const [analytics] = await query<{ id: string }>(
      `INSERT INTO projects (organization_id, workspace_id, name)
       VALUES ('00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000003', 'analytics')
       RETURNING id`,
    );
    analyticsId = (analytics as { id: string }).id;
  });
  afterAll(async () => {
    await service?.stop();
    await idp?.stop();
  });

  const corp = () => ({
    name: 'corp',
    kind: 'oidc',
    issuer: idp.issuer,
    client_id: idp.clientId,
    client_secret: idp.clientSecret,
    scopes: 'openid email profile groups',
    role_mapping: {
      claim: 'groups',
      rules: [{ value: 'data-eng', role: 'editor', scope_type: 'project', scope: 'analytics' }],
      default_role: 'viewer',
    },
  });

  it('creates an OIDC provider; the client secret is never returned and is stored sealed', async () => {
    const created = await admin.call('POST', '/v1/sso/providers', corp());
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({
      name: 'corp',
      kind: 'oidc',
      enabled: true,
      issuer: idp.issuer,
      client_id: idp.clientId,
      client_secret_set: true,
      scopes: 'openid email profile groups',
      redirect_uri: `${publicUrl}/v1/auth/sso/corp/callback`,
      login_url: `${publicUrl}/v1/auth/sso/corp/login`,
      role_mapping: {
        claim: 'groups',
        rules: [{ value: 'data-eng', role: 'editor', scope_type: 'project', scope: 'analytics' }],
        default_role: 'viewer',
      },
    });
    for (const answer of [
      created,
      await admin.call('GET', '/v1/sso/providers'),
      await admin.call('GET', '/v1/sso/providers/corp'),
    ]) {
      expect(answer.status).toBe(200 + (answer === created ? 1 : 0));
      expect(answer.text).not.toContain(idp.clientSecret);
    }
    const [row] = await query("SELECT settings, secrets_sealed FROM sso_providers WHERE name = 'corp'");
    expect(row.secrets_sealed).toMatch(/^v1\./);
    expect(row.secrets_sealed).not.toContain(idp.clientSecret);
    expect(JSON.stringify(row.settings)).not.toContain(idp.clientSecret);
    expect(row.settings.role_mapping.rules[0].scope_id).toBe(analyticsId);
  });

  it('validates providers: 422 for bad values naming the field, 400 for shape, 409 and 404', async () => {
    const cases: [Record<string, unknown>, number, string, RegExp][] = [
      [
        { ...corp(), name: 'x1', issuer: 'http://idp.example.com' },
        422,
        'VALIDATION_FAILED',
        /^issuer: must be/,
      ],
      [{ ...corp(), name: 'x2', issuer: 'not a url' }, 422, 'VALIDATION_FAILED', /^issuer: /],
      [
        { ...corp(), name: 'x3', scopes: 'email profile' },
        422,
        'VALIDATION_FAILED',
        /^scopes: must include openid/,
      ],
      [
        {
          ...corp(),
          name: 'x4',
          role_mapping: {
            claim: 'groups',
            rules: [{ value: 'a', role: 'editor', scope_type: 'project', scope: 'nope' }],
          },
        },
        422,
        'VALIDATION_FAILED',
        /^role_mapping\.rules\[0\]\.scope: no project is named 'nope'/,
      ],
      [
        {
          ...corp(),
          name: 'x5',
          role_mapping: {
            claim: 'groups',
            rules: [{ value: 'a', role: 'boss', scope_type: 'organization' }],
          },
        },
        422,
        'VALIDATION_FAILED',
        /^role_mapping\.rules\[0\]\.role: must be one of viewer, operator, editor, admin/,
      ],
      [{ ...corp(), name: 'x6', kind: 'ldap' }, 422, 'VALIDATION_FAILED', /^kind: must be one of oidc, saml/],
      [
        { ...corp(), name: 'x7', client_secret: undefined },
        400,
        'BAD_REQUEST',
        /^client_secret: is required/,
      ],
      [
        { ...corp(), name: 'x8', entry_point: 'https://idp.example.com/sso' },
        400,
        'BAD_REQUEST',
        /entry_point/,
      ],
      [corp(), 409, 'ALREADY_EXISTS', /corp/],
    ];
    for (const [body, status, code, message] of cases) {
      const res = await admin.call('POST', '/v1/sso/providers', body);
      expect(res.status, res.text).toBe(status);
      expect(res.body.code).toBe(code);
      expect(res.body.error).toMatch(message);
    }
    expect((await admin.call('GET', '/v1/sso/providers/nope')).body.code).toBe('NOT_FOUND');
    const { name: _name, ...unnamed } = corp();
    expect((await admin.call('PUT', '/v1/sso/providers/nope', unnamed)).status).toBe(404);
    expect((await admin.call('PUT', '/v1/sso/providers/corp', { ...unnamed, name: 'other' })).status).toBe(
      422,
    );
    expect((await admin.call('DELETE', '/v1/sso/providers/nope')).status).toBe(404);
    const listed = await admin.call('GET', '/v1/sso/providers');
    expect(listed.body.map((p: { name: string }) => p.name)).toEqual(['corp']);
  });

  it('documents the SSO routes in the OpenAPI document', async () => {
    const doc = (await admin.call('GET', '/v1/openapi.json')).body;
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/v1/sso/providers',
        '/v1/sso/providers/{name}',
        '/v1/auth/sso/providers',
        '/v1/auth/sso/{provider}/login',
        '/v1/auth/sso/{provider}/callback',
        '/v1/auth/sso/{provider}/acs',
        '/v1/auth/sso/{provider}/metadata',
      ]),
    );
    // Sign-in routes need no credentials; provider management does.
    expect(doc.paths['/v1/auth/sso/{provider}/login'].get.security).toEqual([]);
    expect(doc.paths['/v1/sso/providers'].post.security).toBeUndefined();
    expect(doc.paths['/v1/auth/sso/{provider}/acs'].post.requestBody.content).toHaveProperty(
      'application/x-www-form-urlencoded',
    );
  });

  it('keeps provider management to organization admins', async () => {
    const anonymous = new ApiCaller(service.url);
    expect((await anonymous.call('GET', '/v1/sso/providers')).status).toBe(401);
    expect((await anonymous.call('POST', '/v1/sso/providers', corp())).status).toBe(401);
    // The sign-in page's list is public and shows nothing but names and where to start.
    const available = await anonymous.call('GET', '/v1/auth/sso/providers');
    expect(available.body).toEqual([
      { name: 'corp', kind: 'oidc', login_url: `${publicUrl}/v1/auth/sso/corp/login` },
    ]);
  });

  it('redirects to the provider with PKCE (S256), state and nonce, binding the sign-in to the browser', async () => {
    const browser = new Browser(service.url);
    const start = await browser.get('/v1/auth/sso/corp/login');
    expect(start.status).toBe(302);
    expect(start.headers.get('cache-control')).toBe('no-store');
    const url = new URL(start.location as string);
    expect(`${url.origin}${url.pathname}`).toBe(`${idp.issuer}/auth`);
    const params = url.searchParams;
    expect(params.get('response_type')).toBe('code');
    expect(params.get('client_id')).toBe(idp.clientId);
    expect(params.get('redirect_uri')).toBe(`${publicUrl}/v1/auth/sso/corp/callback`);
    expect(params.get('scope')).toBe('openid email profile groups');
    expect(params.get('code_challenge_method')).toBe('S256');
    expect(params.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(params.get('state')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(params.get('nonce')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(browser.cookies.has('sso_browser')).toBe(true);
    const cookie = start.headers.getSetCookie().find((c) => c.startsWith('sso_browser=')) as string;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).toMatch(/Path=\/v1\/auth\/sso\//);
    // Only the HMAC of the state is stored, and the flow's data sealed.
    const flows = await query('SELECT state_hash, data_sealed FROM sso_login_flows');
    expect(flows.map((f) => f.state_hash)).not.toContain(params.get('state'));
    for (const flow of flows) {
      expect(flow.data_sealed).toMatch(/^v1\./);
      expect(flow.data_sealed).not.toContain(params.get('nonce'));
    }
  });

  let aliceId: string;

  it('signs in end to end: a user made at the first sign-in, a session cookie, the mapped role', async () => {
    const browser = new Browser(service.url);
    const callback = await throughProvider(browser, 'alice-sub');
    expect(`${callback.origin}${callback.pathname}`).toBe(`${publicUrl}/v1/auth/sso/corp/callback`);
    expect(callback.searchParams.get('code')).toBeTruthy();
    const done = await browser.get(callback.toString());
    expect(done.status, done.text).toBe(302);
    expect(done.location).toBe('/app/');
    const session = done.headers.getSetCookie().find((c) => c.startsWith('service_session=')) as string;
    expect(session).toMatch(/HttpOnly/);
    const me = await browser.caller().call('GET', '/v1/auth/session');
    expect(me.status, me.text).toBe(200);
    expect(me.body.user).toMatchObject({ email: 'alice@example.com', display_name: 'Alice Engineer' });
    expect(me.body.via).toBe('session');
    expect(me.body.projects).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'analytics', role: 'editor' })]),
    );
    aliceId = me.body.user.id;
    const [user] = await query('SELECT password_hash FROM users WHERE id = $1', [aliceId]);
    expect(user.password_hash).toBeNull();
    const identities = await query('SELECT issuer, subject FROM user_identities WHERE user_id = $1', [
      aliceId,
    ]);
    expect(identities).toEqual([{ issuer: idp.issuer, subject: 'alice-sub' }]);
    const bindings = await query(
      'SELECT role, scope_type, scope_id, source FROM role_bindings WHERE user_id = $1',
      [aliceId],
    );
    expect(bindings).toEqual([
      { role: 'editor', scope_type: 'project', scope_id: analyticsId, source: 'sso:corp' },
    ]);
    const events = await ssoEvents();
    expect(events.at(-1)).toMatchObject({
      outcome: 'success',
      actor_type: 'user',
      actor_name: 'alice@example.com',
      details: { provider: 'corp' },
    });
    // A session started by SSO works for the rest of the API, within the roles it was given.
    expect((await browser.caller().call('GET', '/v1/pipelines')).status).toBe(200);
    expect((await browser.caller().call('GET', '/v1/sso/providers')).status).toBe(403);
  });

  it('matches the same user at the next sign-in and replaces the mapped roles, keeping manual ones', async () => {
    await query(
      `INSERT INTO role_bindings (user_id, role, scope_type, scope_id, source)
       VALUES ($1, 'operator', 'project', '00000000-0000-4000-8000-000000000002', 'manual')`,
      [aliceId],
    );
    (idp.accounts.get('alice-sub') as { groups: string[] }).groups = ['everyone'];
    const browser = await signIn('alice-sub');
    const me = await browser.caller().call('GET', '/v1/auth/session');
    expect(me.body.user.id).toBe(aliceId);
    const bindings = await query(
      'SELECT role, scope_type, scope_id, source FROM role_bindings WHERE user_id = $1 ORDER BY source, role',
      [aliceId],
    );
    // data-eng is gone: its editor binding too; no rule matched, so the default role applies.
    expect(bindings).toEqual([
      {
        role: 'operator',
        scope_type: 'project',
        scope_id: '00000000-0000-4000-8000-000000000002',
        source: 'manual',
      },
      {
        role: 'viewer',
        scope_type: 'project',
        scope_id: '00000000-0000-4000-8000-000000000002',
        source: 'sso:corp',
      },
    ]);
    expect(await query('SELECT id FROM users WHERE lower(email) = $1', ['alice@example.com'])).toHaveLength(
      1,
    );
    (idp.accounts.get('alice-sub') as { groups: string[] }).groups = ['data-eng'];
    await signIn('alice-sub');
    const again = await query("SELECT role FROM role_bindings WHERE user_id = $1 AND source = 'sso:corp'", [
      aliceId,
    ]);
    expect(again).toEqual([{ role: 'editor' }]);
  });

  it('never maps away the last organization admin: bootstrap must not open again', async () => {
    const withPlatform = corp();
    withPlatform.role_mapping.rules.push({
      value: 'platform',
      role: 'admin',
      scope_type: 'organization',
    } as never);
    expect((await admin.call('PUT', '/v1/sso/providers/corp', withPlatform)).status).toBe(200);
    const alice = idp.accounts.get('alice-sub') as { groups: string[] };
    alice.groups = ['platform'];
    await signIn('alice-sub');
    const orgAdmin = () =>
      query(
        "SELECT 1 FROM role_bindings WHERE user_id = $1 AND role = 'admin' AND scope_type = 'organization'",
        [aliceId],
      );
    expect(await orgAdmin()).toHaveLength(1);
    await query('UPDATE users SET disabled = true WHERE email = $1', [ADMIN.email]);
    try {
      // Alice is the only admin left; the group is gone at the provider, the admin binding stays.
      alice.groups = ['everyone'];
      const browser = await signIn('alice-sub');
      expect(await orgAdmin()).toHaveLength(1);
      expect((await browser.caller().call('GET', '/v1/auth/session')).body.organization_admin).toBe(true);
    } finally {
      await query('UPDATE users SET disabled = false WHERE email = $1', [ADMIN.email]);
    }
    // With another admin back, the next sign-in takes it away as the provider says.
    await signIn('alice-sub');
    expect(await orgAdmin()).toHaveLength(0);
    expect((await admin.call('PUT', '/v1/sso/providers/corp', corp())).status).toBe(200);
    alice.groups = ['data-eng'];
  });

  it('returns to a path on this service, and refuses any other return_to', async () => {
    const browser = new Browser(service.url);
    const callback = await throughProvider(
      browser,
      'alice-sub',
      `/v1/auth/sso/corp/login?return_to=${encodeURIComponent('/app/pipelines?tab=all')}`,
    );
    const done = await browser.get(callback.toString());
    expect(done.location).toBe('/app/pipelines?tab=all');
    for (const target of [
      'https://evil.example/',
      '//evil.example/x',
      '/\\evil.example',
      'app',
      '/a\tb',
      // Each becomes `//evil.example` only once dot segments are resolved.
      '/.//evil.example',
      '/..//evil.example',
      '/%2e//evil.example',
      '/a/..//evil.example',
      '/%2f%2fevil.example',
    ]) {
      const res = await new Browser(service.url).get(
        `/v1/auth/sso/corp/login?return_to=${encodeURIComponent(target)}`,
      );
      expect(res.status, target).toBe(400);
      expect(JSON.parse(res.text)).toMatchObject({ code: 'BAD_REQUEST' });
    }
  });

  it('refuses a tampered state, a replayed callback and a callback in another browser', async () => {
    const before = (await ssoEvents()).length;
    const expectRefused = async (browser: Browser, url: string) => {
      const res = await browser.get(url);
      expect(res.status, res.text).toBe(401);
      const body = JSON.parse(res.text);
      expect(Object.keys(body).sort()).toEqual(['code', 'error']);
      expect(body.code).toBe('SSO_FAILED');
      expect(res.headers.getSetCookie().some((c) => c.startsWith('service_session='))).toBe(false);
      return body.error as string;
    };

    const tamperedBrowser = new Browser(service.url);
    const tampered = await throughProvider(tamperedBrowser, 'alice-sub');
    const state = tampered.searchParams.get('state') as string;
    // Its end changed, whatever it was.
    const ending = state.endsWith('xx') ? 'yy' : 'xx';
    tampered.searchParams.set('state', `${state.slice(0, -2)}${ending}`);
    expect(await expectRefused(tamperedBrowser, tampered.toString())).toMatch(
      /unknown, expired or already used/,
    );

    const browser = new Browser(service.url);
    const callback = await throughProvider(browser, 'alice-sub');
    expect((await browser.get(callback.toString())).status).toBe(302);
    await expectRefused(browser, callback.toString());

    const started = new Browser(service.url);
    const elsewhere = await throughProvider(started, 'alice-sub');
    const other = new Browser(service.url);
    expect(await expectRefused(other, elsewhere.toString())).toMatch(/another browser/);
    // Used up by that attempt: the right browser cannot complete it afterwards either.
    await expectRefused(started, elsewhere.toString());

    const events = (await ssoEvents()).slice(before);
    expect(events.map((e) => [e.outcome, e.actor_type, e.details.reason])).toEqual([
      ['failure', 'anonymous', 'unknown_flow'],
      ['success', 'user', undefined],
      ['failure', 'anonymous', 'unknown_flow'],
      ['denied', 'anonymous', 'browser_mismatch'],
      ['failure', 'anonymous', 'unknown_flow'],
    ]);
    for (const event of events) expect(event.details.provider).toBe('corp');
  });

  it('refuses an identity provider error, a code exchange that fails, and an expired flow', async () => {
    const browser = new Browser(service.url);
    const start = await browser.get('/v1/auth/sso/corp/login');
    const state = new URL(start.location as string).searchParams.get('state') as string;
    const denied = await browser.get(
      `/v1/auth/sso/corp/callback?error=access_denied&error_description=no&state=${state}&iss=${encodeURIComponent(idp.issuer)}`,
    );
    expect(denied.status).toBe(401);
    expect(JSON.parse(denied.text).error).toMatch(/did not sign you in/);

    const forged = new Browser(service.url);
    const forgedStart = await forged.get('/v1/auth/sso/corp/login');
    const forgedState = new URL(forgedStart.location as string).searchParams.get('state') as string;
    const bad = await forged.get(
      `/v1/auth/sso/corp/callback?code=made-up&state=${forgedState}&iss=${encodeURIComponent(idp.issuer)}`,
    );
    expect(bad.status).toBe(401);
    expect(JSON.parse(bad.text).error).toMatch(/could not be verified/);

    const late = new Browser(service.url);
    const lateCallback = await throughProvider(late, 'alice-sub');
    await query("UPDATE sso_login_flows SET expires_at = now() - interval '1 second'");
    const expired = await late.get(lateCallback.toString());
    expect(expired.status).toBe(401);
    const reasons = (await ssoEvents()).slice(-3).map((e) => e.details.reason);
    expect(reasons).toEqual(['idp_refused', 'invalid_response', 'unknown_flow']);
  });

  it('does not link an existing user by e-mail, and refuses a disabled user', async () => {
    await query(
      `INSERT INTO users (organization_id, email, display_name)
       VALUES ('00000000-0000-4000-8000-000000000001', 'bob@example.com', 'Local Bob')`,
    );
    idp.accounts.set('bob-sub', {
      sub: 'bob-sub',
      email: 'Bob@Example.com',
      email_verified: true,
      name: 'Bob',
    });
    const bob = new Browser(service.url);
    const res = await bob.get((await throughProvider(bob, 'bob-sub')).toString());
    expect(res.status).toBe(401);
    expect(JSON.parse(res.text).error).toMatch(/already exists and is not linked/);
    expect(await query("SELECT * FROM user_identities WHERE subject = 'bob-sub'")).toEqual([]);
    expect((await ssoEvents()).at(-1)).toMatchObject({
      outcome: 'denied',
      actor_type: 'anonymous',
      details: { provider: 'corp', reason: 'email_not_linked' },
    });

    await query('UPDATE users SET disabled = true WHERE id = $1', [aliceId]);
    const alice = new Browser(service.url);
    const refused = await alice.get((await throughProvider(alice, 'alice-sub')).toString());
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.text).error).toMatch(/disabled/);
    await query('UPDATE users SET disabled = false WHERE id = $1', [aliceId]);
  });

  it('replaces a provider keeping its secret when none is sent; a disabled provider offers no sign-in', async () => {
    const { client_secret: _secret, ...withoutSecret } = corp();
    const replaced = await admin.call('PUT', '/v1/sso/providers/corp', { ...withoutSecret, enabled: false });
    expect(replaced.status, replaced.text).toBe(200);
    expect(replaced.body).toMatchObject({ enabled: false, client_secret_set: true });
    const [row] = await query("SELECT secrets_sealed FROM sso_providers WHERE name = 'corp'");
    expect(row.secrets_sealed).toMatch(/^v1\./);
    expect((await new Browser(service.url).get('/v1/auth/sso/corp/login')).status).toBe(404);
    expect((await new Browser(service.url).get('/v1/auth/sso/nope/login')).status).toBe(404);
    const kind = await admin.call('PUT', '/v1/sso/providers/corp', { ...corp(), kind: 'saml' });
    expect(kind.status).toBe(422);
    expect((await admin.call('PUT', '/v1/sso/providers/corp', { ...corp(), enabled: true })).status).toBe(
      200,
    );
    await signIn('alice-sub');
  });

  it('deletes a provider with the role bindings its sign-ins made', async () => {
    expect((await admin.call('DELETE', '/v1/sso/providers/corp')).status).toBe(204);
    expect(await query("SELECT * FROM role_bindings WHERE source = 'sso:corp'")).toEqual([]);
    expect(
      await query("SELECT * FROM role_bindings WHERE user_id = $1 AND source = 'manual'", [aliceId]),
    ).toHaveLength(1);
    expect(await query('SELECT * FROM sso_login_flows')).toEqual([]);
    const audit = await query(
      "SELECT action, outcome FROM audit_events WHERE action LIKE 'sso_provider.%' ORDER BY id",
    );
    expect(audit.map((e) => e.action)).toEqual(
      expect.arrayContaining(['sso_provider.create', 'sso_provider.update', 'sso_provider.delete']),
    );
  });

  it('answers 401 SSO_FAILED when the provider cannot be reached to start a sign-in', async () => {
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const created = await admin.call('POST', '/v1/sso/providers', {
      ...corp(),
      name: 'down',
      issuer: nobody,
    });
    expect(created.status).toBe(201);
    const res = await new Browser(service.url).get('/v1/auth/sso/down/login');
    expect(res.status).toBe(401);
    expect(JSON.parse(res.text)).toEqual({
      code: 'SSO_FAILED',
      error: 'the identity provider could not be reached; try again later',
    });
    expect(await query('SELECT * FROM sso_login_flows')).toEqual([]);
  });
});
