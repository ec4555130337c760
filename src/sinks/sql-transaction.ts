/** How one SQL driver runs a transaction on a connection of its own. */
export interface TransactionDriver<Connection> {
  /** A connection for the transaction (from a pool, or the sink's only one). */
  acquire(): Promise<Connection>;
  begin(conn: Connection): Promise<unknown>;
  commit(conn: Connection): Promise<unknown>;
  rollback(conn: Connection): Promise<unknown>;
  /** Gives the connection back; `broken` when it could not roll back, its state being unknown. */
  release(conn: Connection, broken: boolean): void;
  /** The error to throw for a failure on the connection (e.g. one naming a lost connection). */
  failure?(conn: Connection, error: unknown): unknown;
}

/**
 * Runs `work` in one transaction: committed when it resolves, rolled back when it throws. A
 * connection that could not roll back is released as broken, for the driver to drop rather than
 * reuse.
 */
export async function inTransaction<Connection, T>(
  driver: TransactionDriver<Connection>,
  work: (conn: Connection) => Promise<T>,
): Promise<T> {
  const conn = await driver.acquire();
  let broken = false;
  try {
    await driver.begin(conn);
    const result = await work(conn);
    await driver.commit(conn);
    return result;
  } catch (error) {
    await driver.rollback(conn).catch(() => {
      broken = true;
    });
    throw driver.failure ? driver.failure(conn, error) : error;
  } finally {
    driver.release(conn, broken);
  }
}
