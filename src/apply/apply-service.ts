import type {
  ConnectionInput,
  ConnectionsService,
  ResolvedConnection,
} from '../connections/connections-service.js';
import type { RequestContext } from '../context.js';
import { TableNotReplicableError } from '../core/source-errors.js';
import { AppError } from '../errors/app-error.js';
import type {
  ConnectionResolver,
  PipelineDefinitionInput,
  PipelinesService,
} from '../pipelines/pipelines-service.js';
import { sharedTarget } from '../pipelines/shared-targets.js';
import { parseTableName } from '../pipelines/table-name.js';

export type ConnectionElement = ConnectionInput & { name: string };
export type PipelineElement = PipelineDefinitionInput & { name: string };

/** A declarative document: the connections and pipelines a project should have. */
export interface ApplyDocument {
  connections: ConnectionElement[];
  pipelines: PipelineElement[];
}

/** One problem of a document, at its path (`pipelines[2].source.tables[0]`). */
export interface Problem {
  path: string;
  message: string;
}

export type ApplyResult = 'created' | 'updated' | 'unchanged' | 'deleted';

export interface ApplyEntry {
  name: string;
  result: ApplyResult;
  /** For `updated`: the fields that differ. */
  changes?: string[];
  /** What the plan cannot tell by comparing, such as a secret given in clear that will be replaced. */
  notes?: string[];
}

export interface ApplyOptions {
  dryRun: boolean;
  prune: boolean;
}

/** `source.tables[1]: is listed twice` → path and message, under the element's own path. */
function problemAt(prefix: string, error: unknown): Problem {
  if (!(error instanceof AppError) || (error.code !== 'VALIDATION_FAILED' && error.code !== 'INVALID_DSN')) {
    throw error;
  }
  const field = typeof error.details?.field === 'string' ? error.details.field : undefined;
  const message =
    field && error.message.startsWith(`${field}: `) ? error.message.slice(field.length + 2) : error.message;
  return { path: field ? `${prefix}.${field}` : prefix, message };
}

/**
 * A refusal of the live checks at its path; a refusal of tables is one problem per table, at its
 * index in `source.tables`.
 */
function liveProblemsAt(prefix: string, p: PipelineElement, error: unknown): Problem[] {
  const cause = error instanceof Error ? error.cause : undefined;
  if (!(cause instanceof TableNotReplicableError)) return [problemAt(prefix, error)];
  const refs = p.source.tables.map((t) => parseTableName(t));
  return cause.problems.map((problem) => {
    const index = refs.findIndex((r) => r?.schema === problem.schema && r?.table === problem.table);
    return {
      path: index < 0 ? `${prefix}.source.tables` : `${prefix}.source.tables[${index}]`,
      message: `${problem.schema}.${problem.table} ${problem.message}`,
    };
  });
}

const unreachableNote = (connection: string) =>
  `source connection '${connection}' could not be reached: its tables, keys and privileges are checked when the pipeline starts`;

function duplicates(kind: string, names: string[]): Problem[] {
  const seen = new Map<string, number>();
  const problems: Problem[] = [];
  names.forEach((name, i) => {
    const first = seen.get(name);
    if (first !== undefined) {
      problems.push({ path: `${kind}[${i}].name`, message: `'${name}' is also ${kind}[${first}]` });
    } else seen.set(name, i);
  });
  return problems;
}

/**
 * Brings a project to what a document declares: creates what is missing and updates what differs,
 * connections before pipelines, and with `prune` deletes what the document does not name. The whole
 * document is checked before anything is written, the checks that reach the servers included (on a
 * dry run too): any problem is a 422 listing every problem with its path, and nothing changes. A
 * running pipeline whose definition changes reloads it.
 */
export class ApplyService {
  constructor(
    private readonly connections: ConnectionsService,
    private readonly pipelines: PipelinesService,
  ) {}

