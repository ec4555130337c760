import { ERROR_CODES, type ErrorCode } from './codes.js';

/** An error meant for the API caller: its message is safe to show and its code maps to an HTTP status. */
export class AppError extends Error {
  readonly code: ErrorCode;
  /** Extra structured facts a client may use (e.g. the pipelines that hold a connection). */
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>, options?: ErrorOptions) {
    super(message, options);
    this.name = 'AppError';
    this.code = code;
    this.details = details;
  }

  get status(): number {
    return ERROR_CODES[this.code];
  }
}

export const notFound = (kind: string, name: string) =>
  new AppError('NOT_FOUND', `${kind} '${name}' does not exist`);

export const validationFailed = (field: string, problem: string) =>
  new AppError('VALIDATION_FAILED', `${field}: ${problem}`, { field });

/** A query parameter or an action's value outside what it allows: the request is invalid (400). */
export const badRequest = (field: string, problem: string) =>
  new AppError('BAD_REQUEST', `${field}: ${problem}`, { field });
