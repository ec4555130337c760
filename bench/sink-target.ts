import { randomBytes } from 'node:crypto';
import type { SinkKind } from './sinks-targets.js';

/** Rows and a checksum of the table: count, and the sum of the first 32 bits of each row's md5. */
export interface Digest {
  rows: number;
  sum: string;
}

/** What a check after a phase found, for the report. */
export interface CheckResult {
  ok: boolean;
  detail: string;
}

/** The parameters of one run: the snapshot's rows and the backlog that follows it. */
export interface RunShape {
  /** Rows of the source table at the snapshot (ids 1..rows). */
  rows: number;
  /** Transactions of the backlog: each updates one existing row, then inserts the row `rows + k`. */
  transactions: number;
}

export const backlogChanges = (s: RunShape) => 2 * s.transactions;

/**
 * One sink under test: where it is, how a pipeline addresses it, and how the benchmark reads what
 * it holds. Each is made fresh for a run and removed after it.
 */
export interface SinkTarget {
  kind: SinkKind;
  /** The DSN of the sink connection. */
  dsn: string;
  /** `sink.properties` of the pipeline: the defaults, but for names of the run's own. */
  properties: Record<string, string>;
  /** Where the data lands, for the report. */
  where: string;
  /** The process of a sink server the target starts itself (the webhook receiver), for its CPU. */
  serverPid?: number;
  /** After the snapshot (untimed): the sink holds exactly the source's rows, or one message per row. */
  checkSnapshot(source: Digest): Promise<CheckResult>;
  /** Just before the resume (untimed): remembers where the backlog starts. */
  markDrainStart(): Promise<void>;
  /**
   * Changes of the backlog seen in the sink so far (postgres and mysql: none, the first
   * transaction's, or all; a broker: its messages beyond the snapshot's); the drain is done at
   * `backlogChanges`.
   */
  drainedChanges(): Promise<number>;
  /** After the drain: the sink holds exactly the source's rows, or every change once. */
  checkDrain(source: Digest): Promise<CheckResult>;
  /** Removes what the run left in the sink server: its database, stream, exchange, queue or keys. */
  cleanUp(pipelineId: string | undefined): Promise<void>;
}

/** A broker's snapshot check: `found` messages (or distinct events), exactly one per row. */
export function oneMessagePerRow(found: number, source: Digest, what: string): CheckResult {
  return found === source.rows
    ? { ok: true, detail: `${found.toLocaleString('en-US')} ${what}, one per row` }
    : { ok: false, detail: `${found.toLocaleString('en-US')} ${what} for ${source.rows} rows` };
}

/** Ten random hex digits, so that the names a run makes are its own. */
export const runTag = () => randomBytes(5).toString('hex');
