import { type DatabasePool, sql, UniqueIntegrityConstraintViolationError } from 'slonik';
import { EMAIL_MAX_LENGTH } from '../account-service.js';
import { findUserByEmail, insertUser, UserRow } from '../users-store.js';
import type { ExternalIdentity } from './external-identity.js';
import { SsoFailure } from './sso-failure.js';

const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const DISPLAY_NAME_MAX_LENGTH = 200;

function findByIdentity(pool: DatabasePool, issuer: string, subject: string): Promise<UserRow | null> {
  return pool.maybeOne(sql.type(UserRow)`
    SELECT u.* FROM user_identities i JOIN users u ON u.id = i.user_id
    WHERE i.issuer = ${issuer} AND i.subject = ${subject}`);
}

/**
 * The user an identity signs in as: the one linked to the issuer and subject, or, at the first
 * sign-in, a new user without a password. An existing user with the same e-mail is never linked
 * on the e-mail's word alone: whoever controls the identity provider (or an account there with
 * that address) could otherwise take over a local account. A disabled user is refused.
 */
export async function matchUser(pool: DatabasePool, identity: ExternalIdentity): Promise<UserRow> {
  const { issuer, subject, email } = identity;
  if (subject === '') throw new SsoFailure('missing_subject', undefined, email);
  const linked = await findByIdentity(pool, issuer, subject);
  if (linked) {
    if (linked.disabled) throw new SsoFailure('user_disabled', undefined, linked.email);
    return linked;
  }
  if (email === undefined) throw new SsoFailure('missing_email');
  if (email.length > EMAIL_MAX_LENGTH || !EMAIL_PATTERN.test(email)) {
    throw new SsoFailure('missing_email', 'the e-mail the provider gave is not an e-mail address');
  }
  if (identity.emailVerified === false) throw new SsoFailure('email_not_verified', undefined, email);
  if (await findUserByEmail(pool, email)) {
    throw new SsoFailure(
      'email_not_linked',
      `a user with e-mail ${email} exists without an identity at ${issuer}`,
      email,
    );
  }
  const displayName = (identity.displayName ?? email).slice(0, DISPLAY_NAME_MAX_LENGTH);
  try {
    return await pool.transaction(async (tx) => {
      const user = await insertUser(tx, { email, displayName, passwordHash: null });
      await tx.query(sql.unsafe`
        INSERT INTO user_identities (issuer, subject, user_id) VALUES (${issuer}, ${subject}, ${user.id})`);
      return user;
    });
  } catch (error) {
    if (!(error instanceof UniqueIntegrityConstraintViolationError)) throw error;
    // Two first sign-ins at once: the one that lost finds what the other made.
    const made = await findByIdentity(pool, issuer, subject);
    if (made && !made.disabled) return made;
    throw new SsoFailure('email_not_linked', `a user with e-mail ${email} was created meanwhile`, email);
  }
}
