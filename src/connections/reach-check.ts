/** One thing found about a connection's server: met or not, in words. */
export interface ReachCheck {
  name: string;
  ok: boolean;
  message: string;
}

/** Which side of a pipeline a connection is judged as. */
export type TestedAs = 'source' | 'sink';

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** The server (`what`) was reached. */
export const reached = (what: string): ReachCheck => ({
  name: 'reach',
  ok: true,
  message: `Reached ${what}.`,
});

/** The server (`what`) could not be reached, and why. */
export const unreached = (what: string, error: unknown): ReachCheck => ({
  name: 'reach',
  ok: false,
  message: `Could not reach ${what}: ${messageOf(error)}`,
});

/** The server (`what`) was reached but did not answer as asked. */
export const unanswered = (what: string, error: unknown): ReachCheck => ({
  name: 'reach',
  ok: false,
  message: `Reached ${what}, but it did not answer: ${messageOf(error)}`,
});

/** Fails after `ms` unless `work` settles first; what `work` opens is its own to close. */
export function within<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms / 1000} seconds`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
