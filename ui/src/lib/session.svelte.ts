/**
 * Who is signed in, as GET /v1/auth/session says: `disabled` when the service runs without
 * authentication (409 AUTH_DISABLED: nothing about users is shown), `signed-out` after any 401
 * (the login page shows), `signed-in` with the session's user and projects.
 */
import { ApiError, api, whenUnauthenticated } from './api';
import type { SessionInfo } from './api-types';

export type SessionStatus = 'checking' | 'disabled' | 'signed-in' | 'signed-out' | 'unknown';

export const session = $state<{
  status: SessionStatus;
  info: SessionInfo | null;
  /** Incremented whenever what the pages show may have changed (sign-in, project switch). */
  epoch: number;
}>({ status: 'checking', info: null, epoch: 0 });

whenUnauthenticated(() => {
  if (session.status !== 'disabled') {
    session.status = 'signed-out';
    session.info = null;
  }
});

/** Whether the page says authentication is off (the service writes it into the page it serves). */
const authenticationOff = (): boolean =>
  document.querySelector('meta[name="replicator-auth"]')?.getAttribute('content') === 'none';

/** Asks the service who is signed in; with authentication off there is nobody to ask about. */
export async function loadSession(): Promise<void> {
  if (authenticationOff()) {
    session.status = 'disabled';
    session.info = null;
    return;
  }
  try {
    signedIn(await api<SessionInfo>('GET', '/auth/session'));
  } catch (error) {
    if (error instanceof ApiError && error.code === 'AUTH_DISABLED') {
      session.status = 'disabled';
      session.info = null;
    } else if (error instanceof ApiError && error.status === 401) {
      session.status = 'signed-out';
    } else {
      // The service is unreachable or failing: show the pages, which say so themselves.
      session.status = 'unknown';
    }
  }
}

export async function signIn(email: string, password: string): Promise<void> {
  signedIn(await api<SessionInfo>('POST', '/auth/login', { body: { email, password } }));
  session.epoch += 1;
}

export async function signOut(): Promise<void> {
  await api('POST', '/auth/logout');
  session.status = 'signed-out';
  session.info = null;
}

export async function switchProject(project: string): Promise<void> {
  signedIn(await api<SessionInfo>('PUT', '/auth/session', { body: { project } }));
  session.epoch += 1;
}

function signedIn(info: SessionInfo) {
  session.status = 'signed-in';
  session.info = info;
}
