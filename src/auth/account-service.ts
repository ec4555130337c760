import { type DatabasePool, sql, UniqueIntegrityConstraintViolationError } from 'slonik';
import { AppError, validationFailed } from '../errors/app-error.js';
import { DEFAULT_ORGANIZATION_ID } from '../store/pool.js';
import { hashPassword, passwordProblem, verifyNothing, verifyPassword } from './password.js';
import { toUserView } from './user-view.js';
import { findUserByEmail, insertUser, organizationAdminExists, type UserRow } from './users-store.js';

// Serialises bootstraps across instances sharing the store, so two first admins cannot both win.
const BOOTSTRAP_LOCK = 7_600_002;

export const EMAIL_MAX_LENGTH = 254;
const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export interface NewAccount {
  email: string;
  displayName: string;
  password: string;
}

/** Checks an e-mail, display name and password for a new account; throws 422 naming the field. */
async function checkNewAccount(account: NewAccount): Promise<void> {
  if (account.email.length > EMAIL_MAX_LENGTH || !EMAIL_PATTERN.test(account.email)) {
    throw validationFailed('email', 'must be an e-mail address such as ada@example.com');
  }
  if (account.displayName.trim() === '') throw validationFailed('display_name', 'must not be empty');
  const problem = await passwordProblem(account.password, [account.email, account.displayName]);
  if (problem) throw validationFailed('password', problem);
}

/** The first admin, and signing in with a password. */
export class AccountService {
  constructor(private readonly pool: DatabasePool) {}

  /**
   * Creates the first admin user and binds the admin role at organization scope. Refused once an
   * enabled organization admin exists: after that, admins manage users through the users API.
   */
  async bootstrap(account: NewAccount) {
    await checkNewAccount(account);
    const passwordHash = await hashPassword(account.password);
    return this.pool.transaction(async (tx) => {
      await tx.query(sql.unsafe`SELECT pg_advisory_xact_lock(${BOOTSTRAP_LOCK})`);
      if (await organizationAdminExists(tx)) {
        throw new AppError(
          'ADMIN_EXISTS',
          'an admin already exists: sign in as that admin and create users through /v1/users',
        );
      }
      let user: UserRow;
      try {
        user = await insertUser(tx, { email: account.email, displayName: account.displayName, passwordHash });
      } catch (error) {
        if (error instanceof UniqueIntegrityConstraintViolationError) {
          throw new AppError('ALREADY_EXISTS', `a user with e-mail '${account.email}' already exists`);
        }
        throw error;
      }
      await tx.query(sql.unsafe`
        INSERT INTO role_bindings (user_id, role, scope_type, scope_id)
        VALUES (${user.id}, 'admin', 'organization', ${DEFAULT_ORGANIZATION_ID})`);
      return {
        user: toUserView(user),
        role_binding: { role: 'admin', scope_type: 'organization', scope_id: DEFAULT_ORGANIZATION_ID },
      };
    });
  }

  /**
   * The user an e-mail and password prove, or undefined. An unknown e-mail costs the same time as
   * a wrong password, so the answer does not tell which accounts exist. Nobody signs in while no
   * organization admin exists.
   */
  async verifyPassword(email: string, password: string): Promise<UserRow | undefined> {
    const user = (await organizationAdminExists(this.pool)) ? await findUserByEmail(this.pool, email) : null;
    if (!user?.password_hash) return verifyNothing(password).then(() => undefined);
    const ok = await verifyPassword(user.password_hash, password);
    return ok && !user.disabled ? user : undefined;
  }

  adminExists(): Promise<boolean> {
    return organizationAdminExists(this.pool);
  }
}
