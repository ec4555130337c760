import { type DatabasePool, UniqueIntegrityConstraintViolationError } from 'slonik';
import { lockAdminSet, refuseRemovingLastAdmin } from '../auth/last-admin-guard.js';
import { hashPassword, passwordProblem } from '../auth/password.js';
import { toUserView, type UserView } from '../auth/user-view.js';
import { findUser, insertUser } from '../auth/users-store.js';
import type { RequestContext } from '../context.js';
import { AppError, notFound, validationFailed } from '../errors/app-error.js';
import { isRecordId } from '../store/record-id.js';
import { type UserChanges, usersAdminStore } from './users-admin-store.js';

/** What the users service needs of the sessions: ending all of a user's (`auth/sessions.ts`). */
export interface SessionEnder {
  endAllOf(userId: string): Promise<void>;
}

export interface UserCreateInput {
  email: string;
  display_name: string;
  /** Absent: the user signs in only through SSO. */
  password?: string;
}

export interface UserUpdateInput {
  display_name?: string;
  disabled?: boolean;
  password?: string;
}

/**
 * User administration for organization admins. Every call acts on the one organization; the
 * request context is taken as every service takes it.
 */
export class UsersService {
  constructor(
    private readonly pool: DatabasePool,
    private readonly sessions: SessionEnder,
  ) {}

  async list(_ctx: RequestContext): Promise<UserView[]> {
    return (await usersAdminStore.list(this.pool)).map(toUserView);
  }

  async get(_ctx: RequestContext, id: string): Promise<UserView> {
    const row = isRecordId(id) ? await findUser(this.pool, id) : null;
    if (!row) throw notFound('user', id);
    return toUserView(row);
  }

  async create(_ctx: RequestContext, input: UserCreateInput): Promise<UserView> {
    const passwordHash =
      input.password === undefined
        ? null
        : await this.hashChecked(input.password, [input.email, input.display_name]);
    try {
      const row = await insertUser(this.pool, {
        email: input.email,
        displayName: input.display_name,
        passwordHash,
      });
      return toUserView(row);
    } catch (error) {
      if (error instanceof UniqueIntegrityConstraintViolationError) {
        throw new AppError('ALREADY_EXISTS', `a user with e-mail '${input.email}' already exists`);
      }
      throw error;
    }
  }

  /**
   * Changes a user's display name, disabled flag or password. Disabling the last enabled
   * organization admin is refused; disabling a user or setting its password ends its sessions.
   */
  async update(_ctx: RequestContext, id: string, input: UserUpdateInput): Promise<UserView> {
    const before = isRecordId(id) ? await findUser(this.pool, id) : null;
    if (!before) throw notFound('user', id);
    // Hashed before the transaction: argon2 takes tens of milliseconds, too long to hold locks.
    const passwordHash =
      input.password === undefined
        ? undefined
        : await this.hashChecked(input.password, [before.email, input.display_name ?? before.display_name]);
    const row = await this.pool.transaction(async (tx) => {
      if (input.disabled === true) await lockAdminSet(tx);
      const current = await usersAdminStore.lock(tx, id);
      if (!current) throw notFound('user', id);
      if (input.disabled === true && !current.disabled) {
        await refuseRemovingLastAdmin(tx, id, `disable user '${current.email}'`);
      }
      const changes: UserChanges = {
        displayName: input.display_name,
        disabled: input.disabled,
        passwordHash,
      };
      return usersAdminStore.update(tx, id, changes);
    });
    // After the commit, so that a refused change ends nothing. A disabled user is refused at every
    // request anyway, so the moment between the two does not let it back in.
    if (input.disabled === true || passwordHash !== undefined) await this.sessions.endAllOf(id);
    return toUserView(row);
  }

  /** Deletes a user with its role bindings, tokens, SSO identities and sessions. */
  async delete(_ctx: RequestContext, id: string): Promise<void> {
    if (!isRecordId(id)) throw notFound('user', id);
    await this.pool.transaction(async (tx) => {
      await lockAdminSet(tx);
      const current = await usersAdminStore.lock(tx, id);
      if (!current) throw notFound('user', id);
      await refuseRemovingLastAdmin(tx, id, `delete user '${current.email}'`);
      await usersAdminStore.delete(tx, id);
    });
    // Its sessions went with it (cascade); ended here too, so this does not rest on the schema alone.
    await this.sessions.endAllOf(id);
  }

  /** The argon2id hash of an acceptable password; a refused one is a 422 naming the reason. */
  private async hashChecked(password: string, userInputs: string[]): Promise<string> {
    const problem = await passwordProblem(password, userInputs);
    if (problem) throw validationFailed('password', problem);
    return hashPassword(password);
  }
}
