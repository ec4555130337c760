import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './api-schema.js';

export type ApiClient = Client<paths>;
export type Schemas = components['schemas'];
export type ApplyPlan = paths['/v1/apply']['post']['responses'][200]['content']['application/json'];
export type PipelineProgress =
  paths['/v1/pipelines/{name}/progress']['get']['responses'][200]['content']['application/json'];
export type PipelineMetrics =
  paths['/v1/pipelines/{name}/metrics']['get']['responses'][200]['content']['application/json'];

/** Where a client command reaches the service, and as whom. */
export interface ServiceTarget {
  url: string;
  token: string | undefined;
  /** Per request, in milliseconds. */
  timeoutMs: number;
  /** With authentication off: the project (name or id) every call is limited to. */
  project?: string;
}

/** The service answered with an error status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    /** The error body's `code`; `UNAUTHENTICATED` for the 401 the spec gives without one. */
    readonly code: string,
    message: string,
    readonly problems: readonly { path: string; message: string }[] = [],
  ) {
    super(message);
  }
}

/** The service could not be reached, or did not answer in time. */
export class ServiceUnreachableError extends Error {}

/** A typed client of the service's API, generated from its own OpenAPI document. */
export function createApiClient(target: ServiceTarget): ApiClient {
  return createClient<paths>({
    baseUrl: target.url.replace(/\/+$/, ''),
    headers: {
      ...(target.token ? { authorization: `Bearer ${target.token}` } : {}),
      ...(target.project ? { 'replicator-project': target.project } : {}),
    },
    fetch: async (request) => {
      // The service refuses a state-changing call that does not declare JSON, bodiless ones too.
      if (!['GET', 'HEAD'].includes(request.method) && !request.headers.has('content-type')) {
        request.headers.set('content-type', 'application/json');
      }
      try {
        return await fetch(request, { signal: AbortSignal.timeout(target.timeoutMs) });
      } catch (error) {
        const cause = (error as Error & { cause?: { code?: string; message?: string } }).cause;
        const why =
          (error as Error).name === 'TimeoutError'
            ? `no answer within ${target.timeoutMs / 1000} s`
            : (cause?.code ?? cause?.message ?? (error as Error).message);
        throw new ServiceUnreachableError(`cannot reach the service at ${target.url}: ${why}`);
      }
    },
  });
}

/** A call's data, or its error response as an ApiError. */
export async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (response.ok) return data as T;
  const body = (error ?? {}) as { error?: unknown; code?: unknown; details?: { problems?: unknown } };
  const message = typeof body.error === 'string' ? body.error : `${response.status} ${response.statusText}`;
  const code =
    typeof body.code === 'string' ? body.code : response.status === 401 ? 'UNAUTHENTICATED' : 'HTTP_ERROR';
  const problems = Array.isArray(body.details?.problems)
    ? (body.details.problems as ApiError['problems'])
    : [];
  throw new ApiError(response.status, code, message, problems);
}
