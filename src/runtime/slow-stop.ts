import type { Logger } from '../log/logger.js';

/** A stop that takes longer than this is logged, and again at every such interval while it lasts. */
const SLOW_STOP_MS = 15_000;

/**
 * Waits for a data plane's loop to end, logging while it takes long (with what it was doing, from
 * `describe`), so that a stop that hangs says where rather than waiting in silence.
 */
export async function awaitStop(
  loop: Promise<void>,
  log: Logger,
  describe: () => Record<string, unknown>,
  intervalMs = SLOW_STOP_MS,
): Promise<void> {
  const startedAt = Date.now();
  const timer = setInterval(() => {
    log.warn(
      { ...describe(), waitedSeconds: Math.round((Date.now() - startedAt) / 1000) },
      'the data plane has not stopped yet',
    );
  }, intervalMs);
  timer.unref();
  try {
    await loop;
  } finally {
    clearInterval(timer);
  }
}
