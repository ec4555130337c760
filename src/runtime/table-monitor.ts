import type { TableRef } from '../core/change.js';
import type { GoneTable, Source } from '../core/source.js';
import type { Logger } from '../log/logger.js';
import { SLOT_CHECK_INTERVAL_MS } from './slot-monitor.js';

export interface TableMonitorOptions {
  source: Source;
  pipelineId: string;
  /** The tables the pipeline replicates now (those found gone are left out by the caller). */
  tables(): readonly TableRef[];
  /** Called with the tables found gone from the source, once per check that finds some. */
  onGone(gone: GoneTable[]): Promise<void>;
  logger: Logger;
  intervalMs?: number;
}

/**
 * Watches, while the pipeline streams, that its tables are still at the source: a DROP TABLE
 * sends nothing down the change stream, so the source's catalog is asked, at the slot check's
 * pace (one small query). Returns a stop.
 */
export function watchTables(options: TableMonitorOptions): () => void {
  let stopped = false;
  let checking = false;
  const check = async () => {
    const tables = options.tables();
    if (tables.length === 0) return;
    const gone = await options.source.goneTables(options.pipelineId, tables);
    if (!stopped && gone.length > 0) await options.onGone(gone);
  };
  const run = () => {
    // A slow source must not pile checks up.
    if (checking || stopped) return;
    checking = true;
    check()
      .catch((error: unknown) =>
        options.logger.warn({ err: error }, 'could not check that the tables are still at the source'),
      )
      .finally(() => {
        checking = false;
      });
  };
  const timer = setInterval(run, options.intervalMs ?? SLOT_CHECK_INTERVAL_MS);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
