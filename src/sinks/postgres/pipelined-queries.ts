import type pg from 'pg';

/** pg's client, with the switch of its pipeline mode (pg 8.21+) and its socket (not in its types). */
type PipelineClient = pg.ClientBase & {
  pipeline?: boolean;
  connection?: { stream?: { cork?(): void; uncork?(): void } };
};

/** One query of a pipelined run: its text and parameters. */
export interface PipelinedQuery {
  text: string;
  values?: unknown[];
}

/** The first query of a run that failed: where it stands in the run, and its error. */
export class PipelinedQueryError extends Error {
  constructor(
    readonly index: number,
    readonly error: unknown,
  ) {
    super(error instanceof Error ? error.message : String(error));
    this.name = 'PipelinedQueryError';
  }
}

/**
 * Sends `queries` on `client` in one write, without waiting for each one's answer before the next
 * (pg's pipeline mode), and resolves with every result in order once all are in: a run of N statements
 * costs one round trip instead of N. Each query keeps its own Sync, so inside a transaction a
 * failed query fails the ones after it (the transaction is aborted) and nothing else: the run
 * rejects with the first failure (PipelinedQueryError, which says which query), once every answer
 * is in, leaving the connection idle. The client must be idle when called, and is back in its
 * usual mode after: COPY and cursors do not run in pipeline mode.
 */
export async function pipelinedQueries<R extends pg.QueryResultRow = pg.QueryResultRow>(
  client: pg.ClientBase,
  queries: readonly PipelinedQuery[],
): Promise<pg.QueryResult<R>[]> {
  const pipelined = client as PipelineClient;
  const before = pipelined.pipeline;
  pipelined.pipeline = true;
  // pg corks the socket for each query's messages; corked around all of them too, the run leaves
  // in one write: one system call (and one wake-up of the server) instead of one per query.
  const socket = pipelined.connection?.stream;
  let settled: PromiseSettledResult<pg.QueryResult<R>>[];
  try {
    let answers: Promise<pg.QueryResult<R>>[];
    socket?.cork?.();
    try {
      answers = queries.map((q) => client.query<R>(q.text, q.values));
    } finally {
      socket?.uncork?.();
    }
    settled = await Promise.allSettled(answers);
  } finally {
    pipelined.pipeline = before;
  }
  const failed = settled.findIndex((s) => s.status === 'rejected');
  if (failed >= 0) throw new PipelinedQueryError(failed, (settled[failed] as PromiseRejectedResult).reason);
  return settled.map((s) => (s as PromiseFulfilledResult<pg.QueryResult<R>>).value);
}
