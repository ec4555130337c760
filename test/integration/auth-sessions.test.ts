import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Config } from '../../src/config/options.js';
import { type Answer, ApiCaller, enableAuth } from '../support/auth-client.js';
import {
  AuthFixtures,
  DEFAULT_PROJECT_ID,
  FIXTURE_PASSWORD,
  type FixtureUser,
  organizationScope,
  projectScope,
  signIn,
  unreachableConnection,
  writeSecretFile,
} from '../support/auth-fixtures.js';
import { createDatabase } from '../support/pg-cluster.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

const cluster = inject('pgClusters')[0] as { adminUrl: string };

const UNAUTHENTICATED = '{"error":"unauthenticated"}';
const TTL_MS = 10 * 60_000;

function expectUnauthenticated(res: Answer, what: string) {
  expect(res.status, what).toBe(401);
  expect(res.text, what).toBe(UNAUTHENTICATED);
}

/** A caller of `base` presenting a session cookie obtained elsewhere, with `base` as its Origin. */
function withCookie(base: string, cookie: string | undefined): ApiCaller {
  const caller = new ApiCaller(base);
  caller.cookie = cookie;
  return caller;
}

function sessionCookieOf(res: Answer): string {
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith('service_session='));
  expect(cookie, 'a session cookie is set').toBeDefined();
  return cookie as string;
}

/**
 * Three instances on one store: `main` and `peer` share the master key (a fleet); `stranger` has a
 * key of its own, and short session lifetimes (2 s sliding, 5 s at most) with Secure cookies.
 */
