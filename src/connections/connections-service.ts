import { type CommonQueryMethods, type DatabasePool, UniqueIntegrityConstraintViolationError } from 'slonik';
import type { RequestContext } from '../context.js';
import { AppError, notFound, validationFailed } from '../errors/app-error.js';
import type { SecretBox } from '../secrets/secret-box.js';
import { type ConnectionRow, connectionsStore } from '../store/connections-store.js';
import { type OrphanedSlotRow, orphanedSlotsStore } from '../store/orphaned-slots-store.js';
import { pipelinesStore } from '../store/pipelines-store.js';
import {
  type ConnectionSecrets,
  keepMaskedSecrets,
  openSecrets,
  refuseMasks,
  sealSecrets,
  secretChanges,
} from './connection-secrets.js';
import type { CheckedDsn, ConnectionType, ConnectionTypeCatalog } from './connection-types.js';
import { type ConnectionUserRow, type ConnectionView, toConnectionView } from './connection-view.js';
import { PASSWORD_MASK } from './dsn.js';
import type { LocalAccessPolicy } from './local-access.js';
import { checkTlsMaterial, type TlsMaterial } from './tls-material.js';

export interface ConnectionInput {
  name?: string;
  type: string;
  dsn: string;
  /** Certificates and key as PEM text; `****` on update keeps the stored one. */
  tls?: TlsMaterial;
}

/**
 * A connection ready for the data plane: its type and the settings to connect with, as its
 * connection type makes them (node-postgres' client settings for postgres).
 */
export interface ResolvedConnection {
  type: string;
  settings: unknown;
}

/** What replacing a stored connection would change, and notes on secrets it cannot compare. */
export interface ConnectionChanges {
  changes: string[];
  notes: string[];
}

/** Hooks other parts of the service attach to connection changes. */
export interface ConnectionEvents {
  /** Called after a connection that pipelines name was replaced or (forcibly) deleted. */
  changedWhileInUse?(ctx: RequestContext, connection: string, pipelines: string[]): void;
}

export class ConnectionsService {
  constructor(
    private readonly pool: DatabasePool,
    private readonly secrets: SecretBox,
    private readonly types: ConnectionTypeCatalog,
    private readonly localAccess: LocalAccessPolicy,
    private readonly events: ConnectionEvents = {},
  ) {}

  async list(ctx: RequestContext) {
    const rows = ctx.allProjects
      ? await connectionsStore.listAll(this.pool)
      : await connectionsStore.list(this.pool, ctx.projectId);
    return this.views(this.pool, rows);
  }

  async get(ctx: RequestContext, name: string) {
    const row = await connectionsStore.find(this.pool, ctx.projectId, name);
    if (!row) throw notFound('connection', name);
    return (await this.views(this.pool, [row]))[0] as ConnectionView;
  }

  /**
   * Connections as the API shows them, each with the orphaned slots recorded under its name and
   * the pipelines that name it.
   */
  private async views(db: CommonQueryMethods, rows: readonly ConnectionRow[]) {
    // A list may span projects (authentication off): each row gets its own project's slots and users.
    const orphansOf = new Map<string, readonly OrphanedSlotRow[]>();
    const usersOf = new Map<string, readonly ConnectionUserRow[]>();
    for (const projectId of new Set(rows.map((r) => r.project_id))) {
      const names = rows.filter((r) => r.project_id === projectId).map((r) => r.name);
      orphansOf.set(projectId, await orphanedSlotsStore.listFor(db, projectId, names));
      usersOf.set(projectId, await pipelinesStore.usingConnections(db, projectId, names));
    }
    return rows.map((row) =>
      toConnectionView(row, orphansOf.get(row.project_id) ?? [], usersOf.get(row.project_id) ?? []),
    );
  }

  async create(ctx: RequestContext, name: string, input: ConnectionInput) {
    const { type, dsn, secrets } = this.checkInput(ctx, input);
    refuseMasks(secrets);
    checkSecrets(type, dsn, secrets);
    try {
      const row = await connectionsStore.insert(this.pool, ctx.projectId, name, {
        type: input.type,
        dsn: dsn.publicDsn,
        ...sealSecrets(secrets, this.secrets),
      });
      return (await this.views(this.pool, [row]))[0] as ConnectionView;
    } catch (error) {
      if (error instanceof UniqueIntegrityConstraintViolationError) {
        throw new AppError('ALREADY_EXISTS', `connection '${name}' already exists`);
      }
      throw error;
    }
  }

  /**
   * Replaces type, DSN and TLS material. A secret equal to the mask keeps the stored one, but only
   * while host, port, database and user stay the same.
   */
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
      const { type, dsn, secrets: incoming } = this.checkInput(ctx, input);
      const stored = openSecrets(current, this.secrets);
      const secrets = keepMaskedSecrets(
        incoming,
        stored,
        whySecretsNotKept(type, dsn, incoming, current, stored),
      );
      checkSecrets(type, dsn, secrets);
      const row = await connectionsStore.update(tx, ctx.projectId, name, {
        type: input.type,
        dsn: dsn.publicDsn,
        ...sealSecrets(secrets, this.secrets),
      });
      if (!row) throw notFound('connection', name);
      return (await this.views(tx, [row]))[0] as ConnectionView;
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

  /**
   * The settings for the data plane to connect with, secrets included. The stored DSN passes the
   * allow-list again at every connect, so a row stored before a parameter was refused (or before
   * the operator withdrew local access) cannot be used to reach the service's files or sockets.
   */
  async resolve(ctx: RequestContext, name: string): Promise<ResolvedConnection> {
    const row = await connectionsStore.find(this.pool, ctx.projectId, name);
    if (!row) throw notFound('connection', name);
    const type = this.types.find(row.type);
    if (!type)
      throw validationFailed(
        'type',
        `connection '${name}' is of type ${row.type}, which this version does not know`,
      );
    const secrets = openSecrets(row, this.secrets);
    return { type: row.type, settings: await type.settings(row.dsn, secrets, this.policyFor(ctx)) };
  }

