import { type TableRef, tableKey } from '../core/change.js';
import type { PropertyDoc } from '../core/property-docs.js';
import { validationFailed } from '../errors/app-error.js';
import { refuseUnknownProperties } from './property-values.js';
import { tableRefKey } from './table-ref-key.js';

// Names a user types for a SQL sink's targets: plain identifiers, under every server's length limit.
const PART = '[A-Za-z_][A-Za-z0-9_$]{0,62}';
const NAME = new RegExp(`^${PART}$`);
const QUALIFIED = new RegExp(`^(?:(${PART})\\.)?(${PART})$`);
const TABLE_KEY = new RegExp(`^table\\.(${PART})\\.(${PART})$`);
const NAME_RULE = 'a letter or "_" followed by letters, digits, "_" or "$", at most 63 characters';

/** A target name property (`target_schema`, `target_database`): undefined when absent, else checked. */
export function targetNameProperty(key: string, value: string | undefined): string | undefined {
  if (value !== undefined && !NAME.test(value)) {
    throw validationFailed(`sink.properties.${key}`, `must be ${NAME_RULE}; got '${value}'`);
  }
  return value;
}

/** A target of `table.<schema>.<table>`: its table, and what holds it (a schema, or a MySQL database) when named. */
export type MappedTarget<Q extends string> = { [K in Q]: string | undefined } & { table: string };

/**
 * The `table.<schema>.<table>` properties of a SQL sink, keyed by `tableKey(source)`, each
 * `<table>` or `<qualifier>.<table>`; any other key must be one the sink documents. Throws a 422
 * naming the bad key.
 */
export function tableMapProperties<Q extends string>(
  props: Record<string, string>,
  docs: readonly PropertyDoc[],
  qualifier: Q,
): Map<string, MappedTarget<Q>> {
  const tableMap = new Map<string, MappedTarget<Q>>();
  const others: Record<string, string> = {};
  for (const [key, value] of Object.entries(props)) {
    if (!key.startsWith('table.')) {
      others[key] = value;
      continue;
    }
    const source = TABLE_KEY.exec(key);
    if (!source) {
      throw validationFailed(
        `sink.properties.${key}`,
        `must be 'table.<schema>.<table>', each part ${NAME_RULE}`,
      );
    }
    const target = QUALIFIED.exec(value);
    if (!target) {
      throw validationFailed(
        `sink.properties.${key}`,
        `must be '<table>' or '<${qualifier}>.<table>', each part ${NAME_RULE}; got '${value}'`,
      );
    }
    tableMap.set(tableKey({ schema: source[1] as string, table: source[2] as string }), {
      [qualifier]: target[1],
      table: target[2] as string,
    } as MappedTarget<Q>);
  }
  refuseUnknownProperties(others, docs);
  return tableMap;
}

/** Two source tables that would be written to one target. */
export interface SharedTarget<T extends TableRef> {
  first: T;
  second: T;
  target: TableRef;
}

/**
 * The first two of `sources` whose targets are one table, compared by `keyOf` (a sink whose
 * server folds names compares them folded); undefined when every source has a target of its own.
 */
export function sharedTarget<T extends TableRef>(
  sources: readonly T[],
  targetOf: (source: T) => TableRef,
  keyOf: (target: TableRef) => string = tableRefKey,
): SharedTarget<T> | undefined {
  const writers = new Map<string, T>();
  for (const source of sources) {
    const target = targetOf(source);
    const key = keyOf(target);
    const first = writers.get(key);
    if (first) return { first, second: source, target };
    writers.set(key, source);
  }
  return undefined;
}

/** Throws when two of `sources` would be written to one target: each would overwrite the other's rows. */
export function refuseSharedTargets<T extends TableRef>(
  sources: readonly T[],
  targetOf: (source: T) => TableRef,
  keyOf?: (target: TableRef) => string,
): void {
  const shared = sharedTarget(sources, targetOf, keyOf);
  if (!shared) return;
  const { first, second, target } = shared;
  throw new Error(
    `${tableKey(first)} and ${tableKey(second)} would both be written to ${tableKey(target)}; map one elsewhere`,
  );
}
