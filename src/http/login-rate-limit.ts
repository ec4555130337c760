import { AppError } from '../errors/app-error.js';

/**
 * Sign-in attempts (password login, bootstrap) per client address: enough for a person who
 * mistypes, far too few for guessing. Counted per instance.
 */
export const LOGIN_RATE_LIMIT = {
  max: 10,
  timeWindow: 60_000,
  errorResponseBuilder: (_request: unknown, context: { after: string }) =>
    new AppError(
      'RATE_LIMITED',
      `too many sign-in attempts from this address; try again in ${context.after}`,
    ),
};
