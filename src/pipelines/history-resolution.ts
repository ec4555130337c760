// A pipeline's figure history: how finely it is kept and answered.

/** Seconds a point of the history covers. */
export const HISTORY_RESOLUTION_S = 10;
/** How long points are kept: the charts show up to 24 h, with a day's margin. */
export const HISTORY_KEEP_MS = 48 * 3_600_000;
/** The most points one answer of the history holds: a long window merges points to stay under it. */
export const HISTORY_MAX_POINTS = 720;

/**
 * Seconds each point of an answer covers for a window: 10 up to two hours, then a multiple of 10
 * that keeps the answer at HISTORY_MAX_POINTS at most (30 s over 6 h, 2 min over 24 h).
 */
export const historyResolutionS = (windowMs: number) =>
  Math.max(
    HISTORY_RESOLUTION_S,
    Math.ceil(windowMs / 1000 / HISTORY_MAX_POINTS / HISTORY_RESOLUTION_S) * HISTORY_RESOLUTION_S,
  );
