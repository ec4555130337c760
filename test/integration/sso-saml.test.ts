import { inflateRawSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Config } from '../../src/config/options.js';
import { freePort } from '../../src/net/free-port.js';
import { ADMIN, ApiCaller, enableAuth } from '../support/auth-client.js';
import { createDatabase } from '../support/pg-cluster.js';
import {
  makeSigningPair,
  type ResponseOptions,
  type SamlPost,
  type SamlUser,
  startSamlIdp,
  type TestSamlIdp,
} from '../support/saml-idp.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';
import { queryStore } from '../support/store-query.js';

const cluster = inject('pgClusters')[0] as { adminUrl: string };

const ALICE: SamlUser = {
  nameId: 'alice-persistent-id',
  email: 'alice@example.com',
  name: 'Alice Analyst',
  groups: ['data-eng', 'everyone'],
};

describe('single sign-on with SAML 2.0', () => {
  let service: TestService;
  let idp: TestSamlIdp;
  let storeUrl: string;
  let admin: ApiCaller;
  let publicUrl: string;

  const query = <T = any>(text: string, values: unknown[] = []) => queryStore<T>(storeUrl, text, values);

  /** Starts a sign-in; returns the redirect to the IdP. */
  async function start(provider = 'okta', returnTo?: string): Promise<string> {
    const query = returnTo ? `?return_to=${encodeURIComponent(returnTo)}` : '';
    const res = await fetch(`${service.url}/v1/auth/sso/${provider}/login${query}`, { redirect: 'manual' });
    expect(res.status, await res.text()).toBe(302);
    return res.headers.get('location') as string;
  }

  /** Posts the IdP's form to the ACS URL, as the browser's auto-submit does. */
  async function post(form: Partial<SamlPost> & { acsUrl?: string }) {
    const body = new URLSearchParams();
    if (form.SAMLResponse !== undefined) body.set('SAMLResponse', form.SAMLResponse);
    if (form.RelayState !== undefined) body.set('RelayState', form.RelayState);
    const res = await fetch(form.acsUrl ?? `${service.url}/v1/auth/sso/okta/acs`, {
      method: 'POST',
      redirect: 'manual',
      // A cross-site form post from the IdP's page.
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        origin: new URL(idp.entryPoint).origin,
      },
      body,
    });
    const text = await res.text();
    const session = res.headers
      .getSetCookie()
      .find((c) => c.startsWith('service_session='))
      ?.split(';')[0];
    return { status: res.status, location: res.headers.get('location'), text, session, headers: res.headers };
  }

  async function expectRefused(form: SamlPost, message: RegExp, reason: string) {
    const res = await post(form);
    expect(res.status, res.text).toBe(401);
    const body = JSON.parse(res.text);
    expect(Object.keys(body).sort()).toEqual(['code', 'error']);
    expect(body.code).toBe('SSO_FAILED');
    expect(body.error).toMatch(message);
    expect(res.session).toBeUndefined();
    const [event] = await query(
      "SELECT outcome, actor_type, details FROM audit_events WHERE action = 'auth.sso_login' ORDER BY id DESC LIMIT 1",
    );
    expect(event).toMatchObject({ actor_type: 'anonymous', details: { provider: 'okta', reason } });
  }

  /** A sign-in through the IdP up to (not including) the post to the ACS URL. */
  async function throughIdp(user: SamlUser = ALICE, options?: ResponseOptions) {
    return idp.signIn(await start(), user, options);
  }

  beforeAll(async () => {
    storeUrl = await createDatabase(cluster.adminUrl, 'sso_saml');
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    idp = await startSamlIdp();
    const config = enableAuth(testConfig(storeUrl));
    service = await startTestService({
      ...config,
      listen: { host: '127.0.0.1', port },
      auth: { ...config.auth, publicUrl, ssoAllowInsecureIssuers: true } as Config['auth'],
    });
    admin = new ApiCaller(service.url);
    expect((await admin.call('POST', '/v1/admin/bootstrap', ADMIN)).status).toBe(201);
    expect((await admin.login(ADMIN.email, ADMIN.password)).status).toBe(200);
  });
  afterAll(async () => {
    await service?.stop();
    await idp?.stop();
  });

  const okta = () => ({
    name: 'okta',
    kind: 'saml',
    entry_point: idp.entryPoint,
    idp_issuer: idp.entityId,
    idp_certificates: [idp.certificate],
    role_mapping: {
      claim: 'groups',
      rules: [
        { value: 'data-eng', role: 'operator', scope_type: 'workspace', scope: 'default' },
        { value: 'platform', role: 'admin', scope_type: 'organization' },
      ],
    },
  });

  it('creates a SAML provider: the SP entity id derives from the public URL', async () => {
    const created = await admin.call('POST', '/v1/sso/providers', okta());
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({
      name: 'okta',
      kind: 'saml',
      entry_point: idp.entryPoint,
      idp_issuer: idp.entityId,
      sp_entity_id: `${publicUrl}/v1/auth/sso/okta/metadata`,
      sp_private_key_set: false,
      acs_url: `${publicUrl}/v1/auth/sso/okta/acs`,
      metadata_url: `${publicUrl}/v1/auth/sso/okta/metadata`,
      role_mapping: {
        claim: 'groups',
        rules: [
          { value: 'data-eng', role: 'operator', scope_type: 'workspace', scope: 'default' },
          { value: 'platform', role: 'admin', scope_type: 'organization' },
        ],
      },
    });
    expect(created.body.idp_certificates).toHaveLength(1);
    const metadata = await fetch(`${service.url}/v1/auth/sso/okta/metadata`);
    expect(metadata.status).toBe(200);
    expect(metadata.headers.get('content-type')).toMatch(/^application\/samlmetadata\+xml/);
    const xml = await metadata.text();
    expect(xml).toContain(`entityID="${publicUrl}/v1/auth/sso/okta/metadata"`);
    expect(xml).toContain(`Location="${publicUrl}/v1/auth/sso/okta/acs"`);
    expect(xml).toContain('WantAssertionsSigned="true"');
  });

  it('refuses certificates that are not certificates, and scopes that do not exist', async () => {
    const bad = await admin.call('POST', '/v1/sso/providers', {
      ...okta(),
      name: 'bad',
      idp_certificates: [idp.certificate, 'not a certificate'],
    });
    expect(bad.status).toBe(422);
    expect(bad.body.error).toMatch(/^idp_certificates\[1\]: must be a PEM certificate/);
    const scope = await admin.call('POST', '/v1/sso/providers', {
      ...okta(),
      name: 'bad',
      role_mapping: { claim: 'groups', rules: [{ value: 'x', role: 'viewer', scope_type: 'workspace' }] },
    });
    expect(scope.status).toBe(422);
    expect(scope.body.error).toMatch(
      /^role_mapping\.rules\[0\]\.scope: is required for scope_type workspace/,
    );
    const entry = await admin.call('POST', '/v1/sso/providers', {
      ...okta(),
      name: 'bad',
      entry_point: 'ftp://x',
    });
    expect(entry.status).toBe(422);
    expect(entry.body.error).toMatch(/^entry_point: must be an https URL/);
  });

  let aliceId: string;
  let signedIn: SamlPost;

  it('signs in end to end with a signed assertion: AuthnRequest, RelayState, session, mapped role', async () => {
    const redirect = await start();
    const request = idp.parseRequest(redirect);
    expect(request.id).toMatch(/^_[0-9a-f]{40}$/);
    expect(request.issuer).toBe(`${publicUrl}/v1/auth/sso/okta/metadata`);
    expect(request.acsUrl).toBe(`${publicUrl}/v1/auth/sso/okta/acs`);
    expect(request.relayState).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(request.signed).toBe(false);
    signedIn = await idp.signIn(redirect, ALICE);
    expect(signedIn.acsUrl).toBe(`${publicUrl}/v1/auth/sso/okta/acs`);
    const res = await post(signedIn);
    expect(res.status, res.text).toBe(302);
    expect(res.location).toBe('/app/');
    expect(res.session).toBeDefined();
    const me = new ApiCaller(service.url);
    me.cookie = res.session;
    const session = await me.call('GET', '/v1/auth/session');
    expect(session.status).toBe(200);
    expect(session.body.user).toMatchObject({ email: 'alice@example.com', display_name: 'Alice Analyst' });
    expect(session.body.role).toBe('operator');
    aliceId = session.body.user.id;
    expect(await query('SELECT issuer, subject FROM user_identities WHERE user_id = $1', [aliceId])).toEqual([
      { issuer: idp.entityId, subject: 'alice-persistent-id' },
    ]);
    expect(
      await query('SELECT role, scope_type, source FROM role_bindings WHERE user_id = $1', [aliceId]),
    ).toEqual([{ role: 'operator', scope_type: 'workspace', source: 'sso:okta' }]);
    // An operator is no organization admin.
    expect((await me.call('GET', '/v1/sso/providers')).status).toBe(403);
    const [event] = await query(
      "SELECT outcome, actor_type, actor_id, actor_name FROM audit_events WHERE action = 'auth.sso_login' ORDER BY id DESC LIMIT 1",
    );
    expect(event).toEqual({
      outcome: 'success',
      actor_type: 'user',
      actor_id: aliceId,
      actor_name: 'alice@example.com',
    });
  });

  it('refuses the same response posted again (replay)', async () => {
    await expectRefused(signedIn, /unknown, expired or already used/, 'unknown_flow');
  });

  it('refuses an unsigned assertion', async () => {
    await expectRefused(
      await throughIdp(ALICE, { sign: false }),
      /not signed by a trusted certificate/,
      'invalid_signature',
    );
  });

  it('refuses an assertion signed by a key it does not trust', async () => {
    const stranger = makeSigningPair('someone else');
    await expectRefused(
      await throughIdp(ALICE, { signWith: stranger }),
      /not signed by a trusted/,
      'invalid_signature',
    );
  });

  it('refuses a tampered assertion: NameID or an attribute changed after signing', async () => {
    await expectRefused(
      await throughIdp(ALICE, {
        afterSigning: (xml) => xml.replace('alice-persistent-id', 'admin-persistent-id'),
      }),
      /not signed by a trusted certificate/,
      'invalid_signature',
    );
    await expectRefused(
      await throughIdp(ALICE, {
        afterSigning: (xml) =>
          xml.replace('>everyone</saml:AttributeValue>', '>platform</saml:AttributeValue>'),
      }),
      /not signed by a trusted certificate/,
      'invalid_signature',
    );
    // A second, unsigned assertion smuggled beside the signed one (signature wrapping).
    await expectRefused(
      await throughIdp(ALICE, {
        afterSigning: (xml) => {
          const assertion = /<saml:Assertion[\s\S]*<\/saml:Assertion>/.exec(xml)?.[0] as string;
          const forged = assertion
            .replace(/<ds:Signature[\s\S]*<\/ds:Signature>/, '')
            .replace('alice', 'mallory');
          return xml.replace('</samlp:Response>', `${forged}</samlp:Response>`);
        },
      }),
      /not signed by a trusted certificate/,
      'invalid_signature',
    );
    expect(
      await query("SELECT role FROM role_bindings WHERE source = 'sso:okta' AND role = 'admin'"),
    ).toEqual([]);
  });

  it('refuses an assertion meant for another service (audience), another ACS URL or from another issuer', async () => {
    await expectRefused(
      await throughIdp(ALICE, { audience: 'https://other-service.example.com' }),
      /meant for another service/,
      'audience_mismatch',
    );
    await expectRefused(
      await throughIdp(ALICE, { recipient: 'https://other-service.example.com/acs' }),
      /meant for another address/,
      'recipient_mismatch',
    );
    await expectRefused(
      await throughIdp(ALICE, { issuer: 'https://evil-idp.example.com' }),
      /names another issuer/,
      'issuer_mismatch',
    );
  });

  it('refuses unsolicited responses and responses to another sign-in attempt', async () => {
    const form = await throughIdp();
    await expectRefused(
      { ...form, RelayState: undefined },
      /unknown, expired or already used/,
      'unknown_flow',
    );
    // A response made for one request, posted with the RelayState of another sign-in.
    const first = idp.parseRequest(await start());
    const second = await start();
    const mismatched = idp.respond(first, ALICE);
    await expectRefused(
      { acsUrl: form.acsUrl, SAMLResponse: mismatched, RelayState: idp.parseRequest(second).relayState },
      /not for this sign-in attempt/,
      'in_response_to_mismatch',
    );
    // The response names this sign-in's request, but the signed assertion does not: an assertion
    // captured elsewhere, wrapped in a new (unsigned) response envelope.
    const fourth = idp.parseRequest(await start());
    await expectRefused(
      {
        acsUrl: form.acsUrl,
        SAMLResponse: idp.respond(fourth, ALICE, { confirmationInResponseTo: null }),
        RelayState: fourth.relayState,
      },
      /not for this sign-in attempt/,
      'in_response_to_mismatch',
    );
    // No InResponseTo at all (IdP-initiated), with a valid RelayState.
    const third = idp.parseRequest(await start());
    await expectRefused(
      {
        acsUrl: form.acsUrl,
        SAMLResponse: idp.respond(third, ALICE, { inResponseTo: null }),
        RelayState: third.relayState,
      },
      /not for this sign-in attempt/,
      'in_response_to_mismatch',
    );
  });

  it('refuses an expired assertion', async () => {
    await expectRefused(
      await throughIdp(ALICE, { notBefore: -20 * 60_000, notOnOrAfter: -10 * 60_000 }),
      /has expired/,
      'expired_response',
    );
  });

  it('matches the same user at the next sign-in and follows group changes; returns to return_to', async () => {
    const form = await idp.signIn(await start('okta', '/app/pipelines'), { ...ALICE, groups: ['platform'] });
    const res = await post(form);
    expect(res.status, res.text).toBe(302);
    expect(res.location).toBe('/app/pipelines');
    expect(await query('SELECT role, scope_type FROM role_bindings WHERE user_id = $1', [aliceId])).toEqual([
      { role: 'admin', scope_type: 'organization' },
    ]);
    expect(await query("SELECT id FROM users WHERE email = 'alice@example.com'")).toEqual([{ id: aliceId }]);
  });

  it('keeps form bodies to the ACS route: the rest of the API still refuses them with 415', async () => {
    const form = await fetch(`${service.url}/v1/sso/providers`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        cookie: admin.cookie as string,
        origin: service.url,
      },
      body: 'name=x&kind=saml',
    });
    expect(form.status).toBe(415);
    expect(((await form.json()) as { code: string }).code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('signs AuthnRequests with an SP private key, which is never returned and is stored sealed', async () => {
    const sp = makeSigningPair('replicator sp');
    const created = await admin.call('POST', '/v1/sso/providers', {
      ...okta(),
      name: 'okta-signed',
      sp_entity_id: 'urn:replicator:test',
      sp_private_key: sp.privateKey,
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({ sp_private_key_set: true, sp_entity_id: 'urn:replicator:test' });
    const keyBody = sp.privateKey.split('\n')[1] as string;
    for (const answer of [created, await admin.call('GET', '/v1/sso/providers/okta-signed')]) {
      expect(answer.text).not.toContain(keyBody);
    }
    const [row] = await query(
      "SELECT settings, secrets_sealed FROM sso_providers WHERE name = 'okta-signed'",
    );
    expect(row.secrets_sealed).toMatch(/^v1\./);
    expect(row.secrets_sealed).not.toContain(keyBody);
    expect(JSON.stringify(row.settings)).not.toContain(keyBody);
    const redirect = await start('okta-signed');
    const request = idp.parseRequest(redirect);
    expect(request.signed).toBe(true);
    expect(new URL(redirect).searchParams.get('SigAlg')).toBe(
      'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
    );
    expect(
      inflateRawSync(
        Buffer.from(new URL(redirect).searchParams.get('SAMLRequest') as string, 'base64'),
      ).toString(),
    ).toContain('urn:replicator:test');
    // Replacing without the key keeps it; null removes it.
    const kept = await admin.call('PUT', '/v1/sso/providers/okta-signed', { ...okta(), name: undefined });
    expect(kept.body.sp_private_key_set).toBe(true);
    const removed = await admin.call('PUT', '/v1/sso/providers/okta-signed', {
      ...okta(),
      name: undefined,
      sp_private_key: null,
    });
    expect(removed.body.sp_private_key_set).toBe(false);
    expect(
      (await query("SELECT secrets_sealed FROM sso_providers WHERE name = 'okta-signed'"))[0].secrets_sealed,
    ).toBeNull();
  });
});
