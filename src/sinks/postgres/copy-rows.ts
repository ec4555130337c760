import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { copyTextOf } from '../../core/copy-text.js';
import { sqlstateOf } from '../../core/sqlstate.js';
import type { Statement } from './apply-plan.js';

const UNIQUE_VIOLATION = '23505';

/** Writes inserted rows with a plain COPY in the transaction of `client`; a key already there fails it. */
export async function copyRows(client: pg.ClientBase, copy: NonNullable<Statement['copy']>): Promise<void> {
  await pipeline(Readable.from([copyTextOf(copy.rows)]), client.query(copyFrom(copy.text)));
}

/**
 * Writes inserted rows with a plain COPY under a savepoint, in the transaction of `client`: true
 * when written; false, nothing written, when a key is there already (a replay), for the upsert to
 * run instead. Any other failure is thrown.
 */
export async function copyRowsUnlessPresent(
  client: pg.ClientBase,
  copy: NonNullable<Statement['copy']>,
): Promise<boolean> {
  await client.query('SAVEPOINT copy_rows');
  try {
    await copyRows(client, copy);
    await client.query('RELEASE SAVEPOINT copy_rows');
    return true;
  } catch (error) {
    if (sqlstateOf(error) !== UNIQUE_VIOLATION) throw error;
    await client.query('ROLLBACK TO SAVEPOINT copy_rows');
    return false;
  }
}
