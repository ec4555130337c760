import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { PipelinedQueryError, pipelinedQueries } from '../../src/sinks/postgres/pipelined-queries.js';
import { replicationDatabases } from '../support/replication-fixture.js';

const cluster = inject('pgClusters')[0];

describe('pipelinedQueries', () => {
  let client: pg.Client;

  beforeAll(async () => {
    const { sink } = await replicationDatabases(cluster?.adminUrl as string, 'pipelined');
    client = new pg.Client({ connectionString: sink });
    await client.connect();
    await client.query('CREATE TABLE t (id int PRIMARY KEY, v text)');
  });
  afterAll(() => client?.end());

  const ids = async () =>
    (await client.query<{ id: number }>('SELECT id FROM t ORDER BY id')).rows.map((r) => r.id);

  it('sends a run in one go and gives every result in order', async () => {
    // Every write the socket makes (a corked run leaves in one writev).
    const socket = (client as unknown as { connection: { stream: { _writev: unknown; _write: unknown } } })
      .connection.stream;
    let writes = 0;
    const counted = <F extends (...args: never[]) => unknown>(f: F) =>
      ((...args: Parameters<F>) => {
        writes++;
        return f.apply(socket, args);
      }) as F;
    const original = { writev: socket._writev, write: socket._write };
    socket._writev = counted(socket._writev as (...args: never[]) => unknown);
    socket._write = counted(socket._write as (...args: never[]) => unknown);
    const running = pipelinedQueries(client, [
      { text: 'BEGIN' },
      { text: 'INSERT INTO t SELECT unnest($1::int[]), $2 RETURNING id', values: [[1, 2], 'a'] },
      { text: 'SELECT count(*)::int AS n FROM t' },
    ]);
    // All three are on the wire before the first answer: one answering, two sent behind it.
    expect((client as unknown as { _sentQueryQueue: unknown[] })._sentQueryQueue).toHaveLength(2);
    socket._writev = original.writev;
    socket._write = original.write;
    expect(writes).toBe(1);
    const results = await running;
    await client.query('COMMIT');
    expect(results.map((r) => r.command)).toEqual(['BEGIN', 'INSERT', 'SELECT']);
    expect(results[1]?.rows).toEqual([{ id: 1 }, { id: 2 }]);
    expect(results[2]?.rows).toEqual([{ n: 2 }]);
    expect(await ids()).toEqual([1, 2]);
  });

  it('names the first query that failed, after which the transaction holds nothing of the run', async () => {
    const failure = await pipelinedQueries(client, [
      { text: 'BEGIN' },
      { text: 'INSERT INTO t VALUES (3, $1)', values: ['b'] },
      { text: 'INSERT INTO t VALUES (1, $1)', values: ['duplicate'] },
      { text: 'INSERT INTO t VALUES (4, $1)', values: ['c'] },
    ]).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(PipelinedQueryError);
    expect((failure as PipelinedQueryError).index).toBe(2);
    expect(((failure as PipelinedQueryError).error as { code?: string }).code).toBe('23505');
    await client.query('ROLLBACK');
    expect(await ids()).toEqual([1, 2]);
  });

  it('leaves the connection in its usual mode: a COPY runs after a run', async () => {
    await pipelinedQueries(client, [{ text: 'BEGIN' }, { text: 'DELETE FROM t WHERE id = 2' }]);
    await pipeline(Readable.from(['5\te\n']), client.query(copyFrom('COPY t FROM STDIN')));
    await client.query('COMMIT');
    expect(await ids()).toEqual([1, 5]);
  });
});
