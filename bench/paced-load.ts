import pg from 'pg';

/**
 * Runs `total` operations at `rate` a second (Infinity: as fast as the sessions go), spread over
 * `clientCount` sessions to `url`: `op(client, i)` runs the i-th, no earlier than its time.
 * Returns the seconds it all took.
 */
export async function paceOverClients(
  url: string,
  rate: number,
  total: number,
  clientCount: number,
  op: (client: pg.Client, i: number) => Promise<void>,
): Promise<number> {
  const clients = await Promise.all(
    Array.from({ length: clientCount }, async () => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      return c;
    }),
  );
  const started = performance.now();
  let next = 0;
  await Promise.all(
    clients.map(async (client) => {
      for (;;) {
        const i = next++;
        if (i >= total) return;
        const wait = Number.isFinite(rate) ? started + (i * 1000) / rate - performance.now() : 0;
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        await op(client, i);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await Promise.all(clients.map((c) => c.end()));
  return seconds;
}
