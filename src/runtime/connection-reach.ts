import { type ReachCheck, type TestedAs, unreached, within } from '../connections/reach-check.js';
import { findConnectionType } from '../sinks/registry.js';
import { findSourceKind } from '../source/registry.js';
import { messageOf } from './error-kinds.js';

export type { ReachCheck, TestedAs } from '../connections/reach-check.js';

type Check = (settings: unknown, timeoutMs: number, as: TestedAs) => Promise<ReachCheck[]>;

/** Checks one connection type's server: the first check is always whether it could be reached. */
export interface Reach {
  check: Check;
  /** Whether the type can be a pipeline's source (and so be judged as one). */
  canBeSource: boolean;
}

/** What a source's server is asked of when it is a sink instead: to be reached and logged in to. */
const SINK_CHECKS_OF_A_SOURCE = new Set(['reach', 'server_version', 'database_connect']);

/**
 * A source (PostgreSQL), judged as a pipeline's source: each condition of replication, through
 * the source's own readiness checks (those a pipeline start makes, and more).
 */
async function reachSource(
  type: string,
  settings: unknown,
  timeoutMs: number,
  as: TestedAs,
): Promise<ReachCheck[]> {
  const kind = findSourceKind(type);
  if (!kind) return [{ name: 'reach', ok: false, message: `A ${type} connection cannot be a source.` }];
  const source = kind.create(settings, {});
  try {
    await source.connect({ timeoutMs });
  } catch (error) {
    await source.close().catch(() => undefined);
    return [unreached(`the ${type} server`, error)];
  }
  try {
    const checks = (await within(source.readiness(), timeoutMs, `the ${type} server`)).filter(
      (c) => as === 'source' || SINK_CHECKS_OF_A_SOURCE.has(c.name),
    );
    return [
      { name: 'reach', ok: true, message: `Reached the ${type} server and logged in.` },
      ...checks.map((c) => ({ name: c.name, ok: c.ok, message: `${c.ok ? c.found : c.problem}.` })),
    ];
  } catch (error) {
    return [
      {
        name: 'reach',
        ok: false,
        message: `Reached the ${type} server, but checking it failed: ${messageOf(error)}`,
      },
    ];
  } finally {
    await source.close().catch(() => undefined);
  }
}

/**
 * How a connection of `type` is checked, or undefined for a type without a check: a type that can
 * be a source by its source kind, as either side; any other by its connection type's own check.
 */
export function reachOf(type: string): Reach | undefined {
  if (findSourceKind(type)) {
    return {
      check: (settings, timeoutMs, as) => reachSource(type, settings, timeoutMs, as),
      canBeSource: true,
    };
  }
  const reach = findConnectionType(type)?.reach;
  return reach && { check: (settings, timeoutMs) => reach(settings, timeoutMs), canBeSource: false };
}
