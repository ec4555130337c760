import pg from 'pg';
import { surviveConnectionLoss } from '../core/pg-connection-loss.js';
import { isRefusal } from '../core/side-refusal.js';

/**
 * A connection for a check made before a definition is stored or started, or undefined when the
 * server cannot be reached now: such a check judges only what it can see, and is made again at
 * every start. A server that refuses the login is not out of reach: that error is thrown, for the
 * check to say so. The caller ends the client.
 */
export async function connectIfReachable(
  settings: pg.ClientConfig,
  connectTimeoutMs: number,
): Promise<pg.Client | undefined> {
  const client = new pg.Client({
    ...settings,
    application_name: 'replicator',
    connectionTimeoutMillis: connectTimeoutMs,
  });
  surviveConnectionLoss(client);
  try {
    await client.connect();
    return client;
  } catch (error) {
    if (isRefusal(error)) throw error;
    return undefined;
  }
}