  /**
   * What `resolve` would give once `input` is written as connection `name`, writing nothing: a
   * masked secret stands for the stored one, as `replace` keeps it. A 422 as `check` would give.
   */
  async resolveInput(ctx: RequestContext, name: string, input: ConnectionInput): Promise<ResolvedConnection> {
    const { type, dsn, secrets: incoming } = this.checkInput(ctx, input);
    const current = await connectionsStore.find(this.pool, ctx.projectId, name);
    let secrets = incoming;
    if (current) {
      const stored = openSecrets(current, this.secrets);
      secrets = keepMaskedSecrets(incoming, stored, whySecretsNotKept(type, dsn, incoming, current, stored));
    } else refuseMasks(incoming);
    checkSecrets(type, dsn, secrets);
    return { type: input.type, settings: await type.settings(dsn.publicDsn, secrets, this.policyFor(ctx)) };
  }

  /**
   * Checks a connection as `create` or `replace` would, writing nothing: a 422 naming the field.
   * `exists` says whether it would replace a stored one (where a masked secret means "keep").
   */
  check(ctx: RequestContext, input: ConnectionInput, exists: boolean): void {
    const { type, dsn, secrets } = this.checkInput(ctx, input);
    if (!exists) refuseMasks(secrets);
    // A masked secret stands for the stored one, which `replace` checks with the rest.
    else if (JSON.stringify(secrets).includes(PASSWORD_MASK)) return;
    checkSecrets(type, dsn, secrets);
  }

  /**
   * What `replace` would change in a stored connection: `type`, `dsn` (without its password),
   * `secrets` (a password, TLS material); [] when nothing, null when there is no such connection.
   * A secret given in clear always counts as a change, and is never compared with the stored one:
   * the plan would otherwise tell whether a guessed password is right. `notes` says so.
   */
  async changes(
    ctx: RequestContext,
    name: string,
    input: ConnectionInput,
  ): Promise<ConnectionChanges | null> {
    const current = await connectionsStore.find(this.pool, ctx.projectId, name);
    if (!current) return null;
    const { type, dsn, secrets: incoming } = this.checkInput(ctx, input);
    const stored = openSecrets(current, this.secrets);
    // Refuses a mask that could not be kept, as `replace` would.
    keepMaskedSecrets(incoming, stored, whySecretsNotKept(type, dsn, incoming, current, stored));
    const changed: string[] = [];
    const notes: string[] = [];
    if (input.type !== current.type) changed.push('type');
    if (dsn.publicDsn !== current.dsn) changed.push('dsn');
    const { supplied, removed } = secretChanges(incoming, stored);
    if (supplied.length > 0 || removed.length > 0) changed.push('secrets');
    for (const secret of supplied) notes.push(`${secret} supplied: will be replaced`);
    for (const secret of removed) notes.push(`${secret} not given: will be removed`);
    return { changes: changed, notes };
  }

  /** The operator's local access, confined to the project's own files. */
  private policyFor(ctx: RequestContext): LocalAccessPolicy {
    return { ...this.localAccess, projectId: ctx.projectId };
  }

  private checkInput(
    ctx: RequestContext,
    input: ConnectionInput,
  ): {
    type: ConnectionType;
    dsn: CheckedDsn;
    secrets: ConnectionSecrets;
  } {
    const type = this.types.find(input.type);
    if (!type) throw validationFailed('type', `must be one of ${this.types.names().join(', ')}`);
    const dsn = type.checkDsn(input.dsn, this.policyFor(ctx));
    const secrets: ConnectionSecrets = { tls: { ...input.tls } };
    if (dsn.password !== undefined) secrets.password = dsn.password;
    if (dsn.sslpassword !== undefined) secrets.sslpassword = dsn.sslpassword;
    return { type, dsn, secrets };
  }
}

function checkSecrets(type: ConnectionType, dsn: CheckedDsn, secrets: ConnectionSecrets): void {
  type.checkTls(dsn, secrets);
  checkTlsMaterial(secrets.tls, secrets.sslpassword);
}

/**
 * Why a masked secret cannot keep the stored one, undefined when it can: only for the same type
 * and endpoint (host, port, database, user), and only while TLS promises at least what it did
 * (sslmode, TLS scheme, the CA file or `tls.ca_cert` it verified with).
 */
function whySecretsNotKept(
  type: ConnectionType,
  dsn: CheckedDsn,
  incoming: ConnectionSecrets,
  current: { type: string; dsn: string },
  stored: ConnectionSecrets,
): string | undefined {
  if (type.type !== current.type) return 'the type changed';
  // Before the endpoint: a scheme such as rediss:// is part of both, and TLS is the better reason.
  const now = new Set(type.tlsGuarantees(dsn.publicDsn));
  const lost = type.tlsGuarantees(current.dsn).find((g) => !now.has(g));
  if (lost !== undefined) return `the DSN weakens TLS (no more ${lost})`;
  if (type.endpointOf(dsn.publicDsn) !== type.endpointOf(current.dsn)) {
    return 'the host, port, database or user changed';
  }
  // A CA given anew is another trust anchor; one left out may leave the chain unverified.
  if (stored.tls.ca_cert !== undefined && incoming.tls.ca_cert !== PASSWORD_MASK) {
    return 'tls.ca_cert is replaced or removed';
  }
  return undefined;
}
