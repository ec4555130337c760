import { formatBytes } from '../core/byte-size.js';
import type { SlotStatus, Source } from '../core/source.js';
import { SlotMissingError } from '../core/source-errors.js';
import type { Logger } from '../log/logger.js';
import type { PipelineStats } from './pipeline-stats.js';

/** How often a streaming pipeline looks at its slot. */
export const SLOT_CHECK_INTERVAL_MS = 10_000;

export interface SlotMonitorOptions {
  source: Source;
  pipelineId: string;
  stats: PipelineStats;
  /** Retained WAL above which the pipeline shows a warning. */
  warnRetainedWalBytes: number;
  /** Called once when the slot is gone or invalidated: the pipeline cannot go on. */
  onLost(error: SlotMissingError): void;
  logger: Logger;
  intervalMs?: number;
}

/**
 * Watches the slot while the pipeline streams: how much WAL it makes the source keep (shown in
 * metrics and, past the threshold, as a warning) and whether it still exists. Returns a stop.
 */
export function watchSlot(options: SlotMonitorOptions): () => void {
  const { stats } = options;
  let stopped = false;
  const check = async () => {
    let status: SlotStatus;
    try {
      status = await options.source.slotStatus(options.pipelineId);
    } catch (error) {
      if (!(error instanceof SlotMissingError)) throw error;
      if (stopped) return;
      stopped = true;
      options.onLost(error);
      return;
    }
    if (stopped) return;
    stats.slotRead(status);
    const retained = status.retainedWalBytes ?? 0;
    stats.warn(
      'slot',
      retained > options.warnRetainedWalBytes
        ? `the source keeps ${formatBytes(retained)} of WAL for this pipeline's slot (warning above ` +
            `${formatBytes(options.warnRetainedWalBytes)}); wal_status is ${status.walStatus ?? 'unknown'}`
        : null,
    );
  };
  const run = () =>
    check().catch((error: unknown) => options.logger.warn({ err: error }, 'could not read the slot status'));
  void run();
  const timer = setInterval(run, options.intervalMs ?? SLOT_CHECK_INTERVAL_MS);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