  async apply(ctx: RequestContext, doc: ApplyDocument, options: ApplyOptions, shapeProblems: Problem[] = []) {
    const storedConnections = await this.connections.list(ctx);
    const storedPipelines = await this.pipelines.list(ctx);
    const problems = [...shapeProblems];
    const unreachable = new Map<number, string>();
    if (shapeProblems.length === 0) {
      const { problems: found, valid } = await this.check(ctx, doc, storedConnections, options.prune);
      problems.push(...found);
      problems.push(...(await this.checkLive(ctx, doc, valid, storedPipelines, unreachable)));
    }
    if (problems.length > 0) {
      throw new AppError(
        'VALIDATION_FAILED',
        `the document has ${problems.length} problem${problems.length > 1 ? 's' : ''}: ${problems
          .map((p) => `${p.path}: ${p.message}`)
          .join('; ')}`,
        { problems },
      );
    }

    const wantedConnections = new Set(doc.connections.map((c) => c.name));
    const wantedPipelines = new Set(doc.pipelines.map((p) => p.name));
    const prunedPipelines = options.prune ? storedPipelines.filter((p) => !wantedPipelines.has(p.name)) : [];
    const prunedConnections = options.prune
      ? storedConnections.filter((c) => !wantedConnections.has(c.name))
      : [];
    const running = prunedPipelines.filter((p) => p.state !== 'stopped');
    if (running.length > 0) {
      throw new AppError(
        'PRUNE_REFUSED',
        `prune would delete pipelines that are not stopped: ${running
          .map((p) => `'${p.name}' (${p.state})`)
          .join(', ')}; stop them first, or name them in the document`,
        { pipelines: running.map((p) => p.name) },
      );
    }

    const connectionPlan = await Promise.all(
      doc.connections.map(async (c) => {
        const planned = await this.connections.changes(ctx, c.name, c);
        const e = entry(c.name, planned?.changes ?? null);
        return planned && planned.notes.length > 0 ? { ...e, notes: planned.notes } : e;
      }),
    );
    const pipelinePlan = await Promise.all(
      doc.pipelines.map(async (p, i) => {
        const e = entry(p.name, await this.pipelines.changes(ctx, p.name, p));
        const source = unreachable.get(i);
        return source === undefined ? e : { ...e, notes: [unreachableNote(source)] };
      }),
    );
    const plan = {
      dry_run: options.dryRun,
      connections: [...connectionPlan, ...prunedConnections.map((c) => deleted(c.name))],
      pipelines: [...pipelinePlan, ...prunedPipelines.map((p) => deleted(p.name))],
    };
    if (options.dryRun) return plan;

    // Dependency order: connections, pipelines, then what is pruned (pipelines before connections).
    for (const [i, c] of doc.connections.entries()) {
      const result = connectionPlan[i]?.result;
      if (result === 'created') await this.connections.create(ctx, c.name, c);
      if (result === 'updated') await this.connections.replace(ctx, c.name, c);
    }
    for (const [i, p] of doc.pipelines.entries()) {
      const result = pipelinePlan[i]?.result;
      if (result === 'created') await this.pipelines.create(ctx, p.name, p);
      if (result === 'updated') await this.pipelines.replace(ctx, p.name, p);
    }
    for (const p of prunedPipelines) await this.pipelines.delete(ctx, p.name);
    for (const c of prunedConnections) await this.connections.delete(ctx, c.name, false);
    return plan;
  }

  /**
   * Every problem of the document's values, without writing or reaching a source; `valid` are the
   * indexes of the pipelines without one.
   */
  private async check(
    ctx: RequestContext,
    doc: ApplyDocument,
    stored: readonly { name: string; type: string; dsn: string }[],
    prune: boolean,
  ): Promise<{ problems: Problem[]; valid: number[] }> {
    const problems = [
      ...duplicates(
        'connections',
        doc.connections.map((c) => c.name),
      ),
      ...duplicates(
        'pipelines',
        doc.pipelines.map((p) => p.name),
      ),
    ];
    const storedNames = new Set(stored.map((c) => c.name));
    for (const [i, c] of doc.connections.entries()) {
      try {
        this.connections.check(ctx, c, storedNames.has(c.name));
      } catch (error) {
        problems.push(problemAt(`connections[${i}]`, error));
      }
    }
    // A pipeline may name a connection of the document or one the project has.
    const types = new Map(stored.map((c) => [c.name, c.type]));
    for (const c of doc.connections) types.set(c.name, c.type);
    const valid: number[] = [];
    for (const [i, p] of doc.pipelines.entries()) {
      try {
        await this.pipelines.checkAgainst(ctx, p.name, p, (name) => types.get(name));
        valid.push(i);
      } catch (error) {
        problems.push(problemAt(`pipelines[${i}]`, error));
      }
    }
    problems.push(...(await this.sharedTargets(ctx, doc, stored, prune, valid)));
    return { problems, valid };
  }

