/**
 * The one way the dashboard calls the API: same-origin `fetch` with the session cookie, JSON in
 * and out, and every failure as an ApiError carrying the `{error, code}` body. A 401 tells the
 * session state that signing in is needed (the login page then shows).
 */

/** A failed call: the status, the API's code and message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The whole body, for a caller that wants more than the message (e.g. extra details). */
    readonly body: unknown = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** The field a 400 or 422 names: its message starts with it, e.g. `source.tables[1]: ...`. */
  get field(): string | null {
    if (this.status !== 422 && this.status !== 400) return null;
    const match = /^([A-Za-z_][\w.[\]-]*):\s/.exec(this.message);
    return match?.[1] ?? null;
  }
}

type Unauthenticated = () => void;
let onUnauthenticated: Unauthenticated = () => {};

/** Registers what to do when a call answers 401 (other than a failed sign-in). */
export function whenUnauthenticated(handler: Unauthenticated): void {
  onUnauthenticated = handler;
}

export interface RequestOptions {
  body?: unknown;
  /** Statuses whose JSON body is a normal answer rather than an error (e.g. 503 of /health). */
  acceptStatus?: number[];
  signal?: AbortSignal;
  /** Extra request headers, such as `If-Match`. */
  headers?: Record<string, string>;
}

/** Calls `/v1<path>`; resolves with the parsed JSON (undefined for 204). */
export async function api<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
  const init: RequestInit = {
    method,
    credentials: 'same-origin',
    headers: { accept: 'application/json', ...options.headers },
  };
  if (options.signal) init.signal = options.signal;
  // Every state-changing call declares JSON, bodiless ones too: the service refuses others (CSRF).
  if (options.body !== undefined || !['GET', 'HEAD'].includes(method)) {
    init.headers = { ...init.headers, 'content-type': 'application/json' };
  }
  if (options.body !== undefined) init.body = JSON.stringify(options.body);
  let response: Response;
  try {
    response = await fetch(`/v1${path}`, init);
  } catch (error) {
    if (error instanceof DOMException && error.name === 'AbortError') throw error;
    throw new ApiError(0, 'NETWORK', 'The service cannot be reached: check that it is running.');
  }
  if (response.status === 204) return undefined as T;
  const body = await readJson(response);
  if (response.ok || options.acceptStatus?.includes(response.status)) return body as T;
  const error = toApiError(response.status, body);
  if (response.status === 401 && error.code === 'UNAUTHENTICATED') onUnauthenticated();
  throw error;
}

/** `encodeURIComponent` for a name in a path. */
export const seg = (name: string) => encodeURIComponent(name);

async function readJson(response: Response): Promise<unknown> {
  const text = await response.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function toApiError(status: number, body: unknown): ApiError {
  if (typeof body === 'object' && body !== null && 'error' in body) {
    const { error, code } = body as { error: unknown; code?: unknown };
    const message = String(error);
    // An anonymous call with authentication on gets exactly {"error":"unauthenticated"}.
    const fallback = status === 401 ? 'UNAUTHENTICATED' : `HTTP_${status}`;
    return new ApiError(status, typeof code === 'string' ? code : fallback, message, body);
  }
  return new ApiError(status, `HTTP_${status}`, `The service answered ${status}.`, body);
}

/** A readable message for anything a call may throw. */
export function errorMessage(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.status === 403) return `Not allowed: ${error.message}`;
    return error.message;
  }
  return error instanceof Error ? error.message : String(error);
}
