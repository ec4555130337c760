import { type DatabasePool, UniqueIntegrityConstraintViolationError } from 'slonik';
import type { RequestContext } from '../context.js';
import { AppError, notFound, validationFailed } from '../errors/app-error.js';
import type { SecretBox } from '../secrets/secret-box.js';
import { connectionsStore } from '../store/connections-store.js';
import { pipelinesStore } from '../store/pipelines-store.js';
import { connectionTypeNames, findConnectionType } from './connection-types.js';
import { toConnectionView } from './connection-view.js';
import { joinDsn, PASSWORD_MASK, splitDsn } from './dsn.js';

export interface ConnectionInput {
  name?: string;
  type: string;
  dsn: string;
}

/** Hooks other parts of the service attach to connection changes. */
export interface ConnectionEvents {
  /** Called after a connection that pipelines name was replaced or (forcibly) deleted. */
  changedWhileInUse?(ctx: RequestContext, connection: string, pipelines: string[]): void;
}

export class ConnectionsService {
  events: ConnectionEvents = {};

  constructor(
    private readonly pool: DatabasePool,
    private readonly secrets: SecretBox,
  ) {}

  async list(ctx: RequestContext) {
    return (await connectionsStore.list(this.pool, ctx.projectId)).map(toConnectionView);
  }

  async get(ctx: RequestContext, name: string) {
    const row = await connectionsStore.find(this.pool, ctx.projectId, name);
    if (!row) throw notFound('connection', name);
    return toConnectionView(row);
  }

  async create(ctx: RequestContext, name: string, input: ConnectionInput) {
    const { publicDsn, password } = this.checkInput(input);
    if (password === PASSWORD_MASK)
      throw validationFailed('dsn', `the password "${PASSWORD_MASK}" is only accepted on update`);
    try {
      const row = await connectionsStore.insert(this.pool, ctx.projectId, name, {
        type: input.type,
        dsn: publicDsn,
        passwordSealed: password === undefined ? null : this.secrets.seal(password),
      });
      return toConnectionView(row);
    } catch (error) {
      if (error instanceof UniqueIntegrityConstraintViolationError) {
        throw new AppError('ALREADY_EXISTS', `connection '${name}' already exists`);
      }
      throw error;
    }
  }

  /** Replaces type and DSN. A password equal to the mask keeps the stored password. */
  async replace(ctx: RequestContext, name: string, input: ConnectionInput) {
    const view = await this.pool.transaction(async (tx) => {
      const current = await connectionsStore.find(tx, ctx.projectId, name, 'update');
      if (!current) throw notFound('connection', name);
      if (input.name !== undefined && input.name !== name) {
        throw validationFailed(
          'name',
          `must match the connection in the path ('${name}'); renaming is not supported`,
        );
      }
      const { publicDsn, password } = this.checkInput(input);
      const sealed =
        password === PASSWORD_MASK
          ? current.password_sealed
          : password === undefined
            ? null
            : this.secrets.seal(password);
      const row = await connectionsStore.update(tx, ctx.projectId, name, {
        type: input.type,
        dsn: publicDsn,
        passwordSealed: sealed,
      });
      if (!row) throw notFound('connection', name);
      return toConnectionView(row);
    });
    const users = await pipelinesStore.usingConnection(this.pool, ctx.projectId, name);
    if (users.length > 0)
      this.events.changedWhileInUse?.(
        ctx,
        name,
        users.map((p) => p.name),
      );
    return view;
  }

  /**
   * Deletes a connection. One that any pipeline names is refused with CONNECTION_IN_USE unless
   * forced; a forced delete leaves those pipelines naming a missing connection.
   */
  async delete(ctx: RequestContext, name: string, force: boolean): Promise<void> {
    const users = await this.pool.transaction(async (tx) => {
      const current = await connectionsStore.find(tx, ctx.projectId, name, 'update');
      if (!current) throw notFound('connection', name);
      const using = await pipelinesStore.usingConnection(tx, ctx.projectId, name);
      if (using.length > 0 && !force) {
        const running = using.filter((p) => p.state !== 'stopped');
        const list = using.map((p) => `'${p.name}' (${p.state})`).join(', ');
        throw new AppError(
          'CONNECTION_IN_USE',
          `connection '${name}' is used by pipeline${using.length > 1 ? 's' : ''} ${list}; ` +
            'change or delete them first, or delete with ?force=true',
          { pipelines: using.map((p) => p.name), running: running.map((p) => p.name) },
        );
      }
      await connectionsStore.delete(tx, ctx.projectId, name);
      return using.map((p) => p.name);
    });
    if (users.length > 0) this.events.changedWhileInUse?.(ctx, name, users);
  }

  /** The type and full DSN (password included) for the data plane to connect with. */
  async resolve(ctx: RequestContext, name: string): Promise<{ type: string; dsn: string }> {
    const row = await connectionsStore.find(this.pool, ctx.projectId, name);
    if (!row) throw notFound('connection', name);
    const password = row.password_sealed === null ? undefined : this.secrets.open(row.password_sealed);
    return { type: row.type, dsn: joinDsn(row.dsn, password) };
  }

  private checkInput(input: ConnectionInput) {
    const type = findConnectionType(input.type);
    if (!type) throw validationFailed('type', `must be one of ${connectionTypeNames().join(', ')}`);
    return splitDsn(input.dsn, type);
  }
}
