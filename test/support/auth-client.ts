import { randomBytes } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../../src/config/options.js';

/**
 * A config with authentication on: a fresh master key file (0600) in the data directory, and a
 * sign-in limit high enough for tests that sign in many times from one address.
 */
export function enableAuth(config: Config): Config {
  const keyFile = join(config.dataDir, 'master.key');
  writeFileSync(keyFile, randomBytes(32).toString('hex'), { mode: 0o600 });
  chmodSync(keyFile, 0o600);
  return {
    ...config,
    auth: { ...config.auth, mode: 'enabled', masterKeyFile: keyFile, loginAttemptsPerMinute: 1_000 },
  };
}

export interface Answer<T = any> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

/**
 * A caller of the API: anonymous, with a bearer token, or a browser-like session that keeps the
 * `service_session` cookie and sends its own Origin on state-changing requests, as a browser does.
 */
export class ApiCaller {
  cookie: string | undefined;
  bearer: string | undefined;
  origin: string | undefined;

  constructor(readonly base: string) {
    this.origin = base;
  }

  static withToken(base: string, token: string): ApiCaller {
    const caller = new ApiCaller(base);
    caller.bearer = token;
    caller.origin = undefined;
    return caller;
  }

  async call<T = any>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Answer<T>> {
    const sent: Record<string, string> = { ...headers };
    if ((body !== undefined || !['GET', 'HEAD'].includes(method)) && !('content-type' in sent)) {
      sent['content-type'] = 'application/json';
    }
    if (this.cookie) sent.cookie = this.cookie;
    if (this.bearer) sent.authorization = `Bearer ${this.bearer}`;
    if (this.origin && method !== 'GET' && !('origin' in sent)) sent.origin = this.origin;
    const res = await fetch(`${this.base}${path}`, {
      method,
      headers: sent,
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      redirect: 'manual',
    });
    const setCookie = res.headers.getSetCookie().find((c) => c.startsWith('service_session='));
    if (setCookie) {
      const value = setCookie.split(';')[0] as string;
      this.cookie = value === 'service_session=' ? undefined : value;
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, body: parsed as T, headers: res.headers, text };
  }

  async login(email: string, password: string, project?: string): Promise<Answer> {
    return this.call('POST', '/v1/auth/login', { email, password, ...(project ? { project } : {}) });
  }
}

export const ADMIN = {
  email: 'ada@example.com',
  display_name: 'Ada Admin',
  password: 'correct horse battery staple',
};
