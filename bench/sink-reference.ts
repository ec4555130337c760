import type { RunShape } from './sink-target.js';
import type { SinkKind, TargetPlaces } from './sinks-targets.js';

/** What a reference loads: the same rows and changes the sink's pipeline carried, in this run. */
export interface ReferenceInput {
  shape: RunShape;
  /**
   * A source database holding the snapshot's rows alone (`public.bench_snapshot`, ids 1..N): the
   * template of the sinks' source databases, so every session to it must be closed once read.
   */
  snapshotUrl: string;
  /**
   * The sink's source database after the backlog: the N + T rows as they are at its end (each
   * transaction k updated the row `backlogUpdatedId(shape, k)` once, and inserted `N + k`).
   */
  backlogUrl: string;
  places: TargetPlaces;
}

/**
 * The fastest ordinary way to load the same data into the sink's server, with the same message
 * sizes and durability as the sink, measured beside it in the same run: the figure the sink is
 * held to. Each reference makes a target of its own (a table, a stream, an exchange and queue, a
 * receiver), fresh for the run, beside the sink's, and removes it after.
 */
export interface SinkReference {
  /** How it loads, for the report (e.g. "LOAD DATA LOCAL INFILE of the rows, tab-separated"). */
  method: string;
  /** Untimed: reads what it loads and makes its target. */
  prepareSnapshot(input: ReferenceInput): Promise<void>;
  /** Timed: loads the snapshot's N rows; resolves once the server holds them as durably as the sink's. */
  loadSnapshot(): Promise<void>;
  /**
   * Untimed, after `loadSnapshot`: reads the backlog's changes (2 × T: each transaction's update,
   * then its insert, in commit order) and readies the target, which holds the snapshot's rows.
   */
  prepareDrain(input: ReferenceInput): Promise<void>;
  /** Timed: loads the backlog's changes, as durably as the sink does. */
  loadDrain(): Promise<void>;
  /** Removes what it made; safe at any point, twice included. */
  cleanUp(): Promise<void>;
  /** The process of a server the reference starts itself (a webhook receiver), once prepared, for its CPU. */
  serverPid?(): number | undefined;
}

/** The row the backlog's transaction `k` (1..T) updated before it inserted the row `N + k`. */
export const backlogUpdatedId = (shape: RunShape, k: number): number => (((k - 1) * 7919) % shape.rows) + 1;

/** The references the benchmark has, by sink kind; a kind without one is compared with postgres alone. */
export type ReferenceFactory = () => SinkReference;
export type ReferenceRegistry = Partial<Record<SinkKind, ReferenceFactory>>;
