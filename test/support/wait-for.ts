/**
 * How long a single wait in a test may take before it counts as a hang. It bounds a hang only:
 * a slow or busy machine (argon2 under load, two cores shared by several suites) stays far below it.
 */
export const HANG_MS = 30_000;

/** Polls until `check` returns a truthy value, or fails with the last value seen. */
export async function waitFor<T>(
  check: () => Promise<T> | T,
  what: string,
  timeoutMs = 60_000,
  intervalMs = 200,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await check();
    if (last) return last as NonNullable<T>;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
}
