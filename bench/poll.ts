import { setTimeout as sleep } from 'node:timers/promises';

/** How often a timed wait looks: fine enough for runs of seconds, light on a two-core machine. */
export const POLL_MS = 100;

/**
 * Calls `check` every `POLL_MS` until it returns true and returns the seconds since `startedMs`
 * (a `performance.now()` value) at that moment; fails after `timeoutMs`.
 */
export async function secondsUntil(
  startedMs: number,
  check: () => Promise<boolean>,
  what: string,
  timeoutMs: number,
): Promise<number> {
  for (;;) {
    if (await check()) return (performance.now() - startedMs) / 1000;
    const elapsed = performance.now() - startedMs;
    if (elapsed > timeoutMs) throw new Error(`${what}: not done after ${(elapsed / 1000).toFixed(0)} s`);
    await sleep(POLL_MS);
  }
}
