import { AppError } from '../errors/app-error.js';

/**
 * Sign-in attempts (password login, bootstrap) per client address and minute, counted per instance
 * (`auth.login_attempts_per_minute`): the default, 10, is enough for a person who mistypes and far
 * too few for guessing.
 */
export const loginRateLimit = (perMinute: number) => ({
  max: perMinute,
  timeWindow: 60_000,
  errorResponseBuilder: (_request: unknown, context: { after: string }) =>
    new AppError(
      'RATE_LIMITED',
      `too many sign-in attempts from this address; try again in ${context.after}`,
    ),
});
