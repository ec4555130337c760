import pg from 'pg';

/** One query on a database by URL, on a connection of its own: for tests that look behind the API. */
export async function queryStore<T = any>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, values)).rows as T[];
  } finally {
    await client.end();
  }
}
