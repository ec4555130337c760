import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type ApiCaller, enableAuth } from '../support/auth-client.js';
import {
  AuthFixtures,
  DEFAULT_PROJECT_ID,
  type FixtureUser,
  organizationScope,
  signIn,
} from '../support/auth-fixtures.js';
import { openLive } from '../support/live-client.js';
import { createDatabase } from '../support/pg-cluster.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const cluster = inject('pgClusters')[0] as { adminUrl: string };

/** RFC 6455 policy violation: the close code of a socket whose credential ended. */
const CREDENTIAL_ENDED = 1008;

describe('authentication enabled: live sockets follow their credential, and caps', () => {
  let service: TestService;
  let fixtures: AuthFixtures;
  let admin: ApiCaller;
  let n = 0;

  beforeAll(async () => {
    const storeUrl = await createDatabase(cluster.adminUrl, 'auth_live_limits');
    const config = enableAuth(testConfig(storeUrl));
    service = await startTestService({
      ...config,
      auth: { ...config.auth, maxTokensPerUser: 3 },
      http: { ...config.http, liveSocketsPerUser: 2 },
    });
    fixtures = await AuthFixtures.open(storeUrl);
    admin = await signIn(
      service.url,
      await fixtures.userWith('root@example.com', 'admin', organizationScope),
    );
  });
  afterAll(async () => {
    await fixtures?.close();
    await service?.stop();
  });

  /** A viewer of the default project, bound through the API so that the binding has an id. */
  async function viewer(): Promise<{ user: FixtureUser; bindingId: string; browser: ApiCaller }> {
    const user = await fixtures.user(`viewer${++n}@example.com`);
    const bound = await admin.call('POST', '/v1/role-bindings', {
      user_id: user.id,
      role: 'viewer',
      scope_type: 'project',
      scope_id: DEFAULT_PROJECT_ID,
    });
    expect(bound.status, bound.text).toBe(201);
    return { user, bindingId: bound.body.id, browser: await signIn(service.url, user) };
  }

  async function tokenOf(browser: ApiCaller): Promise<{ id: string; token: string }> {
    const made = await browser.call('POST', '/v1/tokens', { name: `t${++n}` });
    expect(made.status, made.text).toBe(201);
    return made.body;
  }

  async function liveWith(headers: Record<string, string>) {
    const opened = await openLive(service.url, headers);
    expect(opened.socket, `live feed opened: ${opened.status} ${opened.body}`).toBeDefined();
    return opened;
  }

  it('closes a socket when its token is revoked', async () => {
    const { browser } = await viewer();
    const token = await tokenOf(browser);
    const live = await liveWith({ authorization: `Bearer ${token.token}` });
    const kept = await liveWith({ authorization: `Bearer ${(await tokenOf(browser)).token}` });
    expect((await browser.call('DELETE', `/v1/tokens/${token.id}`)).status).toBe(204);
    expect(await live.closed).toBe(CREDENTIAL_ENDED);
    // Another token of the same user still streams.
    expect(kept.socket?.readyState).toBe(kept.socket?.OPEN);
    kept.socket?.close();
    await kept.closed;
  });

  it('closes a socket when its role binding is deleted', async () => {
    const { browser, bindingId } = await viewer();
    const live = await liveWith({ cookie: browser.cookie as string, origin: service.url });
    expect((await admin.call('DELETE', `/v1/role-bindings/${bindingId}`)).status).toBe(204);
    expect(await live.closed).toBe(CREDENTIAL_ENDED);
  });

  it('closes a socket when its user is disabled', async () => {
    const { user, browser } = await viewer();
    const live = await liveWith({ authorization: `Bearer ${(await tokenOf(browser)).token}` });
    const disabled = await admin.call('PATCH', `/v1/users/${user.id}`, { disabled: true });
    expect(disabled.status, disabled.text).toBe(200);
    expect(await live.closed).toBe(CREDENTIAL_ENDED);
  });

  it('closes a socket when its session ends', async () => {
    const { browser } = await viewer();
    const live = await liveWith({ cookie: browser.cookie as string, origin: service.url });
    expect((await browser.call('POST', '/v1/auth/logout')).status).toBeLessThan(300);
    expect(await live.closed).toBe(CREDENTIAL_ENDED);
  });

  it('caps the active tokens of a user (TOO_MANY_TOKENS), counting revoked ones out', async () => {
    const { browser } = await viewer();
    const tokens = [await tokenOf(browser), await tokenOf(browser), await tokenOf(browser)];
    const fourth = await browser.call('POST', '/v1/tokens', { name: 'one-too-many' });
    expect(fourth.status).toBe(409);
    expect(fourth.body.code).toBe('TOO_MANY_TOKENS');
    expect((await browser.call('DELETE', `/v1/tokens/${tokens[0]?.id}`)).status).toBe(204);
    expect((await browser.call('POST', '/v1/tokens', { name: 'after-revoke' })).status).toBe(201);
  });

  it('caps the live sockets of a user (TOO_MANY_SOCKETS)', async () => {
    const { browser } = await viewer();
    const token = await tokenOf(browser);
    const open = [
      await liveWith({ authorization: `Bearer ${token.token}` }),
      await liveWith({ cookie: browser.cookie as string, origin: service.url }),
    ];
    const third = await openLive(service.url, { authorization: `Bearer ${token.token}` });
    expect(third.status).toBe(429);
    expect(JSON.parse(third.body as string).code).toBe('TOO_MANY_SOCKETS');
    // Another user is not held to this one's cap.
    const other = await viewer();
    const theirs = await liveWith({ cookie: other.browser.cookie as string, origin: service.url });
    for (const o of [...open, theirs]) {
      o.socket?.close();
      await o.closed;
    }
  });
});
