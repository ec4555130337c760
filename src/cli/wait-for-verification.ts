import { type ApiClient, ok, type Schemas } from '../client/api-client.js';
import { CliError, EXIT } from './exit-codes.js';

type Verification = Schemas['Verification'];

const POLL_MS = 500;
const ENDED = ['completed', 'failed', 'cancelled'];

/**
 * Polls a verification until `done` says it is where the caller waits for, calling `progress`
 * whenever what it reports changes; past the deadline, fails naming what was last seen.
 */
async function pollVerification(
  api: ApiClient,
  name: string,
  id: string,
  deadline: number,
  done: (v: Verification) => boolean,
  progress: (v: Verification) => string,
  report: (line: string) => void,
): Promise<Verification> {
  let last = '';
  for (;;) {
    const v = await ok(
      api.GET('/v1/pipelines/{name}/verifications/{id}', { params: { path: { name, id } } }),
    );
    const now = progress(v);
    if (now !== last) {
      last = now;
      report(now);
    }
    if (done(v)) return v;
    if (Date.now() >= deadline) {
      throw new CliError(`verification ${id} had not ended by the --timeout (${last})`, EXIT.failed);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** Waits until a verification is completed, failed or cancelled. */
export function waitForVerification(
  api: ApiClient,
  name: string,
  id: string,
  deadline: number,
  report: (line: string) => void,
): Promise<Verification> {
  return pollVerification(
    api,
    name,
    id,
    deadline,
    (v) => ENDED.includes(v.status),
    (v) =>
      `verification ${id}: ${v.status}, ${v.tables.length} table${v.tables.length === 1 ? '' : 's'} done`,
    report,
  );
}

/** Waits until a verification's repair is completed (naming its follow-up verification) or failed. */
export function waitForRepair(
  api: ApiClient,
  name: string,
  id: string,
  deadline: number,
  report: (line: string) => void,
): Promise<Verification> {
  return pollVerification(
    api,
    name,
    id,
    deadline,
    (v) => v.repair?.status === 'failed' || v.repair?.status === 'completed',
    (v) => `repair of verification ${id}: ${v.repair?.status ?? 'not asked'}`,
    report,
  );
}
