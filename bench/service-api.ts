import type { TestService } from '../test/support/service.js';

/** What the benchmarks need of our service: its REST API (in this process or another). */
export type ServiceClient = Pick<TestService, 'request'>;

/** One REST call to the service under test; an answer of 300 or more is an error naming the call. */
export async function call(service: ServiceClient, method: string, path: string, body?: unknown) {
  const res = await service.request(method, path, body);
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}