describe('authentication enabled: sessions', () => {
  let main: TestService;
  let peer: TestService;
  let stranger: TestService;
  let fixtures: AuthFixtures;
  let metricsToken: string;
  let orgAdmin: FixtureUser;
  let editor: FixtureUser;
  /** The organization admin, signed in on main. */
  let adminOnMain: ApiCaller;

  beforeAll(async () => {
    const storeUrl = await createDatabase(cluster.adminUrl, 'auth_sessions');
    const mainConfig = enableAuth(testConfig(storeUrl));
    const metricsTokenFile = join(mainConfig.dataDir, 'metrics.token');
    metricsToken = writeSecretFile(metricsTokenFile);
    const auth: Config['auth'] = {
      ...mainConfig.auth,
      sessionTtlMs: TTL_MS,
      sessionMaxLifetimeMs: 60 * 60_000,
      metricsTokenFile,
    };
    main = await startTestService({ ...mainConfig, auth });
    // The same store and master key, another data directory.
    peer = await startTestService({ ...testConfig(storeUrl), auth });
    const strangerConfig = enableAuth(testConfig(storeUrl));
    stranger = await startTestService({
      ...strangerConfig,
      auth: {
        ...strangerConfig.auth,
        sessionTtlMs: 2_000,
        sessionMaxLifetimeMs: 5_000,
        cookieSecure: 'always',
      },
    });
    fixtures = await AuthFixtures.open(storeUrl);
    orgAdmin = await fixtures.userWith('root@example.com', 'admin', organizationScope);
    editor = await fixtures.userWith('editor@example.com', 'editor', projectScope(DEFAULT_PROJECT_ID));
    adminOnMain = await signIn(main.url, orgAdmin);
  });
  afterAll(async () => {
    await fixtures?.close();
    await Promise.all([main?.stop(), peer?.stop(), stranger?.stop()]);
  });

  /** Seconds from the store's now() to a session's expiries (the user has one session). */
  async function expiriesOf(user: FixtureUser) {
    const { rows } = await fixtures.query<{ expires_in: number; absolute_in: number; seen_ago: number }>(
      `SELECT extract(epoch FROM expires_at - now())::float8 AS expires_in,
              extract(epoch FROM absolute_expires_at - now())::float8 AS absolute_in,
              extract(epoch FROM now() - last_seen_at)::float8 AS seen_ago
       FROM sessions WHERE user_id = $1`,
      [user.id],
    );
    expect(rows).toHaveLength(1);
    return rows[0] as { expires_in: number; absolute_in: number; seen_ago: number };
  }

  const setSession = (user: FixtureUser, assignments: string) =>
    fixtures.query(`UPDATE sessions SET ${assignments} WHERE user_id = $1`, [user.id]);

  describe('sliding expiry and the absolute cap', () => {
    let slider: FixtureUser;
    let browser: ApiCaller;

    beforeAll(async () => {
      slider = await fixtures.userWith('slider@example.com', 'viewer', projectScope(DEFAULT_PROJECT_ID));
      browser = await signIn(main.url, slider);
    });

    it('starts with the sliding lifetime, and does not rewrite it on every call', async () => {
      const start = await expiriesOf(slider);
      expect(start.expires_in).toBeGreaterThan(TTL_MS / 1000 - 30);
      expect(start.expires_in).toBeLessThanOrEqual(TTL_MS / 1000);
      expect(start.absolute_in).toBeGreaterThan(3_500);
      await setSession(slider, "expires_at = now() + interval '5 minutes'");
      expect((await browser.call('GET', '/v1/pipelines')).status).toBe(200);
      // Seen less than a minute ago: the stored expiry stays where it was.
      expect((await expiriesOf(slider)).expires_in).toBeLessThan(5 * 60 + 1);
    });

    it('slides the expiry forward when used a minute or more after it was last seen', async () => {
      await setSession(
        slider,
        "last_seen_at = now() - interval '2 minutes', expires_at = now() + interval '30 seconds'",
      );
      expect((await browser.call('GET', '/v1/pipelines')).status).toBe(200);
      const slid = await expiriesOf(slider);
      expect(slid.seen_ago).toBeLessThan(5);
      expect(slid.expires_in).toBeGreaterThan(TTL_MS / 1000 - 30);
      expect(slid.expires_in).toBeLessThanOrEqual(TTL_MS / 1000);
    });

    it('never slides past the absolute cap', async () => {
      await setSession(
        slider,
        "last_seen_at = now() - interval '2 minutes', absolute_expires_at = now() + interval '20 seconds'",
      );
      expect((await browser.call('GET', '/v1/pipelines')).status).toBe(200);
      const capped = await expiriesOf(slider);
      expect(capped.expires_in).toBeCloseTo(capped.absolute_in, 3);
      expect(capped.expires_in).toBeLessThanOrEqual(20);
    });

    it('answers 401 once the sliding expiry has passed', async () => {
      await setSession(slider, "expires_at = now() - interval '1 second'");
      expectUnauthenticated(await browser.call('GET', '/v1/pipelines'), 'expired session');
      expectUnauthenticated(await browser.call('GET', '/v1/auth/session'), 'expired session, who am I');
    });

    it('answers 401 once the absolute cap has passed, however recently the session was used', async () => {
      const busy = await fixtures.userWith('busy@example.com', 'viewer', projectScope(DEFAULT_PROJECT_ID));
      const caller = await signIn(main.url, busy);
      expect((await caller.call('GET', '/v1/pipelines')).status).toBe(200);
      await setSession(busy, "absolute_expires_at = now() - interval '1 second'");
      expect((await expiriesOf(busy)).expires_in).toBeGreaterThan(60);
      expectUnauthenticated(await caller.call('GET', '/v1/pipelines'), 'past the absolute cap');
    });

    it('ends a session left unused for its sliding lifetime, in real time (2 s on the stranger)', async () => {
      const idle = await fixtures.userWith('idle@example.com', 'viewer', projectScope(DEFAULT_PROJECT_ID));
      const caller = await signIn(stranger.url, idle);
      expect((await caller.call('GET', '/v1/pipelines')).status).toBe(200);
      // Its lifetime runs out in real time: read from the store, as using it would slide it on.
      await waitFor(
        async () => (await expiriesOf(idle)).expires_in < 0,
        'the idle session to expire',
        30_000,
        100,
      );
      expectUnauthenticated(await caller.call('GET', '/v1/pipelines'), 'idle for longer than the lifetime');
    });
  });

  describe('session fixation', () => {
    it('gives a new id at sign-in, and kills the id a browser carried before', async () => {
      // The attacker signs in and plants its own (valid) session id in the victim's browser.
      const mallory = await fixtures.userWith(
        'mallory@example.com',
        'viewer',
        projectScope(DEFAULT_PROJECT_ID),
      );
      const attacker = await signIn(main.url, mallory);
      const planted = attacker.cookie;
      const victim = await fixtures.userWith(
        'victim@example.com',
        'editor',
        projectScope(DEFAULT_PROJECT_ID),
      );
      const browser = withCookie(main.url, planted);
      expect((await browser.login(victim.email, FIXTURE_PASSWORD)).status).toBe(200);
      expect(browser.cookie).toBeDefined();
      expect(browser.cookie).not.toBe(planted);
      expect((await browser.call('GET', '/v1/auth/session')).body.user.email).toBe(victim.email);
      // The planted id is dead: the attacker cannot ride the victim's sign-in, nor use its own.
      expectUnauthenticated(await attacker.call('GET', '/v1/auth/session'), 'the planted id after sign-in');
      expect(await fixtures.sessionsOf(mallory)).toEqual([]);
    });

    it('does not adopt an id the attacker made up', async () => {
      const made = 'service_session=rpl_ses_chosenbytheattacker0000000000';
      const browser = withCookie(peer.url, made);
      expect((await browser.login(editor.email, FIXTURE_PASSWORD)).status).toBe(200);
      expect(browser.cookie).not.toBe(made);
      expectUnauthenticated(
        await withCookie(peer.url, made).call('GET', '/v1/auth/session'),
        'the made-up id after sign-in',
      );
      expect((await browser.call('GET', '/v1/auth/session')).body.user.email).toBe(editor.email);
    });
  });

  describe('logout', () => {
    it('ends the session on the server: the same cookie replayed gets 401', async () => {
      const user = await fixtures.userWith('leaver@example.com', 'viewer', projectScope(DEFAULT_PROJECT_ID));
      const browser = await signIn(main.url, user);
      const cookie = browser.cookie;
      const out = await browser.call('POST', '/v1/auth/logout');
      expect(out.status).toBe(204);
      expect(sessionCookieOf(out)).toMatch(/^service_session=;/);
      expect(browser.cookie).toBeUndefined();
      expect(await fixtures.sessionsOf(user)).toEqual([]);
      const replay = withCookie(main.url, cookie);
      expectUnauthenticated(await replay.call('GET', '/v1/pipelines'), 'replayed after logout');
      expectUnauthenticated(await replay.call('GET', '/v1/auth/session'), 'replayed after logout');
    });
  });

  describe('instances sharing the store', () => {
    let adminToken: string;

    beforeAll(async () => {
      const made = await adminOnMain.call('POST', '/v1/tokens', { name: 'fleet', lifetime_hours: 1 });
      expect(made.status).toBe(201);
      adminToken = made.body.token;
    });

    it('accept each other’s sessions when they share the master key', async () => {
      const onPeer = withCookie(peer.url, adminOnMain.cookie);
      const me = await onPeer.call('GET', '/v1/auth/session');
      expect(me.status).toBe(200);
      expect(me.body.user.email).toBe(orgAdmin.email);
      const created = await onPeer.call('POST', '/v1/connections', unreachableConnection('from-peer'));
      expect(created.status, created.text).toBe(201);
      expect((await adminOnMain.call('GET', '/v1/connections/from-peer')).status).toBe(200);

      // And the other way: signed in on the peer, used on main; signed out on the peer, dead on main.
      const editorOnPeer = await signIn(peer.url, editor);
      const onMain = withCookie(main.url, editorOnPeer.cookie);
      expect((await onMain.call('GET', '/v1/auth/session')).body.user.email).toBe(editor.email);
      expect((await editorOnPeer.call('POST', '/v1/auth/logout')).status).toBe(204);
      expectUnauthenticated(await onMain.call('GET', '/v1/auth/session'), 'signed out on the peer');
    });

    it('accept each other’s tokens when they share the master key', async () => {
      const token = ApiCaller.withToken(peer.url, adminToken);
      expect((await token.call('GET', '/v1/connections')).status).toBe(200);
      const fromPeer = await withCookie(peer.url, adminOnMain.cookie).call('POST', '/v1/tokens', {
        name: 'made-on-peer',
        lifetime_hours: 1,
      });
      expect(fromPeer.status).toBe(201);
      const me = await ApiCaller.withToken(main.url, fromPeer.body.token).call('GET', '/v1/auth/session');
      expect(me.body).toMatchObject({ via: 'token', user: { email: orgAdmin.email } });
    });

    it('do not accept sessions or tokens of an instance with another master key', async () => {
      expectUnauthenticated(
        await withCookie(stranger.url, adminOnMain.cookie).call('GET', '/v1/pipelines'),
        "main's session on the stranger",
      );
      expectUnauthenticated(
        await ApiCaller.withToken(stranger.url, adminToken).call('GET', '/v1/pipelines'),
        "main's token on the stranger",
      );
      const onStranger = await signIn(stranger.url, orgAdmin);
      expect((await onStranger.call('GET', '/v1/pipelines')).status).toBe(200);
      expectUnauthenticated(
        await withCookie(main.url, onStranger.cookie).call('GET', '/v1/pipelines'),
        "the stranger's session on main",
      );
    });
  });

  describe('a disabled user', () => {
    it('is refused at once with 401: its session, its tokens and its sign-in', async () => {
      const user = await fixtures.userWith(
        'leaving-soon@example.com',
        'editor',
        projectScope(DEFAULT_PROJECT_ID),
      );
      const browser = await signIn(main.url, user);
      const made = await browser.call('POST', '/v1/tokens', { name: 'script', lifetime_hours: 1 });
      expect(made.status).toBe(201);
      const token = ApiCaller.withToken(main.url, made.body.token);
      expect((await browser.call('GET', '/v1/pipelines')).status).toBe(200);
      expect((await token.call('GET', '/v1/pipelines')).status).toBe(200);

      await fixtures.query('UPDATE users SET disabled = true WHERE id = $1', [user.id]);
      expectUnauthenticated(await browser.call('GET', '/v1/pipelines'), 'session of a disabled user');
      expectUnauthenticated(await token.call('GET', '/v1/pipelines'), 'token of a disabled user');
      expectUnauthenticated(
        await ApiCaller.withToken(peer.url, made.body.token).call('GET', '/v1/pipelines'),
        'token of a disabled user, on the peer',
      );
      const again = await new ApiCaller(peer.url).login(user.email, FIXTURE_PASSWORD);
      expect(again.status).toBe(401);
      expect(again.body.code).toBe('INVALID_CREDENTIALS');
    });
  });

  describe('/metrics', () => {
    it('refuses an anonymous scrape with 401', async () => {
      expectUnauthenticated(await new ApiCaller(main.url).call('GET', '/metrics'), 'anonymous /metrics');
    });

    it('refuses a project editor with 403', async () => {
      const browser = await signIn(main.url, editor);
      const res = await browser.call('GET', '/metrics');
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: 'FORBIDDEN' });
    });

    it('serves an organization admin’s session', async () => {
      const res = await adminOnMain.call('GET', '/metrics');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(res.text).toMatch(/^# HELP /m);
    });

    it('serves the bearer of auth.metrics_token_file, and only on /metrics', async () => {
      const scraper = ApiCaller.withToken(main.url, metricsToken);
      const res = await scraper.call('GET', '/metrics');
      expect(res.status).toBe(200);
      expect(res.text).toMatch(/^# HELP /m);
      expectUnauthenticated(await scraper.call('GET', '/v1/pipelines'), 'the metrics token on the API');
      // The last character changed (a fixed replacement would equal it one time in sixteen).
      const last = metricsToken.at(-1) === '0' ? '1' : '0';
      const wrong = ApiCaller.withToken(main.url, `${metricsToken.slice(0, -1)}${last}`);
      expectUnauthenticated(await wrong.call('GET', '/metrics'), 'a wrong metrics token');
    });
  });

  describe('the session cookie', () => {
    it('is Secure, HttpOnly, SameSite=Lax, kept until the absolute cap, with cookie_secure always', async () => {
      const user = await fixtures.userWith('secure@example.com', 'viewer', projectScope(DEFAULT_PROJECT_ID));
      const res = await new ApiCaller(stranger.url).login(user.email, FIXTURE_PASSWORD);
      expect(res.status).toBe(200);
      const cookie = sessionCookieOf(res);
      expect(cookie).toMatch(/;\s*Secure(;|$)/);
      expect(cookie).toMatch(/;\s*HttpOnly(;|$)/);
      expect(cookie).toMatch(/;\s*SameSite=Lax(;|$)/);
      expect(cookie).toMatch(/;\s*Max-Age=5(;|$)/);
    });

    it('is not Secure over plain http with cookie_secure auto', async () => {
      const user = await fixtures.userWith('plain@example.com', 'viewer', projectScope(DEFAULT_PROJECT_ID));
      const res = await new ApiCaller(peer.url).login(user.email, FIXTURE_PASSWORD);
      expect(res.status).toBe(200);
      expect(sessionCookieOf(res)).not.toMatch(/Secure/);
    });
  });
});