  /**
   * The checks `create` and `replace` run against the servers, for each pipeline the document
   * creates or changes, with the connections as the document leaves them: the source ready, its
   * tables there and keyed, the privileges, the sink's preflight. One pipeline after the other,
   * each over one source connection. A source that cannot be reached is not a problem (the start
   * checks it again): its pipelines' indexes go into `unreachable`, with the connection's name,
   * and the other pipelines on it are not tried again.
   */
  private async checkLive(
    ctx: RequestContext,
    doc: ApplyDocument,
    valid: readonly number[],
    storedPipelines: readonly { name: string }[],
    unreachable: Map<number, string>,
  ): Promise<Problem[]> {
    const stored = new Set(storedPipelines.map((p) => p.name));
    // The document's connections as they will be written; a broken one is a problem of its own.
    const resolved = new Map<string, Promise<ResolvedConnection>>();
    for (const c of doc.connections) {
      const resolving = this.connections.resolveInput(ctx, c.name, c);
      resolving.catch(() => {});
      resolved.set(c.name, resolving);
    }
    const resolve: ConnectionResolver = (_projectId, name) =>
      resolved.get(name) ?? this.connections.resolve(ctx, name);
    const broken = async (name: string) =>
      (await resolved.get(name)?.then(
        () => false,
        () => true,
      )) ?? false;
    const unreachableSources = new Set<string>();
    const problems: Problem[] = [];
    for (const i of valid) {
      const p = doc.pipelines[i] as PipelineElement;
      if ((await broken(p.source.connection)) || (await broken(p.sink.connection))) continue;
      if (stored.has(p.name) && (await this.pipelines.changes(ctx, p.name, p))?.length === 0) continue;
      if (unreachableSources.has(p.source.connection)) {
        unreachable.set(i, p.source.connection);
        continue;
      }
      try {
        if ((await this.pipelines.checkLive(ctx, p.name, p, resolve)) === 'unreachable') {
          unreachableSources.add(p.source.connection);
          unreachable.set(i, p.source.connection);
        }
      } catch (error) {
        problems.push(...liveProblemsAt(`pipelines[${i}]`, p, error));
      }
    }
    return problems;
  }

  /**
   * Two pipelines writing one table, as the project would be once applied: the document's
   * pipelines, and the stored ones it leaves (all those it does not name, none with prune).
   */
  private async sharedTargets(
    ctx: RequestContext,
    doc: ApplyDocument,
    stored: readonly { name: string; type: string; dsn: string }[],
    prune: boolean,
    valid: readonly number[],
  ): Promise<Problem[]> {
    const named = new Set(doc.pipelines.map((p) => p.name));
    const kept = prune ? [] : (await this.pipelines.targetWriters(ctx)).filter((w) => !named.has(w.name));
    const connections = new Map(stored.map((c) => [c.name, { type: c.type, dsn: c.dsn }]));
    for (const c of doc.connections) connections.set(c.name, { type: c.type, dsn: c.dsn });
    const candidates = valid.map((i) => {
      const p = doc.pipelines[i] as PipelineElement;
      return {
        name: p.name,
        sinkConnection: p.sink.connection,
        sinkProperties: p.sink.properties ?? {},
        sourceTables: p.source.tables,
      };
    });
    const shared = sharedTarget(candidates, kept, (name) => connections.get(name));
    if (!shared) return [];
    const index = doc.pipelines.findIndex((p) => p.name === shared.candidate);
    return [{ path: `pipelines[${index}].sink`, message: shared.message }];
  }
}

const entry = (name: string, changes: string[] | null): ApplyEntry =>
  changes === null
    ? { name, result: 'created' }
    : changes.length === 0
      ? { name, result: 'unchanged' }
      : { name, result: 'updated', changes };

const deleted = (name: string): ApplyEntry => ({ name, result: 'deleted' });
