import pg from 'pg';

/**
 * The load of the live-load benchmark, in a process of its own so that it does not share a thread
 * with the service under test: single-row transactions at a fixed rate, spread over the clients.
 * Usage: live-load-driver.ts <url> <table> <rate> <seconds> <clients> [<rows>]; prints the offered
 * rate. With the rate `max` (and <rows>), the rows are inserted as fast as the clients go.
 */
async function drive(url: string, table: string, rate: number, total: number, clientCount: number) {
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
        await client.query(`INSERT INTO ${table} (id, v) VALUES ($1, 'x')`, [i]);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  await Promise.all(clients.map((c) => c.end()));
  console.log(JSON.stringify({ offered: total / elapsed }));
}

const [url, table, rateText, seconds, clients, rows] = process.argv.slice(2);
const rate = rateText === 'max' ? Number.POSITIVE_INFINITY : Number(rateText);
const total = rows === undefined ? Math.round(rate * Number(seconds)) : Number(rows);
drive(url as string, table as string, rate, total, Number(clients)).catch((error) => {
  console.error(error);
  process.exit(1);
});
