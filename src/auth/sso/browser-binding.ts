import { timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { newSecret, type SecretHasher } from '../secret-token.js';
import { LOGIN_FLOW_TTL_MS } from './login-flows.js';
import type { ServiceUrls } from './service-urls.js';

const BROWSER_COOKIE = 'sso_browser';
const COOKIE_VALUE = /^[a-z2-7]{32}$/;

/**
 * Ties an OIDC sign-in to the browser that started it: a random cookie set at the start must come
 * back with the provider's answer. Without it, someone could send a victim the callback URL of a
 * sign-in they started themselves and have the victim signed in as them (login CSRF). The cookie
 * is reused by later sign-ins, so sign-ins started in two tabs both complete.
 *
 * SAML responses arrive by a cross-site POST, which does not carry SameSite=Lax cookies; they rely
 * on the request id, the single-use flow and the signed assertion instead.
 */
export class BrowserBinding {
  constructor(
    private readonly urls: ServiceUrls,
    private readonly hasher: SecretHasher,
  ) {}

  /** Sets (or refreshes) the browser's cookie and returns the HMAC to keep in the flow. */
  bind(request: FastifyRequest, reply: FastifyReply): string {
    const carried = request.cookies[BROWSER_COOKIE];
    const value = carried && COOKIE_VALUE.test(carried) ? carried : newSecret('');
    reply.setCookie(BROWSER_COOKIE, value, {
      path: this.urls.ssoPath,
      httpOnly: true,
      sameSite: 'lax',
      secure: this.urls.secure,
      maxAge: Math.floor(LOGIN_FLOW_TTL_MS / 1000),
    });
    return this.hash(value);
  }

  /** Whether the request carries the cookie the flow was started with. */
  matches(request: FastifyRequest, expected: string): boolean {
    const carried = request.cookies[BROWSER_COOKIE];
    if (!carried) return false;
    const actual = Buffer.from(this.hash(carried));
    const wanted = Buffer.from(expected);
    return actual.length === wanted.length && timingSafeEqual(actual, wanted);
  }

  private hash(value: string): string {
    return this.hasher.hash(`sso browser binding:${value}`);
  }
}
